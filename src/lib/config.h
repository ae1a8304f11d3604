/* config.h - one layer configuration as pn-sample writes it and pn-time
 * reads it: the layer contract of layer.h (read by layer.h's one parser)
 * plus the training-configuration columns, read row by row without dying on
 * a bad row.
 *
 * The training columns (pn_layer_columns with PN_LC_TRAINING writes
 * them in their place): layer.h's dropout, which pn_layer holds (l.dropout),
 * and beyond layer.h's:
 *   learning_rate  the optimizer's learning rate (> 0; NA when the
 *                  optimizer is none)
 *
 * pn_layer keeps only the bytes of a precision; pn_config keeps which one.
 * The names of every enumeration (precision, optimizer, activation,
 * elementwise op) are layer.h's.
 */
#ifndef PN_CONFIG_H
#define PN_CONFIG_H

#include <stddef.h>

#include "layer.h"
#include "tsv.h"

typedef struct {
	pn_layer l;
	pn_prec prec;
	double lr;               /* 0 when absent or NA */
} pn_config;

/* Column indices of one input; dies (exit 1) when it has no 'layer'
 * column, like pn_layer_cols_new. */
typedef struct pn_config_cols pn_config_cols;
pn_config_cols *pn_config_cols_new(const pn_tsv *in);
void pn_config_cols_free(pn_config_cols *c);

/* Read the current row of in into cfg.  Returns 0, or -1 with a message in
 * msg (size n): pn_layer_parse's, without the file and line and without
 * the list of allowed names, prefixed by the column but for the layer
 * column (a field that is no whole number, number or not, is "not a whole
 * number"):
 *   unknown layer type 'conv3d'
 *   missing column 'k' (needed by layer 'bmm')
 *   column 'batch': 'x' is not a whole number
 *   column 'batch': batch must be at least 1, not 0
 *   column 'precision': unknown value 'fp8'
 *   impossible conv2d: kernel 7 is larger than the padded image 6
 *   column 'dropout': 'x' is not a number
 *   column 'dropout': 1.5 is not in [0, 1)
 * then learning_rate's:
 *   column 'learning_rate': -1 is negative */
int pn_config_read(const pn_tsv *in, const pn_config_cols *c, pn_config *cfg,
		   char *msg, size_t n);

#endif
