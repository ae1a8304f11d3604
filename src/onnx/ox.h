/* ox.h - between graph.c (the model, its tensors and shapes) and map.c
 * (the table of ops and the rows each makes); not an API: see onnx.h. */
#ifndef PN_OX_H
#define PN_OX_H

#include <stdint.h>

#include "onnx-subset.pb-c.h"
#include "onnx.h"

#define OX_MAXRANK 8

typedef struct {
	const char *name;
	double dims[OX_MAXRANK];
	int rank;               /* -1: no shape */
	int elem;               /* ONNX data type; 0: unknown */
	const char *sym;        /* a dim_param without a value, or NULL */
	const char *bad;        /* why the shape is unusable, or NULL */
	unsigned char init;     /* an initializer */
	unsigned char cnst;     /* a Constant node's output */
	unsigned char counted;  /* its elements counted as parameters */
	void *alias;            /* the initializer it is a transposition of */
} ox_tensor;

typedef struct {
	pn_arch *a;
	pn_onnx_err *e;
	const Onnx__NodeProto *node;
	const char *op;         /* its op_type ("" when absent) */
	long index;             /* of node in the graph */
	ox_tensor *t;
	size_t nt, cap;
	size_t *slot, nslot;    /* hash of names into t (index + 1) */
} ox;

/* The tensor called name, or NULL. */
ox_tensor *ox_find(ox *x, const char *name);
/* The tensor of node input (or output) i with a shape, or NULL with the
 * error set (no shape, a symbolic or bad dim). */
ox_tensor *ox_in(ox *x, size_t i);
ox_tensor *ox_out(ox *x, size_t i);
/* Input i exists (a name not empty). */
int ox_has_in(const ox *x, size_t i);
/* The node's integer attribute, or def. */
long long ox_attr_int(const ox *x, const char *name, long long def);
/* Its ints attribute: *n values, or NULL. */
const int64_t *ox_attr_ints(const ox *x, const char *name, size_t *n);
/* Its string attribute (not terminated: *n bytes), or NULL. */
const char *ox_attr_str(const ox *x, const char *name, size_t *n);
/* The product of the dims of t from dim lo up to (not with) hi. */
double ox_prod(const ox_tensor *t, int lo, int hi);
/* A floating-point data type. */
int ox_float(int elem);
/* The elements of t (or of the initializer it aliases) when it is a float
 * initializer not yet counted (then counted), else 0. */
double ox_weights(ox_tensor *t);
/* A new row for the current node (named after it; suffix appended when not
 * NULL). */
pn_layer *ox_row(ox *x, pn_layer_type t, const char *suffix);
/* Fail with the message, naming nothing more: returns -1. */
int ox_fail(ox *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- map.c ------------------------------------------------------------ */
/* Rows of the current node: 1 when its op maps (rows written, possibly
 * none), 0 when pn knows no mapping, -1 on an error (x->e set). */
int ox_map(ox *x);

#endif
