/* config.h - one layer configuration as pn-sample writes it and pn-time
 * reads it: the layer contract of layer.h plus the training-configuration
 * columns, read row by row without dying on a bad row.
 *
 * Columns beyond layer.h's:
 *   dropout        dropout rate in [0, 1) (attention: on the attention
 *                  probabilities; rnn lstm gru: between stacked layers;
 *                  elementwise op dropout: its rate, 0.5 when absent)
 *   learning_rate  the optimizer's learning rate (> 0; NA when the
 *                  optimizer is none)
 *
 * pn_layer keeps only the bytes of a precision; pn_config keeps which one.
 */
#ifndef PN_CONFIG_H
#define PN_CONFIG_H

#include <stddef.h>

#include "layer.h"
#include "tsv.h"

typedef enum { PN_FP32, PN_TF32, PN_FP16, PN_BF16, PN_NPREC } pn_prec;

/* Activations of layer.h's activation column, in pn_layer.activation. */
enum { PN_ACT_NONE, PN_ACT_RELU, PN_ACT_TANH, PN_ACT_SIGMOID, PN_NACT };

/* Names: precision, optimizer (PN_OPT_*), activation (PN_ACT_*).  The _of
 * functions return -1 for an unknown name. */
const char *pn_prec_name(pn_prec p);
int pn_prec_of(const char *name);
const char *pn_opt_name(int opt);
int pn_opt_of(const char *name);
const char *pn_act_name(int act);
int pn_act_of(const char *name);

/* NULL-terminated list of the elementwise ops layer.h accepts, and whether
 * an op reads two tensors (add sub mul div pow) or a tensor and a scalar
 * (the ...u ops). */
const char *const *pn_elem_ops(void);
int pn_elem_binary(const char *op);

/* Set the dimension column name of l to v (also "bias"): 0, or -1 when
 * name is no dimension column.  pn_layer_get returns NAN for an unknown
 * name. */
int pn_layer_set(pn_layer *l, const char *name, double v);
double pn_layer_get(const pn_layer *l, const char *name);

typedef struct {
	pn_layer l;
	pn_prec prec;
	double dropout;          /* 0 when absent or NA */
	double lr;               /* 0 when absent or NA */
} pn_config;

/* Column indices of one input; dies (exit 1) when it has no 'layer'
 * column, like pn_layer_cols_new. */
typedef struct pn_config_cols pn_config_cols;
pn_config_cols *pn_config_cols_new(const pn_tsv *in);
void pn_config_cols_free(pn_config_cols *c);

/* Read the current row of in into cfg.  Returns 0, or -1 with a message in
 * msg (size n) in pn_layer_read's words, without the file and line:
 *   unknown layer type 'conv3d'
 *   missing column 'k' (needed by layer 'bmm')
 *   column 'batch': '1.5' is not a whole number
 *   column 'batch': batch must be at least 1, not 0
 *   column 'precision': unknown value 'fp8'
 *   impossible conv2d: kernel 7 is larger than the padded image 6
 *   column 'dropout': 1.5 is not in [0, 1) */
int pn_config_read(const pn_tsv *in, const pn_config_cols *c, pn_config *cfg,
		   char *msg, size_t n);

#endif
