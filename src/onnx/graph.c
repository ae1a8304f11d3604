/* graph.c - the ONNX model through protobuf-c: its tensors and their
 * shapes, then each node through map.c's table (see onnx.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt.h"
#include "ox.h"

const int pn_onnx_available = 1;

int ox_fail(ox *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->e->msg, sizeof x->e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- the tensors: a hash of names --------------------------------------- */

static size_t hash(const char *s)
{
	size_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static size_t *lookup(ox *x, const char *name)
{
	size_t m = x->nslot - 1, i = hash(name) & m;
	while (x->slot[i] && strcmp(x->t[x->slot[i] - 1].name, name) != 0)
		i = (i + 1) & m;
	return &x->slot[i];
}

ox_tensor *ox_find(ox *x, const char *name)
{
	size_t k = *lookup(x, name);
	return k ? &x->t[k - 1] : NULL;
}

/* The tensor called name, new (no shape) when absent.  The table never
 * grows past its size: add() is called at most x->cap times. */
static ox_tensor *add(ox *x, const char *name)
{
	size_t *s = lookup(x, name);
	if (*s)
		return &x->t[*s - 1];
	if (x->nt == x->cap)
		PN_BUG("onnx: more tensors than counted");
	ox_tensor *t = &x->t[x->nt++];
	memset(t, 0, sizeof *t);
	t->name = name;
	t->rank = -1;
	*s = x->nt;
	return t;
}

/* ---- shapes ------------------------------------------------------------ */

typedef struct {
	char **name;
	size_t n;
} names;

static int is_batch(const names *b, const char *s)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->name[i], s) == 0)
			return 1;
	return 0;
}

/* t's shape from a value_info's, when t has none yet. */
static void set_shape(ox *x, ox_tensor *t, const Onnx__ValueInfoProto *v,
		      const names *b)
{
	if (!v->type || v->type->value_case !=
	    ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		return;
	const Onnx__TypeProto__Tensor *tt = v->type->tensor_type;
	if (tt->has_elem_type && !t->elem)
		t->elem = tt->elem_type;
	if (!tt->shape || t->rank >= 0)
		return;
	const Onnx__TensorShapeProto *sh = tt->shape;
	if (sh->n_dim > OX_MAXRANK) {
		t->bad = "rank";
		t->rank = (int)(sh->n_dim > 99 ? 99 : sh->n_dim);
		return;
	}
	t->rank = (int)sh->n_dim;
	for (size_t i = 0; i < sh->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
		double v1 = 0;
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			v1 = (double)d->dim_value;
			if (d->dim_value < 0 || d->dim_value > PN_WHOLE_MAX)
				t->bad = "dim";
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   is_batch(b, d->dim_param)) {
			v1 = 1;
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   x->a->o.seq) {
			v1 = (double)x->a->o.seq;
		} else if (!t->sym) {
			t->sym = d->value_case ? d->dim_param : "?";
		}
		t->dims[i] = v1;
	}
}

/* An initializer's or a Constant's dims and type. */
static void set_tensor(ox_tensor *t, const Onnx__TensorProto *p)
{
	if (p->has_data_type)
		t->elem = p->data_type;
	if (t->rank >= 0 && !t->bad)
		return;
	t->bad = NULL;
	if (p->n_dims > OX_MAXRANK) {
		t->bad = "rank";
		t->rank = (int)(p->n_dims > 99 ? 99 : p->n_dims);
		return;
	}
	t->rank = (int)p->n_dims;
	for (size_t i = 0; i < p->n_dims; i++) {
		if (p->dims[i] < 0 || p->dims[i] > PN_WHOLE_MAX)
			t->bad = "dim";
		t->dims[i] = (double)p->dims[i];
	}
}

static ox_tensor *shaped(ox *x, const char *name)
{
	ox_tensor *t = name && *name ? ox_find(x, name) : NULL;
	const char *node = x->node->name && *x->node->name ? x->node->name :
			   x->op;
	if (!t || t->rank < 0) {
		ox_fail(x, "no shape for tensor '%s' (node '%s'): run "
			"onnx.shape_inference.infer_shapes when exporting",
			name ? name : "", node);
		return NULL;
	}
	if (t->bad && strcmp(t->bad, "rank") == 0) {
		ox_fail(x, "tensor '%s' has rank %d (at most %d)", name,
			t->rank, OX_MAXRANK);
		return NULL;
	}
	if (t->bad) {
		ox_fail(x, "tensor '%s' has a dim below 0 or above %lld",
			name, PN_WHOLE_MAX);
		return NULL;
	}
	if (t->sym) {
		ox_fail(x, "tensor '%s' has symbolic dim '%s': give --seq",
			name, t->sym);
		return NULL;
	}
	return t;
}

ox_tensor *ox_in(ox *x, size_t i)
{
	return shaped(x, i < x->node->n_input ? x->node->input[i] : NULL);
}

ox_tensor *ox_out(ox *x, size_t i)
{
	return shaped(x, i < x->node->n_output ? x->node->output[i] : NULL);
}

int ox_has_in(const ox *x, size_t i)
{
	return i < x->node->n_input && x->node->input[i][0];
}

/* The batch names: the first dim_param of each graph input and output; a
 * fixed first dim above 1 on an input is refused. */
static int batch_names(ox *x, const Onnx__GraphProto *g, names *b)
{
	b->name = pn_xcalloc(g->n_input + g->n_output + 1, sizeof *b->name);
	for (size_t i = 0; i < g->n_input + g->n_output; i++) {
		const Onnx__ValueInfoProto *v = i < g->n_input ? g->input[i] :
						g->output[i - g->n_input];
		ox_tensor *t = v->name ? ox_find(x, v->name) : NULL;
		if (!v->type || v->type->value_case !=
		    ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
		    !v->type->tensor_type->shape ||
		    !v->type->tensor_type->shape->n_dim || (t && t->init))
			continue;
		const Onnx__TensorShapeProto__Dimension *d =
			v->type->tensor_type->shape->dim[0];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			b->name[b->n++] = d->dim_param;
		else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			 d->dim_value > 1 && i < g->n_input)
			return ox_fail(x, "input '%s' has a fixed batch of "
				       "%lld: export at batch 1 or with a "
				       "symbolic batch dim", v->name,
				       (long long)d->dim_value);
	}
	return 0;
}

/* Every tensor the graph names, with the shapes it gives. */
static int load_tensors(ox *x, const Onnx__GraphProto *g)
{
	size_t n = g->n_initializer + g->n_input + g->n_output +
		   g->n_value_info;
	for (size_t i = 0; i < g->n_node; i++)
		n += g->node[i]->n_input + g->node[i]->n_output;
	x->cap = n;
	x->t = pn_xcalloc(n + 1, sizeof *x->t);
	for (x->nslot = 16; x->nslot < 2 * n + 2; x->nslot *= 2)
		;
	x->slot = pn_xcalloc(x->nslot, sizeof *x->slot);
	for (size_t i = 0; i < g->n_initializer; i++) {
		if (!g->initializer[i]->name)
			continue;
		ox_tensor *t = add(x, g->initializer[i]->name);
		set_tensor(t, g->initializer[i]);
		t->init = 1;
	}
	names b = {0};
	int rc = batch_names(x, g, &b);
	const Onnx__ValueInfoProto *const *lists[3] = {
		(const Onnx__ValueInfoProto *const *)g->input,
		(const Onnx__ValueInfoProto *const *)g->output,
		(const Onnx__ValueInfoProto *const *)g->value_info
	};
	size_t counts[3] = {g->n_input, g->n_output, g->n_value_info};
	for (int k = 0; k < 3 && rc == 0; k++)
		for (size_t i = 0; i < counts[k]; i++)
			if (lists[k][i]->name)
				set_shape(x, add(x, lists[k][i]->name),
					  lists[k][i], &b);
	free(b.name);
	for (size_t i = 0; i < g->n_node && rc == 0; i++) {
		const Onnx__NodeProto *nd = g->node[i];
		for (size_t k = 0; k < nd->n_input; k++)
			add(x, nd->input[k]);
		for (size_t k = 0; k < nd->n_output; k++)
			add(x, nd->output[k]);
		if (!nd->op_type || strcmp(nd->op_type, "Constant") != 0 ||
		    !nd->n_output)
			continue;
		for (size_t a = 0; a < nd->n_attribute; a++) {
			const Onnx__AttributeProto *at = nd->attribute[a];
			if (at->name && at->t && strcmp(at->name, "value") == 0) {
				ox_tensor *t = add(x, nd->output[0]);
				set_tensor(t, at->t);
				t->cnst = 1;
			}
		}
	}
	return rc;
}

/* ---- attributes and helpers for map.c ----------------------------------- */

static const Onnx__AttributeProto *attr(const ox *x, const char *name)
{
	for (size_t i = 0; i < x->node->n_attribute; i++)
		if (x->node->attribute[i]->name &&
		    strcmp(x->node->attribute[i]->name, name) == 0)
			return x->node->attribute[i];
	return NULL;
}

long long ox_attr_int(const ox *x, const char *name, long long def)
{
	const Onnx__AttributeProto *a = attr(x, name);
	return a && a->has_i ? (long long)a->i : def;
}

const int64_t *ox_attr_ints(const ox *x, const char *name, size_t *n)
{
	const Onnx__AttributeProto *a = attr(x, name);
	*n = a ? a->n_ints : 0;
	return *n ? a->ints : NULL;
}

const char *ox_attr_str(const ox *x, const char *name, size_t *n)
{
	const Onnx__AttributeProto *a = attr(x, name);
	*n = a && a->has_s ? a->s.len : 0;
	return a && a->has_s ? (const char *)a->s.data : NULL;
}

double ox_prod(const ox_tensor *t, int lo, int hi)
{
	double p = 1;
	for (int i = lo < 0 ? 0 : lo; i < hi && i < t->rank; i++)
		p *= t->dims[i];
	return p;
}

int ox_float(int elem)
{
	/* FLOAT FLOAT16 DOUBLE BFLOAT16 */
	return elem == 1 || elem == 10 || elem == 11 || elem == 16;
}

double ox_weights(ox_tensor *t)
{
	if (t && t->alias)
		t = t->alias;
	if (!t || !t->init || t->counted || !ox_float(t->elem) || t->rank < 0
	    || t->bad)
		return 0;
	t->counted = 1;
	return ox_prod(t, 0, t->rank);
}

pn_layer *ox_row(ox *x, pn_layer_type type, const char *suffix)
{
	char nm[96];
	const char *n = x->node->name;
	if (n && *n)
		snprintf(nm, sizeof nm, "%s%s", n, suffix ? suffix : "");
	else
		snprintf(nm, sizeof nm, "%s_%ld%s", x->op,
			 x->index, suffix ? suffix : "");
	for (char *p = nm; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '_';
	return pn_arch_add(x->a, type, 1, 0, nm);
}

/* ---- the nodes ------------------------------------------------------------ */

/* Rows from..a->n of the current node: every dimension of the contract at
 * least 1 (padding and bidirectional at least 0), and possible. */
static int check_rows(ox *x, long from)
{
	for (long i = from; i < x->a->n; i++) {
		const pn_layer *l = &x->a->r[i].l;
		const char *const *d = pn_layer_dims(l->type);
		char why[160];
		const char *msg = pn_layer_check(l, why, sizeof why);
		for (int k = 0; d[k] && !msg; k++) {
			if (strcmp(d[k], "op") == 0)
				continue;
			double v = pn_layer_get(l, d[k]);
			int zero = strcmp(d[k], "padding") == 0 ||
				   strcmp(d[k], "bidirectional") == 0;
			if (v < !zero || v > PN_WHOLE_MAX || v != floor(v)) {
				snprintf(why, sizeof why, "%s %g is no whole "
					 "number from %d to 2^53", d[k], v,
					 !zero);
				msg = why;
			}
		}
		if (msg)
			return ox_fail(x, "node '%s' (%s): impossible %s: %s",
				       x->a->r[i].name, x->op,
				       pn_layer_name(l->type), msg);
	}
	return 0;
}

static void unmapped(pn_onnx_unmapped *u, const char *op)
{
	char nm[64];
	snprintf(nm, sizeof nm, "%s", op);
	for (char *p = nm; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '_';
	u->nodes++;
	for (long i = 0; i < u->n; i++)
		if (strcmp(u->op[i].name, nm) == 0) {
			u->op[i].count++;
			return;
		}
	u->op = pn_xrealloc(u->op, (size_t)(u->n + 1) * sizeof *u->op);
	snprintf(u->op[u->n].name, sizeof u->op[u->n].name, "%s", nm);
	u->op[u->n++].count = 1;
}

static int nodes(ox *x, const Onnx__GraphProto *g, pn_onnx_unmapped *u)
{
	for (size_t i = 0; i < g->n_node; i++) {
		x->node = g->node[i];
		x->index = (long)i;
		x->op = x->node->op_type ? x->node->op_type : "";
		long from = x->a->n;
		int rc = ox_map(x);
		if (rc < 0 || (rc > 0 && check_rows(x, from) != 0))
			return -1;
		if (rc == 0)
			unmapped(u, x->op);
	}
	if (x->a->n == 0)
		return ox_fail(x, "no node maps to a row");
	return 0;
}

/* protobuf-c's allocations for one model, within a budget: a message of
 * a few bytes in the file is a struct of tens in memory, so a corrupt file
 * could ask for far more than its size. */
typedef struct {
	size_t used, budget;
} pb_budget;

static void *pb_alloc(void *data, size_t size)
{
	pb_budget *b = data;
	if (size > b->budget - b->used) {
		b->used = b->budget;
		return NULL;
	}
	b->used += size;
	return malloc(size);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	free(p);
}

int pn_onnx_build(pn_arch *a, const unsigned char *data, size_t n,
		  pn_onnx_unmapped *u, pn_onnx_err *e)
{
	memset(u, 0, sizeof *u);
	pb_budget b = {0, PN_ONNX_MEM(n)};
	ProtobufCAllocator al = {pb_alloc, pb_free, &b};
	Onnx__ModelProto *m = onnx__model_proto__unpack(&al, n, data);
	if (!m && b.used == b.budget) {
		snprintf(e->msg, sizeof e->msg, "reading the model needs more "
			 "than %zu MiB (16 times its size, plus 64 MiB): a "
			 "corrupt file?", b.budget >> 20);
		return -1;
	}
	if (!m) {
		snprintf(e->msg, sizeof e->msg, "not an ONNX model (protobuf "
			 "parse failed)");
		return -1;
	}
	ox x = {.a = a, .e = e};
	int rc;
	if (!m->graph)
		rc = ox_fail(&x, "the model has no graph");
	else
		rc = load_tensors(&x, m->graph) == 0 &&
		     nodes(&x, m->graph, u) == 0 ? 0 : -1;
	if (rc == 0)
		pn_arch_finish(a, PN_OPT_SGD);
	else
		pn_arch_free(a);
	free(x.t);
	free(x.slot);
	onnx__model_proto__free_unpacked(m, &al);
	return rc;
}
