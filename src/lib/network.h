/* network.h - a network: the rows of one training iteration, as pn-graph(1)
 * and pipelines/gen-networks write them and pn-sum(1) reads them.
 *
 * A network is a layer TSV (layer.h): a header, then one row per layer or
 * op, with the `layer` column and the dimension columns of its type (and
 * precision, optimizer, bias, activation, op where they apply), plus:
 *
 *   name           the layer's or op's name (required, not empty)
 *   phase          fwd (a forward op), bwd (an op of the backward pass),
 *                  acc (gradient accumulation or another per-weight op), or
 *                  train (the row is a whole training step of the layer,
 *                  forward, backward and optimizer, as pn-time measures it;
 *                  its pn_layer has train = 1).  Required.
 *   repeat         how many times the row counts: a whole number of at least
 *                  1 (default 1); a transformer's blocks are one set of rows
 *                  repeated
 *   traffic_bytes  bytes moved to and from device memory when known better
 *                  than pn_layer_work's estimate (optional; NA for none;
 *                  positive)
 *   traced_batch   optional: the batch the network was traced at, the same
 *                  whole number (at least 1) on every row
 *
 * A column named `pass` is an error (a network's rows say phase); any other
 * column is kept and written back as read.
 *
 * Batch: a network without traced_batch describes ONE sample: every row's
 * batch dimension (mem: elements) and traffic_bytes are multiplied by the
 * batch (pn_network_scaled).  A traced network's rows are the whole
 * iteration at traced_batch and are never scaled.
 *
 * Errors: pn_network_read returns them, naming the line (and column) as the
 * other readers do; only the TSV layer below it (tsv.h: an unreadable file,
 * a wrong field count, corrupt gzip) and running out of memory still exit.
 */
#ifndef PN_NETWORK_H
#define PN_NETWORK_H

#include <stddef.h>
#include <stdio.h>

#include "layer.h"

enum { PN_PH_FWD, PN_PH_BWD, PN_PH_ACC, PN_PH_TRAIN, PN_NPHASES };
/* "fwd" "bwd" "acc" "train", NULL-terminated. */
extern const char *const pn_phase_names[PN_NPHASES + 1];

typedef struct {
	pn_layer l;         /* dimensions as read: one sample, or traced */
	pn_prec prec;
	int phase;          /* PN_PH_* */
	double repeat;
	double traffic;     /* traffic_bytes as read; 0 when not given */
	long line;
	char **field;       /* the row's fields, in the network's columns */
	int cast;           /* PN_CAST_*: a cast that pn_precision_apply
			       added (precision.h), else PN_CAST_NONE */
} pn_netrow;

/* Casts of mixed precision (precision.h): of an activation (scaled by the
 * batch) or of a weight (not scaled). */
enum { PN_CAST_NONE, PN_CAST_INPUT, PN_CAST_WEIGHT };

typedef struct {
	char *path;
	int ncols;
	char **col;                        /* the header */
	int cbatch, celements, ctraffic;   /* the scaled columns, or -1 */
	pn_netrow *r;
	long n;
	long traced;        /* traced_batch, or 0 */
} pn_network;

/* Why a network could not be read: "file:line: msg" (line 0: "file: msg"). */
typedef struct {
	long line;
	char msg[320];
} pn_network_err;

/* Read the network at path ("-": standard input) into net.  Returns 0, or
 * -1 with e filled in and net empty; the messages (beside layer.h's, as
 * pn_layer_read words them, "column 'x': ..."):
 *   missing column 'name'                          (line 1)
 *   column 'pass' has no place in a network: its rows give phase  (line 1)
 *   column 'name': empty name
 *   column 'phase': unknown phase 'x' (one of: fwd, bwd, acc, train)
 *   column 'repeat': repeat must be at least 1, not 0
 *   column 'repeat': '1.5' is not a whole number
 *   column 'traffic_bytes': traffic_bytes must be positive, not -1
 *   column 'traffic_bytes': 'x' is not a number
 *   column 'traced_batch': traced_batch must be a whole number of at least 1
 *   column 'traced_batch': traced_batch 8 differs from the 4 of the rows
 *     above
 *   no layer rows                                  (line 0) */
int pn_network_read(pn_network *net, const char *path, pn_network_err *e);
/* pn_network_read, exiting 1 with the message on an error. */
void pn_network_load(pn_network *net, const char *path);
/* Free what net holds (net itself is the caller's); net becomes empty. */
void pn_network_free(pn_network *net);

/* Row r at `batch` samples: *l and *traffic (0: none) with the batch
 * dimension (mem: elements) and traffic_bytes multiplied by batch; a
 * traced network's rows and the casts of weights as read. */
void pn_network_scaled(const pn_network *net, const pn_netrow *r,
		       double batch, pn_layer *l, double *traffic);

/* ---- writing ---------------------------------------------------------- */

/* The one writer of networks: the network's columns, then each of the
 * nextra extra columns not among them (an extra column that is one of the
 * network's replaces it in place).  Fills cols (net->ncols + nextra
 * entries) and xcol[k], the output column of extra k; returns the number
 * of output columns. */
int pn_network_columns(const pn_network *net, const char *const *extra,
		       int nextra, const char **cols, int *xcol);

/* Field c (< net->ncols) of row i at `batch` samples: as read, but for the
 * scaled columns (batch, elements, traffic_bytes), written into buf (32
 * bytes) as pn_network_scaled makes them. */
const char *pn_network_field(const pn_network *net, long i, double batch,
			     int c, char *buf);

/* ---- writing a network from layers -------------------------------------- */

/* The columns of a network made from layers (pn-net(1), the sample
 * networks): name layer op phase repeat, every dimension column of the
 * contract, bias activation, precision optimizer; NULL-terminated. */
extern const char *const pn_network_out_cols[];

/* Write the header of pn_network_out_cols, and one row: its name, l's
 * type, op (the type's name but for elementwise), the phase's name
 * (PN_PH_*), repeat, then each column of the contract that applies to
 * l's type (pn_layer_columns: the type's dimensions, bias and activation
 * where it has them) as pn_layer_field writes it, NA in the others, the
 * precision and optimizer; with flags PN_LC_INPUT_GRAD (layer.h) one more
 * column, input_grad, last (NA on the types that do not take it).  A row
 * of this writer reads back through pn_network_read as l. */
void pn_network_put_header(FILE *f, int flags);
void pn_network_put_row(FILE *f, const char *name, const pn_layer *l,
			pn_prec prec, int phase, double repeat, int flags);

#endif
