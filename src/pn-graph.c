/* pn-graph - convert a NeuSight op graph into a pn network */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "err.h"
#include "json.h"
#include "layer.h"
#include "opt.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-graph [OPTION]... [FILE]\n"
"Convert a NeuSight op graph (CSV, plain or gzip; default: standard input)\n"
"into a pn network as PyTorch runs it: one row per FwOps, BwOps and\n"
"AccOps entry, but each backward as autograd runs it (none for add and\n"
"contiguous or where no gradient flows, one pass for an activation or a\n"
"division by a number), memory passes for misc nodes of elementwise\n"
"functions (max, masked_fill, ...), the transformer block repeated\n"
"num_layer times.\n"
"\n"
"  -l, --layers N        repeat the graph's block N times (num_layer)\n"
"  -c, --config FILE     take num_layer from a model config.json (n_layer,\n"
"                        num_hidden_layers or num_layers); its hidden size,\n"
"                        heads, intermediate size and vocabulary must be\n"
"                        the graph's\n"
"  -B, --block FIRST,LAST  the block is the nodes FIRST..LAST (default: the\n"
"                        known block of BERT, GPT-2/GPT-3 or OPT graphs)\n"
"  -N, --neusight        NeuSight's op lists as they are: no passes for misc\n"
"                        nodes, every listed backward kept\n"
"  -o, --output FILE     write to FILE instead of standard output\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n"
"\n"
"Columns: name kind phase repeat layer op batch seq_len dim in_features\n"
"out_features bias m n k elements traffic_bytes precision traced_batch.\n"
"See pn-graph(1) for the mapping of op kinds to layer types.\n";

/* The one transformer block of NeuSight's single-block graphs: the inclusive
 * node range to repeat (NeuSight's Prediction/aggregator.py) and the name
 * prefix of a second block, whose presence marks a whole-model graph
 * (-fusion, or a model traced with every block). */
static const struct {
	const char *model, *first, *last, *second;
} blocks[] = {
	{"BERT", "bert_encoder_layer_0_attention_self_query",
	 "bert_encoder_layer_0_output_layer_norm", "bert_encoder_layer_1_"},
	{"GPT", "transformer_h_0_ln_1", "add_15", "transformer_h_1_"},
	{"OPT", "model_decoder_layers_0_self_attn_layer_norm", "view_11",
	 "model_decoder_layers_1_"},
};
#define NBLOCKS ((int)(sizeof blocks / sizeof blocks[0]))

/* ---- Python literals: ints, 'strings', lists and tuples ---------------- */

enum { LIT_INT, LIT_STR, LIT_SEQ };

typedef struct {
	int kind;
	long long v;            /* LIT_INT */
	const char *s;          /* LIT_STR (not terminated) */
	int len;                /* LIT_STR length, LIT_SEQ item count */
	int first;              /* LIT_SEQ: index of the first item */
	int next;               /* index of the next sibling, -1 */
} lit;

typedef struct {
	lit *v;
	int n, cap;
	const char *p, *start;
	const char *err;
} litbuf;

static int lit_new(litbuf *b)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 256;
		b->v = pn_xrealloc(b->v, (size_t)b->cap * sizeof *b->v);
	}
	memset(&b->v[b->n], 0, sizeof b->v[0]);
	b->v[b->n].next = -1;
	return b->n++;
}

static void skip_ws(litbuf *b)
{
	while (*b->p == ' ')
		b->p++;
}

/* Parse one value at b->p; returns its index or -1 with b->err set. */
static int lit_parse(litbuf *b, int depth)
{
	skip_ws(b);
	if (depth > 16) {
		b->err = "nested too deeply";
		return -1;
	}
	int i = lit_new(b);
	char c = *b->p;
	if (c == '[' || c == '(') {
		char close = c == '[' ? ']' : ')';
		b->p++;
		b->v[i].kind = LIT_SEQ;
		b->v[i].first = -1;
		int last = -1;
		for (;;) {
			skip_ws(b);
			if (*b->p == close) {
				b->p++;
				return i;
			}
			int k = lit_parse(b, depth + 1);
			if (k < 0)
				return -1;
			if (last < 0)
				b->v[i].first = k;
			else
				b->v[last].next = k;
			last = k;
			b->v[i].len++;
			skip_ws(b);
			if (*b->p == ',')
				b->p++;
			else if (*b->p != close) {
				b->err = "expected ',' or a closing bracket";
				return -1;
			}
		}
	}
	if (c == '\'') {
		const char *s = ++b->p;
		while (*b->p && *b->p != '\'')
			b->p++;
		if (!*b->p) {
			b->err = "unterminated string";
			return -1;
		}
		b->v[i].kind = LIT_STR;
		b->v[i].s = s;
		b->v[i].len = (int)(b->p - s);
		b->p++;
		return i;
	}
	if (isdigit((unsigned char)c)) {
		long long v = 0;
		while (isdigit((unsigned char)*b->p)) {
			if (v > (1LL << 53) / 10) {
				b->err = "number too large";
				return -1;
			}
			v = v * 10 + (*b->p++ - '0');
		}
		b->v[i].kind = LIT_INT;
		b->v[i].v = v;
		return i;
	}
	b->err = c ? "unexpected character" : "unexpected end";
	return -1;
}

/* Where a field came from, for messages: "file:line: column 'x': ...". */
typedef struct {
	const char *path, *col;
	long line;
} place;

static _Noreturn __attribute__((format(printf, 2, 3)))
void die(const place *at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (at->col)
		pn_die_at(PN_EXIT_DATA, at->path, at->line, "column '%s': %s",
			  at->col, msg);
	pn_die_at(PN_EXIT_DATA, at->path, at->line, "%s", msg);
}

/* Parse text as one literal; dies naming the place and the character on
 * malformed input. */
static int lit_field(litbuf *b, const place *at, const char *text)
{
	b->start = b->p = text;
	b->err = NULL;
	int i = lit_parse(b, 0);
	if (i >= 0) {
		skip_ws(b);
		if (*b->p)
			b->err = "text after the value";
	}
	if (b->err)
		die(at, "%s at character %d", b->err,
		    (int)(b->p - b->start) + 1);
	return i;
}

/* Product of a shape (a sequence of ints); -1 if it is not one. */
static double shape_elems(const litbuf *b, int i)
{
	if (b->v[i].kind != LIT_SEQ)
		return -1;
	double n = 1;
	for (int k = b->v[i].first; k >= 0; k = b->v[k].next) {
		if (b->v[k].kind != LIT_INT)
			return -1;
		n *= (double)b->v[k].v;
	}
	return n;
}

/* ---- output ------------------------------------------------------------ */

enum { O_NAME, O_KIND, O_PHASE, O_REPEAT, O_LAYER, O_OP, O_BATCH, O_SEQ,
       O_DIM, O_IN, O_OUT, O_BIAS, O_M, O_N, O_K, O_ELEMENTS, O_TRAFFIC,
       O_PREC, O_TRACED, O_NCOL };
static const char *const ocols[O_NCOL] = {
	"name", "kind", "phase", "repeat", "layer", "op", "batch", "seq_len",
	"dim", "in_features", "out_features", "bias", "m", "n", "k",
	"elements", "traffic_bytes", "precision", "traced_batch",
};

typedef struct {
	const char *field[O_NCOL];
	char buf[O_NCOL][32];
} orow;

static void set_num(orow *r, int k, double v)
{
	pn_fmt_num(r->buf[k], v);
	r->field[k] = r->buf[k];
}

/* A row of node name's op of kind in phase; fp32, as NeuSight measured. */
static void row_init(orow *r, const char *name, const char *kind,
		     const char *phase, const char *repeat, const char *traced)
{
	memset(r, 0, sizeof *r);
	r->field[O_NAME] = name;
	r->field[O_KIND] = kind;
	r->field[O_PHASE] = phase;
	r->field[O_REPEAT] = repeat;
	r->field[O_PREC] = "fp32";
	r->field[O_TRACED] = traced;
}

static void put_row(FILE *f, const orow *r)
{
	for (int k = 0; k < O_NCOL; k++) {
		if (k)
			putc('\t', f);
		fputs(r->field[k] ? r->field[k] : "NA", f);
	}
	putc('\n', f);
}

/* ---- conversion -------------------------------------------------------- */

static _Noreturn void unknown_kind(const place *at, const char *k, int len)
{
	char list[400];
	die(at, "unknown op kind '%.*s' (one of: %s)", len, k,
	    pn_ns_list(1, list, sizeof list));
}

/* The n ints of args into d; dies unless args is a sequence of n ints >= 1. */
static void get_dims(const litbuf *b, int args, int n, double *d,
		     const place *at, const char *kind)
{
	if (b->v[args].kind != LIT_SEQ || b->v[args].len != n)
		die(at, "%s needs %d dimensions", kind, n);
	int j = 0;
	for (int k = b->v[args].first; k >= 0; k = b->v[k].next, j++) {
		if (b->v[k].kind != LIT_INT || b->v[k].v < 1)
			die(at, "%s dimensions must be whole numbers of "
			    "at least 1", kind);
		d[j] = (double)b->v[k].v;
	}
}

typedef struct {
	double in_elems, out_elems;   /* the node's, for VEC traffic */
	int scalar;                   /* an input is a number without a
					 gradient: a two-tensor op is its
					 ...u op (pn_elem_with_scalar) */
} node_io;

/* An AccOps entry's tensors: the gradient kept and the new one in, their
 * sum out, 12 bytes an element.  NeuSight's labels train without
 * zero_grad, so from the second iteration on autograd's AccumulateGrad
 * adds every weight's new gradient to the one it holds, in place; NeuSight
 * gives the add the bytes per element of its node's own input and output
 * (a Linear's activations), 5 to 2052 bytes an element of the weight. */
static const node_io acc_io = {2, 1, 0};

/* A VEC row's dimensions d[0] x d[1], bytes moved an element mpo. */
static void vec_dims(orow *r, const double *d, double mpo)
{
	set_num(r, O_BATCH, d[0]);
	r->field[O_SEQ] = "1";
	set_num(r, O_DIM, d[1]);
	set_num(r, O_TRAFFIC, d[0] * d[1] * mpo);
}

/* Emit one row per entry of the op list at index ops, the first limit of
 * them (0: all); nomem: no row for MEM entries. */
static long emit_ops(FILE *f, const litbuf *b, int ops, const place *at,
		     const char *name, const char *phase,
		     const char *repeat, const char *traced,
		     const node_io *io, int fused, int nomem, long limit)
{
	if (b->v[ops].kind != LIT_SEQ)
		die(at, "expected a list of ops");
	long rows = 0;
	int e = b->v[ops].first;
	if (fused)     /* one kernel: NeuSight's representative, the last op */
		while (e >= 0 && b->v[e].next >= 0)
			e = b->v[e].next;
	for (long done = 0; e >= 0 && (!limit || done < limit);
	     e = b->v[e].next, done++) {
		if (b->v[e].kind != LIT_SEQ || b->v[e].len != 2 ||
		    b->v[b->v[e].first].kind != LIT_STR)
			die(at, "an op must be [kind, dimensions]");
		int kind = b->v[e].first, args = b->v[kind].next;
		char kname[32];
		snprintf(kname, sizeof kname, "%.*s", b->v[kind].len,
			 b->v[kind].s);
		orow r;
		row_init(&r, name, kname, phase, repeat, traced);
		double d[4];
		const pn_ns_op *k = pn_ns_kind(b->v[kind].s,
					       (size_t)b->v[kind].len);
		if (!k)
			unknown_kind(at, b->v[kind].s, b->v[kind].len);
		if (fused && (k->type == PN_DENSE || k->type == PN_BMM))
			die(at, "a fused node cannot end in %s", kname);
		r.field[O_LAYER] = pn_layer_name(k->type);
		r.field[O_OP] = k->op ? k->op : r.field[O_LAYER];
		if (k->type == PN_ELEMENTWISE && io->scalar &&
		    pn_elem_with_scalar(r.field[O_OP]))
			r.field[O_OP] = pn_elem_with_scalar(r.field[O_OP]);
		if (k->type == PN_DENSE) {
			get_dims(b, args, 3, d, at, "Linear");
			set_num(&r, O_BATCH, d[0]);
			set_num(&r, O_IN, d[1]);
			set_num(&r, O_OUT, d[2]);
			r.field[O_BIAS] = "0";
		} else if (k->type == PN_BMM) {
			get_dims(b, args, 4, d, at, "BMM");
			set_num(&r, O_BATCH, d[0]);
			set_num(&r, O_M, d[1]);
			set_num(&r, O_N, d[2]);
			set_num(&r, O_K, d[3]);
		} else if (k->type == PN_MEM) {
			if (b->v[args].kind != LIT_SEQ)
				die(at, "MEM needs a list of shapes");
			double n = 0;
			for (int s = b->v[args].first; s >= 0;
			     s = b->v[s].next) {
				double m = shape_elems(b, s);
				if (m < 0)
					die(at, "MEM needs a list "
						   "of shapes");
				n += m;
			}
			if (fused)   /* the node's tensors, once each */
				n = io->in_elems + io->out_elems;
			if (n == 0 || nomem)
				continue;    /* moves nothing: NeuSight's 0 */
			set_num(&r, O_ELEMENTS, n);
		} else {       /* VEC: layernorm, softmax, elementwise */
			get_dims(b, args, 2, d, at, kname);
			if (io->out_elems <= 0)
				die(at, "%s needs the node's output shape",
				    kname);
			/* NeuSight's MemPerO: bytes per output element */
			vec_dims(&r, d, (io->in_elems + io->out_elems) * 4 /
					io->out_elems);
		}
		put_row(f, &r);
		rows++;
	}
	return rows;
}

/* A node of the graph, as read. */
typedef struct {
	char *name, *fw, *bw, *acc, *in, *out;
	long line;
	char *prev;             /* Prev ("" without the column) */
	long *from;             /* Prev's nodes; -1: a name not in the graph */
	int nfrom;
	node_io io;             /* elements of its inputs and its output */
	int scalar_in;          /* an input of at most one element */
	int fused;
	int embedding;          /* OpName EMBEDDING */
	int misc;               /* OpName misc */
	int params;             /* OpName of a module with weights */
	int bwkind;             /* BW_*: how PyTorch runs its backward */
	int grad;               /* its output carries a gradient */
} node;

/* ---- autograd as PyTorch runs it --------------------------------------- */

/* NeuSight's training graphs list a backward for every node with ops, as
 * its tracer guesses it; PyTorch's autograd (derivatives.yaml) runs these
 * instead, and NeuSight's own per-node labels agree with it:
 *
 * BW_PASS: the backward of an add (VECadd, VECaddu) and of contiguous,
 * listed as memory passes over the gradient, one per input, launches no
 * kernel (add's self: grad, other: grad times alpha, which is grad for
 * alpha 1; contiguous is a clone, whose gradient is grad).  Such a
 * backward takes 0.009-0.012 ms on the V100, the A100 80GB and the L4
 * whatever its size, where the passes would take up to 0.5 ms, and so does
 * the backward of an add with a broadcast input (a position embedding),
 * whose gradient PyTorch sums back to its shape.  Their MEM entries give
 * no row.
 *
 * BW_ACT: the backward of an activation (gelu_backward, threshold_backward,
 * tanh_backward, sigmoid_backward) is one kernel that reads the gradient and a saved tensor
 * and writes the input's gradient, 12 bytes an element: NeuSight lists one
 * pass of the forward's 8 bytes (gelu, relu) or two (tanh: mulu, addu).
 * The labels measure it at 1.36-1.45x its forward on all three GPUs (BERT's
 * gelu, GPT's tanh, OPT's relu), where 12 bytes against 8 make 1.5x.  It is
 * one row of a binary elementwise kernel (VECmul) of the first entry's
 * dimensions.
 *
 * BW_BINARY: a product or quotient (VECmul, VECdiv) lists one gradient for
 * each input; an input that carries no gradient gets none.  GPT divides its
 * attention scores by torch.full([], sqrt(d)), a number: its backward is
 * grad / other alone, and the labels measure it at the forward's time
 * (0.99-1.01x on the V100, the A100 80GB and the L4), not twice it.  When
 * an input has at most one element and no node the op reads that carries a
 * gradient has an output that small, only the first entry gives a row, and
 * every row of the (unfused) node is the op with a number (divu: io.scalar,
 * pn_elem_with_scalar), which keeps the number for its backward, not the
 * tensor (pn-sum's memory).
 *
 * And a node whose output carries no gradient has no backward at all:
 * autograd never reaches it.  A tensor carries a gradient when it is a
 * module's weight or output (Linear, EMBEDDING, VECln, Weight, any OpName
 * not known to own none: owns_params) or is
 * computed from one that does (NeuSight's Prev; misc nodes by misc_grad):
 * the tensors made from inputs, buffers, numbers and indices alone (GPT's
 * causal-mask slice of its bias buffer, BERT's position ids, Switch's
 * routing masks) carry none, and the labels measure their backward at 0.
 * In a graph without backward ops (inference) nothing carries one; without
 * a Prev column every node but misc does, as NeuSight lists.
 *
 * --neusight keeps NeuSight's lists as they are. */
enum { BW_LISTED, BW_PASS, BW_ACT, BW_BINARY };

static int misc_fn(const char *name);

/* The length of a torch.fx node name without its _N (the N+1st call). */
static size_t stem_len(const char *name)
{
	size_t n = strlen(name), k = n;
	while (k > 0 && isdigit((unsigned char)name[k - 1]))
		k--;
	return k < n && k > 1 && name[k - 1] == '_' ? k - 1 : n;
}

/* Is fn the first n bytes of name (its stem, n = stem_len(name))? */
static int stem_is(const char *name, size_t n, const char *fn)
{
	return strlen(fn) == n && strncmp(fn, name, n) == 0;
}

/* Is the stem of node name (without its _N) one of fns? */
static int stem_in(const char *name, const char *const *fns)
{
	size_t n = stem_len(name);
	for (; *fns; fns++)
		if (stem_is(name, n, *fns))
			return 1;
	return 0;
}

/* What a misc node's output carries, by its torch.fx name: never a
 * gradient (numbers: sizes, an attribute of at most one element (a dtype,
 * a shape), torch.finfo, a constant tensor; fills, random draws,
 * comparisons, indices, integer casts), a gradient when an input carries
 * one (the tensor functions and views below, a larger attribute such as a
 * max's values), or, any other name (a module NeuSight does not know, such
 * as GPT-2's position embedding or Switch's token embedding), one whenever
 * it reads anything: it may own weights.  A misc node that reads nothing
 * (an input, a buffer) carries none. */
enum { MISC_NONE, MISC_FROM, MISC_MODULE };
static int misc_grad(const char *name, double out_elems)
{
	static const char *const none[] = {
		"size", "dim", "numel", "finfo", "tensor", "full",
		"ones", "zeros", "arange", "empty", "full_like", "ones_like",
		"zeros_like", "empty_like", "uniform_", "normal_", "rand",
		"randn", "randint", "rand_like", "randn_like", "eq", "ne",
		"lt", "le", "gt", "ge", "argmax", "argmin", "one_hot", "long",
		"int", "bool", NULL,
	};
	static const char *const from[] = {
		"view", "reshape", "transpose", "permute", "unsqueeze",
		"squeeze", "expand", "expand_as", "flatten", "contiguous",
		"clone", "repeat", "cat", "stack", "split", "chunk",
		"getitem", "to", "float", "half", "type", "type_as", "log",
		"exp", "logsumexp", "sum", "mean", "softmax", "pow", NULL,
	};
	static const char *const attr[] = {"getattr", NULL};
	if (stem_in(name, none))
		return MISC_NONE;
	if (stem_in(name, attr))      /* a dtype or a shape, or a tensor */
		return out_elems <= 1 ? MISC_NONE : MISC_FROM;
	return stem_in(name, from) || misc_fn(name) >= 0 ? MISC_FROM :
	       MISC_MODULE;
}

static int bw_kind(const char *opname)
{
	static const char *const pass[] = {"VECadd", "VECaddu", "contiguous",
					   NULL};
	static const char *const act[] = {"VECgelu", "VECrelu", "VECtanh",
					  "VECsigmoid", NULL};
	static const char *const bin[] = {"VECmul", "VECdiv", NULL};
	return pn_name_index(pass, opname) >= 0 ? BW_PASS :
	       pn_name_index(act, opname) >= 0 ? BW_ACT :
	       pn_name_index(bin, opname) >= 0 ? BW_BINARY : BW_LISTED;
}

/* May a node of this OpName own weights?  Every OpName but misc and the
 * ones NeuSight's graphs give to functions without weights: Linear,
 * EMBEDDING, VECln, Weight, and any OpName not known here (a convolution,
 * a norm of another tracer), whose backward is kept as listed. */
static int owns_params(const char *opname)
{
	static const char *const fns[] = {
		"misc", "getitem", "setitem", "dropout", "contiguous", "where",
		"mean", "rsqrt", "count", "count_nonzero", "cumsum", "output",
		"BMM", "VECadd", "VECaddu", "VECsub", "VECsubu", "VECmul",
		"VECmulu", "VECdiv", "VECdivu", "VECpow", "VECpowu",
		"VECrelu", "VECgelu", "VECtanh", "VECsigmoid", "VECsoftmax",
		NULL,
	};
	return pn_name_index(fns, opname) < 0;
}

static int by_name(const void *x, const void *y)
{
	return strcmp((*(node *const *)x)->name, (*(node *const *)y)->name);
}

/* Each node's Prev as indices into nodes (one pass, names looked up in a
 * sorted index). */
static void resolve_prev(node *nodes, long nn)
{
	node **ix = pn_xmalloc((size_t)nn * sizeof *ix);
	for (long i = 0; i < nn; i++)
		ix[i] = &nodes[i];
	qsort(ix, (size_t)nn, sizeof *ix, by_name);
	for (long i = 0; i < nn; i++) {
		node *d = &nodes[i];
		d->from = NULL;
		d->nfrom = 0;
		for (const char *p = d->prev; (p = strchr(p, '\'')); p++) {
			const char *e = strchr(++p, '\'');
			if (!e)
				break;
			size_t len = (size_t)(e - p);
			long lo = 0, hi = nn, at = -1;
			while (lo < hi) {
				long mid = lo + (hi - lo) / 2;
				int c = strncmp(ix[mid]->name, p, len);
				if (c == 0 && ix[mid]->name[len])
					c = 1;
				if (c == 0) {
					at = ix[mid] - nodes;
					break;
				}
				if (c < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			d->from = pn_xrealloc(d->from, (size_t)(d->nfrom + 1) *
					      sizeof *d->from);
			d->from[d->nfrom++] = at;
			p = e;
		}
	}
	free(ix);
}

/* Which outputs carry a gradient: to a fixed point, so that the order of
 * the nodes does not matter; a Prev name not in the graph counts as one
 * that does. */
static void mark_grad(node *nodes, long nn, int have_prev)
{
	int train = 0;          /* a graph without backward: inference */
	for (long i = 0; i < nn; i++)
		train |= strcmp(nodes[i].bw, "[]") != 0;
	for (long i = 0; i < nn; i++)
		nodes[i].grad = train && (have_prev ? nodes[i].params :
					  !nodes[i].misc);
	if (!train || !have_prev)
		return;
	for (int changed = 1; changed;) {
		changed = 0;
		for (long i = 0; i < nn; i++) {
			node *d = &nodes[i];
			int how = d->misc ? misc_grad(d->name,
						      d->io.out_elems) :
					    MISC_FROM;
			if (d->grad || how == MISC_NONE)
				continue;
			if (how == MISC_MODULE && d->nfrom > 0) {
				d->grad = changed = 1;
				continue;
			}
			for (int k = 0; k < d->nfrom; k++)
				if (d->from[k] < 0 || nodes[d->from[k]].grad) {
					d->grad = changed = 1;
					break;
				}
		}
	}
}

/* Does an input of at most one element of d carry a gradient: does a node
 * it reads with an output that small carry one? */
static int scalar_grad(const node *nodes, const node *d)
{
	for (int k = 0; k < d->nfrom; k++) {
		long j = d->from[k];
		if (j < 0 || (nodes[j].grad && nodes[j].io.out_elems <= 1))
			return 1;
	}
	return 0;
}

/* The rows of d's backward (its BwOps at index ops), as PyTorch runs it. */
static long emit_bw(FILE *f, const litbuf *b, int ops, const place *at,
		    const node *nodes, const node *d, const char *repeat,
		    const char *traced)
{
	if (!d->grad && !d->params)
		return 0;
	long limit = 0;
	switch (d->bwkind) {
	case BW_ACT: {
		/* the first entry's two dimensions; a list of another shape
		 * is converted (and checked) as it is */
		int e = b->v[ops].kind == LIT_SEQ ? b->v[ops].first : -1;
		if (e < 0 || b->v[e].kind != LIT_SEQ || b->v[e].len != 2)
			break;
		int args = b->v[b->v[e].first].next;
		if (b->v[args].kind != LIT_SEQ || b->v[args].len != 2)
			break;
		double dims[2];
		get_dims(b, args, 2, dims, at, "VECmul");
		orow r;
		row_init(&r, d->name, "VECmul", "bwd", repeat, traced);
		const pn_ns_op *k = pn_ns_kind("VECmul", 6);
		r.field[O_LAYER] = pn_layer_name(k->type);
		r.field[O_OP] = k->op ? k->op : r.field[O_LAYER];
		vec_dims(&r, dims, 12);
		put_row(f, &r);
		return 1;
	}
	case BW_BINARY:
		if (d->scalar_in && !scalar_grad(nodes, d))
			limit = 1;
		break;
	}
	return emit_ops(f, b, ops, at, d->name, "bwd", repeat, traced, &d->io,
			d->fused, d->bwkind == BW_PASS, limit);
}

/* ---- elementwise functions that NeuSight's graphs leave without ops ---- */

/* NeuSight's tracer gives op lists to the modules and functions it knows;
 * every other node is misc, with none.  Most misc nodes launch no kernel
 * (views, sizes, parameters), but a node named after an elementwise
 * function of torch reads and writes whole tensors: OPT clamps its
 * attention scores with torch.max(scores, finfo.min), one pass over batch
 * x heads x seq^2 elements in every block, and builds its mask with lt,
 * masked_fill and sub.  Such a node with an output of more than one
 * element becomes memory passes (layer mem, kind misc): a map reads every
 * input and writes its output, a fill writes its output.  max and min of
 * two tensors (torch.maximum, torch.minimum) also get their backward in a
 * training graph, as PyTorch's autograd computes it (derivatives.yaml:
 * self: where(self == other, grad / 2, grad).masked_fill_(self < other,
 * 0); 5 kernels, checked with PyTorch 1.13's profiler). Casts (to, float,
 * type_as, bool) and reshape are left out: whether they copy depends on a
 * dtype or a stride the graph does not give. */
enum { FN_MAP, FN_FILL, FN_MAXMIN };
static const struct {
	const char *name;
	int how;
} misc_fns[] = {
	{"max", FN_MAXMIN}, {"min", FN_MAXMIN}, {"maximum", FN_MAXMIN},
	{"minimum", FN_MAXMIN},
	{"where", FN_MAP}, {"masked_fill", FN_MAP}, {"masked_fill_", FN_MAP},
	{"lt", FN_MAP}, {"le", FN_MAP}, {"gt", FN_MAP}, {"ge", FN_MAP},
	{"eq", FN_MAP}, {"ne", FN_MAP}, {"add", FN_MAP}, {"sub", FN_MAP},
	{"rsub", FN_MAP}, {"mul", FN_MAP}, {"div", FN_MAP},
	{"truediv", FN_MAP}, {"neg", FN_MAP}, {"abs", FN_MAP},
	{"clamp", FN_MAP}, {"clamp_min", FN_MAP}, {"clamp_max", FN_MAP},
	{"full", FN_FILL}, {"ones", FN_FILL}, {"zeros", FN_FILL},
	{"arange", FN_FILL}, {"full_like", FN_FILL}, {"ones_like", FN_FILL},
	{"zeros_like", FN_FILL},
};
#define NMISC_FNS ((int)(sizeof misc_fns / sizeof misc_fns[0]))

/* The rule of a misc node's name (torch.fx's: the function, then _N for
 * the N+1st call), or -1. */
static int misc_fn(const char *name)
{
	size_t n = stem_len(name);
	for (int i = 0; i < NMISC_FNS; i++)
		if (stem_is(name, n, misc_fns[i].name))
			return i;
	return -1;
}

/* One mem row of a misc node: elements rounded up to whole ones. */
static void misc_row(FILE *f, const char *name, const char *phase,
		     const char *repeat, const char *traced, double elements)
{
	orow r;
	row_init(&r, name, "misc", phase, repeat, traced);
	r.field[O_LAYER] = r.field[O_OP] = pn_layer_name(PN_MEM);
	set_num(&r, O_ELEMENTS, ceil(elements));
	put_row(f, &r);
}

/* The rows of misc node d (fn its rule), whose inputs are the shapes at
 * index ins of b; grad: the graph computes its inputs' gradients.  Bytes
 * are counted as 4 an fp32 element and 1 a bool, written as elements of 4
 * bytes. */
static long misc_rows(FILE *f, const litbuf *b, int ins, const node *d,
		      int fn, const char *repeat, const char *traced,
		      const node_io *io, int grad)
{
	double n = io->out_elems;
	if (n <= 1)
		return 0;    /* a number, not a tensor */
	if (misc_fns[fn].how == FN_FILL) {
		misc_row(f, d->name, "fwd", repeat, traced, n);
		return 1;
	}
	misc_row(f, d->name, "fwd", repeat, traced, io->in_elems + n);
	if (misc_fns[fn].how != FN_MAXMIN || !grad)
		return 1;
	/* a reduction (torch.max(x, dim): an input larger than the output)
	 * has another gradient: not counted */
	for (int k = b->v[ins].first; k >= 0; k = b->v[k].next)
		if (shape_elems(b, k) > n)
			return 1;
	long rows = 1;
	/* each input of more than one element: grad / 2, self == other,
	 * where(.., grad / 2, grad), self < other, masked_fill_(.., 0); an
	 * input broadcast to the output also sums its gradient back */
	double s = io->in_elems;
	for (int k = b->v[ins].first; k >= 0; k = b->v[k].next) {
		double e = shape_elems(b, k);
		if (e <= 1)
			continue;
		const double pass[5] = {
			2 * n, (4 * s + n) / 4, 13 * n / 4, (4 * s + n) / 4,
			9 * n / 4,
		};
		for (int p = 0; p < 5; p++)
			misc_row(f, d->name, "bwd", repeat, traced, pass[p]);
		rows += 5;
		if (e < n) {
			misc_row(f, d->name, "bwd", repeat, traced, n + e);
			rows++;
		}
	}
	return rows;
}

/* ---- main -------------------------------------------------------------- */

/* The block to repeat, nodes *first..*last: the one --block names, or the
 * first known one the graph holds (none: *first stays -1).  Returns the
 * model it is of. */
static const char *find_block(const node *nodes, long nn, const char *path,
			      const char *bfirst, const char *blast,
			      long *first, long *last)
{
	const char *model = NULL;
	int whole = 0;
	for (int k = 0; k < NBLOCKS && !bfirst && !whole; k++) {
		for (long i = 0; i < nn; i++)
			if (strncmp(nodes[i].name, blocks[k].second,
				    strlen(blocks[k].second)) == 0)
				whole = 1;
		for (long i = 0; i < nn && *first < 0 && !whole; i++)
			if (strcmp(nodes[i].name, blocks[k].first) == 0)
				*first = i;
		if (*first >= 0) {
			model = blocks[k].model;
			for (long i = *first; i < nn; i++)
				if (strcmp(nodes[i].name, blocks[k].last) == 0) {
					*last = i;
					break;
				}
			if (*last < 0)
				pn_die_at(PN_EXIT_DATA, path, 0, "%s block "
					  "starts at node '%s' but has no "
					  "node '%s' after it", model,
					  blocks[k].first, blocks[k].last);
			break;
		}
	}
	if (bfirst) {
		for (long i = 0; i < nn && *first < 0; i++)
			if (strcmp(nodes[i].name, bfirst) == 0)
				*first = i;
		for (long i = *first < 0 ? nn : *first; i < nn && *last < 0; i++)
			if (strcmp(nodes[i].name, blast) == 0)
				*last = i;
		if (*first < 0)
			pn_die_at(PN_EXIT_DATA, path, 0, "--block: no node "
				  "'%s'", bfirst);
		if (*last < 0)
			pn_die_at(PN_EXIT_DATA, path, 0, "--block: no node "
				  "'%s' at or after '%s'", blast, bfirst);
		model = "given";
	}
	return model;
}

/* The traced batch into traced (32 bytes): the first dimension of the
 * output of node input_ids. */
static void traced_batch(const node *nodes, long nn, const char *path,
			 litbuf *b, char *traced)
{
	for (long i = 0; i < nn; i++) {
		if (strcmp(nodes[i].name, "input_ids") != 0)
			continue;
		b->start = b->p = nodes[i].out;
		int s = lit_parse(b, 0);
		if (s < 0 || b->v[s].kind != LIT_SEQ || b->v[s].len < 1 ||
		    b->v[b->v[s].first].kind != LIT_INT ||
		    b->v[b->v[s].first].v < 1)
			pn_die_at(PN_EXIT_DATA, path, nodes[i].line,
				  "column 'OutputShape': input_ids has no "
				  "batch dimension");
		snprintf(traced, 32, "%lld", b->v[b->v[s].first].v);
		break;
	}
	if (!*traced)
		pn_die_at(PN_EXIT_DATA, path, 0, "no node 'input_ids' to take "
			  "the traced batch from");
}

/* ---- the model config ---------------------------------------------------- */

/* What a graph's forward ops say about its model: the block's hidden size
 * (the first Linear's input), the outputs of its Linears, its heads and
 * head size (the first BMM: batch = traced batch x heads), the rows of
 * its embedding tables (EMBEDDING nodes' backward MEM (rows, dim)). */
typedef struct {
	double hidden, heads, head_dim;
	double outs[64], tables[16];
	int nouts, ntables;
} graph_facts;

/* The first op of list text, its kind in kind (32 bytes) and its args'
 * index; -1 when none. */
static int first_op(litbuf *b, const char *text, char *kind)
{
	b->start = b->p = text;
	b->n = 0;
	int l = lit_parse(b, 0);
	if (l < 0 || b->v[l].kind != LIT_SEQ || b->v[l].first < 0)
		return -1;
	int e = b->v[l].first;
	if (b->v[e].kind != LIT_SEQ || b->v[e].len != 2)
		return -1;
	int k = b->v[e].first;
	if (b->v[k].kind != LIT_STR)
		return -1;
	snprintf(kind, 32, "%.*s", b->v[k].len, b->v[k].s);
	return b->v[k].next;
}

/* Item j (from 0) of sequence s as a number; 0 when it is none. */
static double item(const litbuf *b, int s, int j)
{
	if (s < 0 || b->v[s].kind != LIT_SEQ)
		return 0;
	int k = b->v[s].first;
	while (k >= 0 && j--)
		k = b->v[k].next;
	return k >= 0 && b->v[k].kind == LIT_INT ? (double)b->v[k].v : 0;
}

static void graph_facts_of(const node *nodes, long nn, long first, long last,
			   double traced, litbuf *b, graph_facts *g)
{
	memset(g, 0, sizeof *g);
	char kind[32];
	for (long i = 0; i < nn; i++) {
		int a;
		if (i >= first && i <= last &&
		    (a = first_op(b, nodes[i].fw, kind)) >= 0) {
			if (strcmp(kind, "Linear") == 0) {
				if (!g->hidden)
					g->hidden = item(b, a, 1);
				if (g->nouts < 64)
					g->outs[g->nouts++] = item(b, a, 2);
			} else if (strcmp(kind, "BMM") == 0 && !g->heads) {
				g->heads = item(b, a, 0) / traced;
				g->head_dim = item(b, a, 2);
			}
		}
		if (nodes[i].embedding && g->ntables < 16 &&
		    (a = first_op(b, nodes[i].bw, kind)) >= 0 &&
		    strcmp(kind, "MEM") == 0 && b->v[a].kind == LIT_SEQ &&
		    b->v[a].len == 1)
			g->tables[g->ntables++] = item(b, b->v[a].first, 0);
	}
}

/* The first of keys that config has, or NULL; its name in *which. */
static const pn_json *cfg_key(const pn_json *cfg, const char *const *keys,
			      const char **which)
{
	for (int k = 0; keys[k]; k++) {
		const pn_json *v = pn_json_get(cfg, keys[k]);
		if (v && v->kind != PN_JSON_NULL) {
			*which = keys[k];
			return v;
		}
	}
	return NULL;
}

static double cfg_whole(const char *path, const pn_json *v, const char *key)
{
	if (v->kind != PN_JSON_NUM || v->num < 1 || v->num > 1e15 ||
	    v->num != (double)(long long)v->num)
		pn_die_at(PN_EXIT_DATA, path, v->line, "'%s' must be a whole "
			  "number of at least 1", key);
	return v->num;
}

/* The config's fields as NeuSight names them: num_layer, then the sizes
 * checked against the graph (field 0: layers). */
static const char *const cfg_fields[5][5] = {
	{"n_layer", "num_hidden_layers", "num_layers", 0},
	{"n_embd", "hidden_size", "d_model", 0},
	{"n_head", "num_attention_heads", "num_heads", 0},
	{"n_inner", "intermediate_size", "ffn_dim", "d_ff", 0},
	{"vocab_size", 0},
};

/* Does the graph agree with size v of field f?  -1: the graph does not
 * show it. */
static int graph_agrees(const graph_facts *g, int f, double v)
{
	const double *set = f == 3 ? g->outs : g->tables;
	int n = f == 3 ? g->nouts : g->ntables;
	switch (f) {
	case 1: return g->hidden ? g->hidden == v : -1;
	case 2: return g->heads ? g->heads == v : -1;
	default:
		if (!n)
			return -1;
		for (int i = 0; i < n; i++)
			if (set[i] == v)
				return 1;
		return 0;
	}
}

/* num_layer from the config at path; the hidden size, heads,
 * intermediate size and vocabulary it gives must be the graph's (a graph
 * traced at other sizes is not rescaled): dies when one differs, warns
 * when the graph shows none to compare. */
static long config_layers(const char *path, const node *nodes, long nn,
			  long first, long last, double traced, litbuf *b)
{
	static const char *const what[5] = {
		"", "hidden size", "heads", "intermediate size", "vocabulary"
	};
	pn_json_err je;
	pn_json *cfg = pn_json_read(path, &je);
	if (!cfg)
		pn_die_at(PN_EXIT_DATA, path, je.line, "%s", je.msg);
	const char *key;
	const pn_json *v = cfg_key(cfg, cfg_fields[0], &key);
	if (!v)
		pn_die_at(PN_EXIT_DATA, path, 0, "no n_layer, "
			  "num_hidden_layers or num_layers");
	long layers = (long)cfg_whole(path, v, key);
	if (layers > 100000)
		pn_die_at(PN_EXIT_DATA, path, v->line, "'%s' must be at most "
			  "100000", key);
	graph_facts g;
	graph_facts_of(nodes, nn, first, last, traced, b, &g);
	double hidden = 0;
	for (int f = 1; f < 5; f++) {
		v = cfg_key(cfg, cfg_fields[f], &key);
		double x = v ? cfg_whole(path, v, key) : 0;
		if (f == 1)
			hidden = x;
		if (!v && f == 3 && hidden && pn_json_get(cfg, "n_inner")) {
			v = pn_json_get(cfg, "n_inner");    /* GPT-2: null */
			x = 4 * hidden;
			key = "n_inner";
		}
		if (!x || first < 0)    /* no block: said below */
			continue;
		int ok = graph_agrees(&g, f, x);
		if (ok < 0)
			pn_warn("%s: %s %.0f not checked: the graph shows no "
				"%s", path, key, x, what[f]);
		else if (!ok)
			pn_die_at(PN_EXIT_DATA, path, v ? v->line : 0, "%s %.0f "
				  "is not the graph's %s (the graph is of "
				  "another model: pn-net --hf writes this "
				  "config's network)", key, x, what[f]);
	}
	pn_json_free(cfg);
	return layers;
}

/* --block FIRST,LAST: FIRST newly allocated, *last pointing into it. */
static char *block_range(const char *block, char **last)
{
	const char *comma = strchr(block, ',');
	if (!comma || comma == block || !comma[1] || strchr(comma + 1, ','))
		pn_usage_error("--block: expected FIRST,LAST, not '%s'", block);
	char *first = pn_xstrdup(block);
	first[comma - block] = 0;
	*last = first + (comma - block) + 1;
	return first;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"layers", required_argument, 0, 'l'},
		{"config", required_argument, 0, 'c'},
		{"block", required_argument, 0, 'B'},
		{"neusight", no_argument, 0, 'N'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	const char *out = NULL, *config = NULL, *block = NULL;
	int neusight = 0;
	long layers = 0;
	int c;
	pn_init("pn-graph");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;
	while ((c = getopt_long(argc, argv, "l:c:B:No:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			layers = (long)pn_opt_whole("--layers", optarg, 1,
						    100000);
			break;
		case 'c': config = optarg; break;
		case 'B': block = optarg; break;
		case 'N': neusight = 1; break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  return 0;
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	if (layers && config)
		pn_usage_error("--layers and --config both give num_layer");
	char *blast = NULL, *bfirst = block ? block_range(block, &blast) : NULL;
	const char *path = optind < argc ? argv[optind] : "-";

	/* Read every node first: the block is found by name. */
	pn_csv *in = pn_csv_open(path);
	static const char *const need[] = {
		"Name", "FwOps", "BwOps", "AccOps", "InputShapes",
		"OutputShape", "OpName"
	};
	int col[7];
	for (int i = 0; i < 7; i++) {
		col[i] = pn_csv_find(in, need[i]);
		if (col[i] < 0)
			pn_die_at(PN_EXIT_DATA, path, 1, "missing column '%s'",
				  need[i]);
	}
	int cprev = pn_csv_find(in, "Prev");     /* optional */
	node *nodes = NULL;
	long nn = 0, ncap = 0;
	while (pn_csv_read(in)) {
		if (nn == ncap)
			nodes = pn_xrealloc(nodes, (size_t)(ncap = ncap ? 2 *
					    ncap : 256) * sizeof *nodes);
		node *d = &nodes[nn++];
		d->name = pn_xstrdup(pn_csv_str(in, col[0]));
		d->fw = pn_xstrdup(pn_csv_str(in, col[1]));
		d->bw = pn_xstrdup(pn_csv_str(in, col[2]));
		d->acc = pn_xstrdup(pn_csv_str(in, col[3]));
		d->in = pn_xstrdup(pn_csv_str(in, col[4]));
		d->out = pn_xstrdup(pn_csv_str(in, col[5]));
		d->prev = pn_xstrdup(cprev < 0 ? "" : pn_csv_str(in, cprev));
		d->line = pn_csv_lineno(in);
		const char *opname = pn_csv_str(in, col[6]);
		d->fused = strcmp(opname, "fused") == 0;
		d->embedding = strcmp(opname, "EMBEDDING") == 0;
		d->misc = strcmp(opname, "misc") == 0;
		d->params = owns_params(opname);
		d->bwkind = bw_kind(opname);
	}
	pn_csv_close(in);
	if (nn == 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "no data rows");

	/* The block: given, or the first known one the graph holds. */
	long first = -1, last = -1;
	const char *model = find_block(nodes, nn, path, bfirst, blast, &first,
				       &last);
	/* The traced batch: the first dimension of the input ids. */
	char traced[32] = "";
	litbuf b = {0};
	traced_batch(nodes, nn, path, &b, traced);
	if (config)
		layers = config_layers(config, nodes, nn, first, last,
				       atof(traced), &b);
	if (first >= 0 && !layers)
		pn_die_at(PN_EXIT_DATA, path, 0, "the graph holds one %s block "
			  "(%s..%s): give num_layer with --layers or --config",
			  model, nodes[first].name, nodes[last].name);
	if (first < 0 && layers)
		pn_die_at(PN_EXIT_DATA, path, 0, "the graph is a whole model "
			  "with no block to repeat, but --%s gives num_layer "
			  "%ld", config ? "config" : "layers", layers);

	/* Every node's shapes, then which outputs carry a gradient. */
	for (long i = 0; i < nn; i++) {
		node *d = &nodes[i];
		place at = {path, "InputShapes", d->line};
		b.n = 0;
		int ins = lit_field(&b, &at, d->in);
		if (b.v[ins].kind != LIT_SEQ)
			die(&at, "expected a list of shapes");
		d->io.in_elems = 0;
		d->io.scalar = 0;
		d->scalar_in = 0;
		for (int s = b.v[ins].first; s >= 0; s = b.v[s].next) {
			double e = shape_elems(&b, s);
			if (e < 0)
				die(&at, "expected a list of shapes");
			d->io.in_elems += e;
			d->scalar_in |= e <= 1;
		}
		at.col = "OutputShape";
		d->io.out_elems = shape_elems(&b, lit_field(&b, &at, d->out));
		if (d->io.out_elems < 0)
			die(&at, "expected a shape");
	}
	resolve_prev(nodes, nn);
	mark_grad(nodes, nn, cprev >= 0);
	if (!neusight)
		for (long i = 0; i < nn; i++)
			nodes[i].io.scalar = nodes[i].scalar_in &&
					     !nodes[i].fused &&
					     !scalar_grad(nodes, &nodes[i]);

	/* Convert the stored nodes; errors name the node's line. */
	FILE *f = pn_output_open(out);
	for (int k = 0; k < O_NCOL; k++)
		fprintf(f, "%s%s", k ? "\t" : "", ocols[k]);
	putc('\n', f);
	char rep[32];
	snprintf(rep, sizeof rep, "%ld", layers);
	long rows = 0;
	for (long i = 0; i < nn; i++) {
		node *d = &nodes[i];
		place at = {path, "InputShapes", d->line};
		b.n = 0;
		const char *repeat = i >= first && i <= last ? rep : "1";
		static const char *const phase[3] = {"fwd", "bwd", "acc"};
		static const char *const pcol[3] = {"FwOps", "BwOps", "AccOps"};
		const char *text[3] = {d->fw, d->bw, d->acc};
		int fn = d->misc && !neusight ? misc_fn(d->name) : -1;
		if (fn >= 0 && !strcmp(d->fw, "[]") && !strcmp(d->bw, "[]") &&
		    !strcmp(d->acc, "[]")) {
			int ins = lit_field(&b, &at, d->in);
			rows += misc_rows(f, &b, ins, d, fn, repeat, traced,
					  &d->io, d->grad);
			continue;
		}
		for (int p = 0; p < 3; p++) {
			at.col = pcol[p];
			int ops = lit_field(&b, &at, text[p]);
			rows += p == 1 && !neusight ?
				emit_bw(f, &b, ops, &at, nodes, d, repeat,
					traced) :
				emit_ops(f, &b, ops, &at, d->name, phase[p],
					 repeat, traced, p == 2 && !neusight ?
					 &acc_io : &d->io, d->fused, 0, 0);
		}
	}
	if (rows == 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "no ops in the graph");
	pn_output_close(f);
	for (long i = 0; i < nn; i++) {
		free(nodes[i].name); free(nodes[i].fw); free(nodes[i].bw);
		free(nodes[i].acc); free(nodes[i].in); free(nodes[i].out);
		free(nodes[i].prev); free(nodes[i].from);
	}
	free(nodes);
	free(b.v);
	free(bfirst);
	return 0;
}
