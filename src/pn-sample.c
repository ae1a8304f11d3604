/* pn-sample - draw layer configurations for pn-time */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "err.h"
#include "layer.h"
#include "opt.h"
#include "rng.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-sample [OPTION]... --layer TYPE\n"
"Write random configurations of one layer type as TSV in the layer contract,\n"
"ready for pn-time.  Sizes are drawn uniformly from the ranges of PreNeT's\n"
"Table 3 (see --ranges); an impossible configuration is never written.\n"
"\n"
"  -l, --layer TYPE         dense, bmm, conv2d, attention, embedding, rnn,\n"
"                           lstm, gru, layernorm, softmax, elementwise, posenc,\n"
"                           batchnorm, pool, xent\n"
"  -n, --count N            write N configurations (with --grid: N for each\n"
"                           grid point, default 1)\n"
"  -s, --seed S             random seed (default 1)\n"
"  -r, --range NAME=LO:HI   draw column NAME from [LO, HI]\n"
"  -c, --choice NAME=V,...  draw column NAME from the values listed\n"
"  -p, --precision LIST     precisions to draw from (default fp32); the same\n"
"                           as --choice precision=LIST\n"
"  -t, --train-ratio R      fraction of rows that train with an optimizer\n"
"                           (default 0.5); the others are forward only\n"
"  -g, --grid NAME=V,...    sweep every combination of the values of all\n"
"                           --grid options; other columns are drawn\n"
"  -L, --log-uniform        draw sizes log-uniformly (every octave as likely)\n"
"  -a, --align M[:SHARE]    in SHARE of the rows (default 1), draw every width\n"
"                           (channels, features, hidden and embedding sizes)\n"
"                           as a multiple of M, as real networks' layers are\n"
"      --max-flops F        redraw a configuration whose pass needs more than\n"
"                           F floating-point operations\n"
"      --max-bytes B        redraw a configuration whose tensors and weights\n"
"                           need more than B bytes\n"
"      --ranges             print the columns, ranges and values for TYPE\n"
"  -o, --output FILE        write to FILE instead of standard output\n"
"  -h, --help               display this help and exit\n"
"      --version            output version information and exit\n";

enum kind {
	K_INT,       /* whole number, uniform */
	K_SIZE,      /* whole number, uniform or log-uniform (--log-uniform) */
	K_WIDTH,     /* a size that --align draws as a multiple of M */
	K_REAL2,     /* real with two decimals, uniform */
	K_LOGREAL,   /* real, log-uniform, three significant digits */
	K_ENUM       /* one of a list of names */
};

#define ALL "dense bmm conv2d attention embedding rnn lstm gru layernorm " \
	    "softmax elementwise posenc batchnorm pool xent"
#define CNN "conv2d batchnorm pool"
#define RNNS "rnn lstm gru"
#define VEC "layernorm softmax elementwise posenc"

/* Every column pn-sample draws, for the layer types it applies to, in the
 * order it is drawn.  Sizes follow PreNeT's Table 3 (batch 1-64; dense
 * 1-4096; conv image 1-512, kernel 1-7, stride 1-2, padding 0-1;
 * attention sequence 64-512, embedding dim 128-1024, heads 1-16; embedding
 * vocabulary 10k-500k, dim 64-1024, sequence 64-512; RNN sequence 1-512,
 * hidden 128-1024; layernorm dim 64-1024) and its data-collection code
 * where the table gives none (RNN layers 1-4; conv channels below 10000 /
 * image; sequences 1-512 and dims 32-1024 for positional encoding).
 * batchnorm and pool take conv2d's batch, image and channels; pool's
 * kernel 2-3, stride 1 to the kernel and padding 0-1 (at most half the
 * kernel, as PyTorch requires) are those of the CNNs of
 * bench/real-steps.  xent (the loss) takes the sequences of the vector
 * types and 2 to 65,536 classes: a classifier's 2-1000 and the
 * vocabularies of bench/real-steps' and samples/networks' language models
 * (5,000-50,257; a larger one, Gemma's 256,000, is extrapolated). */
static const struct column {
	const char *types;
	const char *name;
	enum kind kind;
	double lo, hi;
	const char *values;      /* K_ENUM: the default choice; NULL: every
				    name of the enumeration (layer.h) */
} table[] = {
	{ALL, "batch", K_SIZE, 1, 64, 0},
	{"dense", "in_features", K_WIDTH, 1, 4096, 0},
	{"dense", "out_features", K_WIDTH, 1, 4096, 0},
	{"bmm", "m", K_SIZE, 1, 1024, 0},
	{"bmm", "n", K_SIZE, 1, 1024, 0},
	{"bmm", "k", K_SIZE, 1, 1024, 0},
	{CNN, "image", K_SIZE, 1, 512, 0},
	{"conv2d", "kernel", K_INT, 1, 7, 0},
	{"pool", "kernel", K_INT, 2, 3, 0},
	{"conv2d", "stride", K_INT, 1, 2, 0},
	{"pool", "stride", K_INT, 1, 3, 0},            /* and <= kernel */
	{"conv2d pool", "padding", K_INT, 0, 1, 0},
	{CNN, "in_channels", K_WIDTH, 1, 512, 0},       /* and <= 10000/image */
	{"conv2d", "out_channels", K_WIDTH, 1, 512, 0}, /* and <= 10000/image */
	{"attention", "seq_len", K_SIZE, 64, 512, 0},
	{"attention", "heads", K_INT, 1, 16, 0},
	{"attention", "embed_dim", K_WIDTH, 128, 1024, 0}, /* multiple of heads */
	{"embedding", "seq_len", K_SIZE, 64, 512, 0},
	{"embedding", "vocab", K_SIZE, 10000, 500000, 0},
	{"embedding", "embed_dim", K_WIDTH, 64, 1024, 0},
	{RNNS, "seq_len", K_SIZE, 1, 512, 0},
	{RNNS, "input_size", K_WIDTH, 1, 1024, 0},
	{RNNS, "hidden", K_WIDTH, 128, 1024, 0},
	{RNNS, "layers", K_INT, 1, 4, 0},
	{RNNS, "bidirectional", K_INT, 0, 1, 0},
	{"elementwise pool", "op", K_ENUM, 0, 0, 0},
	{"layernorm softmax elementwise", "seq_len", K_SIZE, 1, 512, 0},
	{"layernorm softmax elementwise", "dim", K_WIDTH, 64, 1024, 0},
	{"xent", "seq_len", K_SIZE, 1, 512, 0},
	{"xent", "dim", K_SIZE, 2, 65536, 0},
	{"posenc", "seq_len", K_SIZE, 1, 512, 0},
	{"posenc", "embed_dim", K_WIDTH, 32, 1024, 0},
	{"dense conv2d", "bias", K_INT, 0, 1, 0},
	{"dense conv2d " RNNS, "activation", K_ENUM, 0, 0, 0},
	{"attention elementwise " RNNS, "dropout", K_REAL2, 0, 0.5, 0},
	{ALL, "precision", K_ENUM, 0, 0, "fp32"},
	{ALL, "optimizer", K_ENUM, 0, 0, 0},     /* none: by --train-ratio */
	{ALL, "learning_rate", K_LOGREAL, 1e-5, 1e-1, 0},
	/* last, and only when asked: without -r, -c or -g input_grad=...
	 * no column and no draw, so other rows come out as before */
	{"dense conv2d", "input_grad", K_INT, 1, 1, 0},
};
#define NTABLE (sizeof table / sizeof table[0])
#define MAXV 64          /* values in one --choice or --grid list */
#define TRIES 10000      /* draws before giving up on a configuration */
#define CONV_WORK 10000  /* PreNeT: channels < 10000 / image */

/* One column of the chosen type, with the options applied. */
typedef struct {
	const struct column *t;
	double lo, hi;
	int nchoice;             /* > 0: draw from choice[] */
	char *choice[MAXV];      /* the values as written */
	double cval[MAXV];       /* ... as numbers (enum: index) */
	int grid;                /* column of the grid (index + 1), or 0 */
	int gi;                  /* grid: index of the current value */
	double v;                /* the drawn value (enum: index) */
	int na;                  /* value does not apply to this row */
} col;

static pn_layer_type type;
static col cols[NTABLE];
static int ncols;
static int logu;
static double train_ratio = 0.5, max_flops = INFINITY, max_bytes = INFINITY;
static int input_grad_asked;   /* an option named input_grad */
static long long align_m;      /* --align M: widths as multiples of M */
static double align_share = 1; /* ... in this share of the rows */
static int aligned;            /* the row being drawn is one of them */

static int applies(const char *types, const char *t)
{
	size_t n = strlen(t);
	for (const char *p = types; (p = strstr(p, t)); p += n)
		if ((p == types || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

static col *find(const char *name)
{
	for (int i = 0; i < ncols; i++)
		if (strcmp(cols[i].t->name, name) == 0)
			return &cols[i];
	return NULL;
}

static const char *const *enum_names(const col *c)
{
	const char *n = c->t->name;
	return strcmp(n, "op") == 0 ? pn_layer_defs[type].ops :
	       strcmp(n, "precision") == 0 ? pn_prec_names :
	       strcmp(n, "optimizer") == 0 ? pn_opt_names : pn_act_names;
}

/* Every name of c's enumeration, comma-separated (optimizer: but none,
 * which --train-ratio draws). */
static const char *enum_default(const col *c)
{
	static char buf[256];
	const char *const *names = enum_names(c);
	size_t n = 0;
	buf[0] = 0;
	for (int i = strcmp(c->t->name, "optimizer") == 0; names[i]; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s",
				      n ? "," : "", names[i]);
	return buf;
}

static int enum_index(const col *c, const char *s)
{
	return pn_name_index(enum_names(c), s);
}

static double minimum(const col *c)
{
	return strcmp(c->t->name, "padding") == 0 ||
	       strcmp(c->t->name, "bidirectional") == 0 ||
	       strcmp(c->t->name, "input_grad") == 0 ||
	       strcmp(c->t->name, "bias") == 0 ||
	       strcmp(c->t->name, "dropout") == 0 ? 0 :
	       c->t->kind == K_LOGREAL ? 0x1p-1074 : 1;
}

static double maximum(const col *c)
{
	return strcmp(c->t->name, "bidirectional") == 0 ||
	       strcmp(c->t->name, "input_grad") == 0 ||
	       strcmp(c->t->name, "bias") == 0 ? 1 :
	       strcmp(c->t->name, "dropout") == 0 ? 0.99 : 0x1p52;
}

/* "NAME=REST": the column NAME of the type, or a usage error. */
static col *option_col(const char *opt, const char *arg, const char **rest)
{
	const char *eq = strchr(arg, '=');
	if (!eq)
		pn_usage_error("%s: expected NAME=..., not '%s'", opt, arg);
	char name[64];
	snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
	col *c = find(name);
	if (!c) {
		if (strcmp(name, "pass") == 0)
			pn_usage_error("%s: pass follows the optimizer (none: "
				       "fwd, else train)", opt);
		pn_usage_error("%s: layer '%s' has no column '%s'", opt,
			       pn_layer_name(type), name);
	}
	*rest = eq + 1;
	if (strcmp(name, "input_grad") == 0)
		input_grad_asked = 1;
	return c;
}

static double value_of(const char *opt, col *c, const char *s)
{
	char m[160];
	size_t n = strlen(s);
	int rc;
	if (c->t->kind == K_ENUM) {
		int i = enum_index(c, s);
		if (i < 0)
			pn_usage_error("%s: unknown %s '%s'", opt, c->t->name, s);
		return i;
	}
	if (c->t->kind == K_INT || c->t->kind == K_SIZE ||
	    c->t->kind == K_WIDTH) {
		long long v, lo = (long long)minimum(c),
			  hi = (long long)maximum(c);
		rc = pn_parse_whole(s, n, lo, hi, &v);
		if (rc != PN_NUM_OK)
			pn_usage_error("%s: %s: %s", opt, c->t->name,
				       pn_whole_msg(m, sizeof m, rc, s, n, lo,
						    (unsigned long long)hi));
		return (double)v;
	}
	/* a log-uniform value must be above 0 */
	pn_span span = {minimum(c), maximum(c), c->t->kind == K_LOGREAL, 0};
	if (span.above)
		span.min = 0;
	double v;
	rc = pn_parse_real(s, n, span, &v);
	if (rc != PN_NUM_OK)
		pn_usage_error("%s: %s: %s", opt, c->t->name,
			       pn_real_msg(m, sizeof m, rc, s, n, span));
	return v;
}

static void set_range(const char *arg)
{
	const char *rest;
	col *c = option_col("--range", arg, &rest);
	if (c->t->kind == K_ENUM)
		pn_usage_error("--range: %s takes names; use --choice",
			       c->t->name);
	const char *colon = strchr(rest, ':');
	if (!colon)
		pn_usage_error("--range: expected %s=LO:HI, not '%s'",
			       c->t->name, arg);
	char lo[64];
	snprintf(lo, sizeof lo, "%.*s", (int)(colon - rest), rest);
	c->lo = value_of("--range", c, lo);
	c->hi = value_of("--range", c, colon + 1);
	if (c->lo > c->hi)
		pn_usage_error("--range: %s: %s is above %s", c->t->name, lo,
			       colon + 1);
	for (int i = 0; i < c->nchoice; i++)
		free(c->choice[i]);
	c->nchoice = 0;
}

static void set_list(const char *opt, col *c, const char *list)
{
	char *copy = pn_xstrdup(list), *save = NULL;
	for (int i = 0; i < c->nchoice; i++)
		free(c->choice[i]);
	c->nchoice = 0;
	for (char *s = strtok_r(copy, ",", &save); s;
	     s = strtok_r(NULL, ",", &save)) {
		if (c->nchoice == MAXV)
			pn_usage_error("%s: more than %d values", opt, MAXV);
		c->cval[c->nchoice] = value_of(opt, c, s);
		c->choice[c->nchoice++] = pn_xstrdup(s);
	}
	free(copy);
	if (c->nchoice == 0)
		pn_usage_error("%s: no values for %s", opt, c->t->name);
}

/* Print the value of c: names for enums, short decimals for numbers. */
static void put_value(FILE *f, const col *c)
{
	if (c->na)
		fputs("NA", f);
	else if (c->t->kind == K_ENUM)
		fputs(enum_names(c)[(int)c->v], f);
	else if (c->t->kind == K_LOGREAL)
		fprintf(f, "%.3g", c->v);
	else
		pn_put_num(f, c->v);
}

static double draw_num(pn_rng *r, const col *c, double lo, double hi)
{
	switch (c->t->kind) {
	case K_SIZE:
	case K_WIDTH:
		if (logu && lo >= 1)
			return (double)pn_rng_logint(r, (long long)lo,
						     (long long)hi);
		/* fall through */
	case K_INT:
		return (double)pn_rng_int(r, (long long)lo, (long long)hi);
	case K_REAL2:
		return (double)pn_rng_int(r, (long long)ceil(lo * 100),
					  (long long)floor(hi * 100)) / 100;
	case K_LOGREAL: {
		char buf[32];
		snprintf(buf, sizeof buf, "%.3g", lo == hi ? lo :
			 pn_rng_logunif(r, lo, hi));
		return strtod(buf, NULL);
	}
	default:
		PN_BUG("draw_num on an enum");
	}
}

/* A width in [lo, hi] as a multiple of m (m times a size drawn from
 * [ceil(lo/m), floor(hi/m)], so that log-uniform draws stay log-uniform
 * over the multiples); the plain draw where [lo, hi] holds no multiple. */
static double draw_width(pn_rng *r, const col *c, double lo, double hi,
			 double m)
{
	double qlo = ceil(lo / m), qhi = floor(hi / m);
	if (qlo > qhi)
		return draw_num(r, c, lo, hi);
	return draw_num(r, c, qlo, qhi) * m;
}

/* Draw every column not fixed by the grid; with --align, first whether
 * this row's widths are multiples of M (a draw only then, so that rows
 * without --align are those of earlier versions). */
static void draw(pn_rng *r)
{
	aligned = align_m > 0 && pn_rng_unif(r) < align_share;
	for (int i = 0; i < ncols; i++) {
		col *c = &cols[i];
		const char *name = c->t->name;
		c->na = 0;
		if (strcmp(name, "input_grad") == 0 && !input_grad_asked) {
			c->v = 1;
			continue;
		}
		if (c->grid)
			continue;
		if (strcmp(name, "optimizer") == 0) {
			if (pn_rng_unif(r) >= train_ratio) {
				c->v = PN_OPT_NONE;
				continue;
			}
		}
		if (c->nchoice > 0) {
			c->v = c->cval[pn_rng_int(r, 0, c->nchoice - 1)];
			continue;
		}
		double lo = c->lo, hi = c->hi;
		if (strcmp(name, "in_channels") == 0 ||
		    strcmp(name, "out_channels") == 0) {
			double cap = floor(CONV_WORK / find("image")->v);
			hi = fmax(lo, fmin(hi, cap));
		}
		if (strcmp(name, "stride") == 0 && type == PN_POOL)
			hi = fmax(lo, fmin(hi, find("kernel")->v));
		int attn = strcmp(name, "embed_dim") == 0 &&
			   type == PN_ATTENTION;
		double h = attn ? find("heads")->v : 1;
		/* attention: each head's width a multiple of M */
		c->v = aligned && c->t->kind == K_WIDTH ?
		       draw_width(r, c, lo, hi, (double)align_m * h) :
		       draw_num(r, c, lo, hi);
		if (attn)   /* a multiple of the heads (kept if it is one) */
			c->v = fmax(floor(c->v / h), ceil(c->lo / h)) * h;
	}
}

/* Columns that do not apply to the drawn row; the layer it describes.
 * Returns NULL when the row is possible, else why not. */
static const char *finish(pn_layer *l, char *why, size_t n)
{
	col *opt = find("optimizer"), *lr = find("learning_rate");
	lr->na = opt->v == PN_OPT_NONE;
	col *op = find("op"), *drop = find("dropout");
	if (op && drop)
		drop->na = strcmp(enum_names(op)[(int)op->v], "dropout") != 0;
	/* only a train row computes, or skips, its input's gradient */
	col *ig = find("input_grad");
	if (ig)
		ig->na = opt->v == PN_OPT_NONE;
	memset(l, 0, sizeof *l);
	l->type = type;
	for (int i = 0; i < ncols; i++)
		pn_layer_set(l, cols[i].t->name, cols[i].v);
	if (!find("bias"))
		l->bias = 0;
	col *act = find("activation"), *prec = find("precision");
	l->activation = act ? (int)act->v : 0;
	l->prec = (pn_prec)prec->v;
	l->bytes = pn_prec_bytes(l->prec);
	l->optimizer = (int)opt->v;
	l->train = l->optimizer != PN_OPT_NONE;
	l->no_input_grad = ig && !ig->na && ig->v == 0;
	if (op)
		snprintf(l->op, sizeof l->op, "%s", enum_names(op)[(int)op->v]);
	for (int i = 0; i < ncols; i++) {
		col *c = &cols[i];
		if (c->t->kind == K_ENUM || c->grid || c->nchoice)
			continue;
		if (c->v < c->lo || c->v > c->hi) {
			snprintf(why, n, "%s %g is outside %g:%g", c->t->name,
				 c->v, c->lo, c->hi);
			return why;
		}
	}
	if (pn_layer_check(l, why, n))
		return why;
	if (type == PN_BATCHNORM && l->train &&
	    l->batch * l->image * l->image == 1) {
		/* PyTorch: "Expected more than 1 value per channel" */
		snprintf(why, n, "batchnorm trains on one value a channel");
		return why;
	}
	pn_work w;
	pn_layer_work(l, &w);
	if (w.flops > max_flops) {
		snprintf(why, n, "%g flops is above --max-flops", w.flops);
		return why;
	}
	if (w.cm_total > max_bytes) {
		snprintf(why, n, "%g bytes is above --max-bytes", w.cm_total);
		return why;
	}
	return NULL;
}

/* The columns of the layer contract (layer.h's writer), with config.h's
 * training columns. */
static const char *outcols[32];
static int noutcols;

static void header(FILE *f)
{
	noutcols = pn_layer_columns(type, PN_LC_TRAINING |
				    (input_grad_asked ? PN_LC_INPUT_GRAD : 0),
				    outcols);
	for (int i = 0; i < noutcols; i++) {
		if (i != 0 && !find(outcols[i]) &&
		    strcmp(outcols[i], "pass") != 0)
			PN_BUG("a column of the contract that is not drawn");
		fprintf(f, "%s%s", i ? "\t" : "", outcols[i]);
	}
	putc('\n', f);
}

/* pass follows the optimizer: none is fwd, any other train. */
static void row(FILE *f)
{
	fputs(pn_layer_name(type), f);
	for (int i = 1; i < noutcols; i++) {
		putc('\t', f);
		if (strcmp(outcols[i], "pass") == 0)
			fputs(pn_pass_names[find("optimizer")->v ==
					    PN_OPT_NONE ? PN_PASS_FWD :
					    PN_PASS_TRAIN], f);
		else
			put_value(f, find(outcols[i]));
	}
	putc('\n', f);
}

static void show_ranges(FILE *f)
{
	fputs("column\tkind\tlo\thi\tvalues\n", f);
	static const char *const kinds[] = {"int", "size", "width", "real", "logreal",
		"enum"};
	for (int i = 0; i < ncols; i++) {
		const col *c = &cols[i];
		fprintf(f, "%s\t%s\t", c->t->name, kinds[c->t->kind]);
		if (c->t->kind == K_ENUM || c->nchoice) {
			fputs("NA\tNA\t", f);
			for (int k = 0; k < c->nchoice; k++)
				fprintf(f, "%s%s", k ? "," : "", c->choice[k]);
		} else {
			pn_put_num(f, c->lo);
			putc('\t', f);
			pn_put_num(f, c->hi);
			fputs("\tNA", f);
		}
		putc('\n', f);
	}
}

/* --align M[:SHARE] */
static void parse_align(const char *arg)
{
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	char m[32];
	if (n >= sizeof m)
		pn_usage_error("--align: expected M[:SHARE], not '%s'", arg);
	snprintf(m, sizeof m, "%.*s", (int)n, arg);
	align_m = pn_opt_whole("--align", m, 1, 1 << 20);
	if (colon)
		align_share = pn_opt_real("--align", colon + 1,
					  (pn_span){0, 1, 0, 0});
}

/* The layer type of --layer and its columns, with their default ranges
 * and choices. */
static void choose_type(const char *layer)
{
	int t = pn_layer_type_of(layer);
	if (t < 0) {
		char list[256] = "";
		size_t m = 0;
		for (int i = 0; i < PN_NLAYERS; i++)
			if (applies(table[0].types, pn_layer_names[i]))
				m += (size_t)snprintf(list + m, sizeof list - m,
						      "%s%s", m ? ", " : "",
						      pn_layer_names[i]);
		pn_usage_error("--layer: unknown layer type '%s' (one of: %s)",
			       layer, list);
	}
	type = (pn_layer_type)t;
	if (!applies(table[0].types, layer))
		pn_usage_error("--layer: pn-sample draws no layer of type '%s'", layer);
	for (size_t i = 0; i < NTABLE; i++) {
		if (!applies(table[i].types, layer))
			continue;
		col *k = &cols[ncols++];
		k->t = &table[i];
		k->lo = table[i].lo;
		k->hi = table[i].hi;
		if (table[i].kind == K_ENUM)
			set_list("table", k, table[i].values ? table[i].values
				 : enum_default(k));
	}
}

/* Write n configurations for every point of the grid; returns how many
 * were written. */
static long long generate(FILE *f, pn_rng *r, long long n, col **grid,
			  int ngrid, const char *layer)
{
	long long written = 0, points = 1;
	for (int g = 0; g < ngrid; g++)
		points *= grid[g]->nchoice;
	for (long long p = 0; p < points; p++) {
		long long rest = p;
		for (int g = ngrid - 1; g >= 0; g--) {
			grid[g]->gi = (int)(rest % grid[g]->nchoice);
			grid[g]->v = grid[g]->cval[grid[g]->gi];
			rest /= grid[g]->nchoice;
		}
		for (long long i = 0; i < n; i++) {
			char why[160];
			const char *bad = why;
			pn_layer l;
			for (int k = 0; k < TRIES && bad; k++) {
				draw(r);
				bad = finish(&l, why, sizeof why);
			}
			if (bad && ngrid) {
				char at[256] = "";
				size_t m = 0;
				for (int g = 0; g < ngrid; g++) {
					m += (size_t)snprintf(at + m,
						sizeof at - m, "%s%s=",
						g ? " " : "", grid[g]->t->name);
					m += (size_t)snprintf(at + m,
						sizeof at - m, "%s", grid[g]->choice[grid[g]->gi]);
				}
				pn_warn("grid point %s skipped: %s", at, bad);
				break;
			}
			if (bad)
				pn_die(PN_EXIT_DATA, "no possible %s "
				       "configuration in %d draws (last: %s)",
				       layer, TRIES, bad);
			row(f);
			written++;
		}
	}
	return written;
}

int main(int argc, char **argv)
{
	enum { O_MAXF = 256, O_MAXB, O_RANGES, O_VERSION };
	const char *align = NULL;
	static const struct option lopts[] = {
		{"layer", required_argument, 0, 'l'},
		{"count", required_argument, 0, 'n'},
		{"seed", required_argument, 0, 's'},
		{"range", required_argument, 0, 'r'},
		{"choice", required_argument, 0, 'c'},
		{"precision", required_argument, 0, 'p'},
		{"train-ratio", required_argument, 0, 't'},
		{"grid", required_argument, 0, 'g'},
		{"log-uniform", no_argument, 0, 'L'},
		{"align", required_argument, 0, 'a'},
		{"max-flops", required_argument, 0, O_MAXF},
		{"max-bytes", required_argument, 0, O_MAXB},
		{"ranges", no_argument, 0, O_RANGES},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, O_VERSION},
		{0, 0, 0, 0},
	};
	const char *layer = NULL, *out = NULL, *count = NULL;
	unsigned long long seed = 1;
	int ranges = 0, c;
	/* options that name columns wait until the layer type is known */
	int nspec = 0;
	struct { int opt; const char *arg; } spec[256];
	pn_init("pn-sample");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;  /* getopt's messages start "pn-x: " */
	while ((c = getopt_long(argc, argv, "l:n:s:r:c:p:t:g:La:o:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'l': layer = optarg; break;
		case 'n': count = optarg; break;
		case 's': seed = pn_opt_seed("--seed", optarg); break;
		case 'r': case 'c': case 'p': case 'g':
			if (nspec == 256)
				pn_usage_error("too many column options");
			spec[nspec].opt = c;
			spec[nspec++].arg = optarg;
			break;
		case 't':
			train_ratio = pn_opt_real("--train-ratio", optarg,
						  (pn_span){0, 1, 0, 0});
			break;
		case 'L': logu = 1; break;
		case 'a': align = optarg; break;
		case O_MAXF:
			max_flops = pn_opt_real("--max-flops", optarg,
						PN_POSITIVE);
			break;
		case O_MAXB:
			/* a size, as pn-time's --mem-limit: 1.5G */
			max_bytes = pn_opt_size("--max-bytes", optarg);
			if (!(max_bytes > 0))
				pn_usage_error("--max-bytes: '%s' is too small "
					       "(must be above 0)", optarg);
			break;
		case O_RANGES: ranges = 1; break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  return 0;
		case O_VERSION: pn_version();
		default: pn_try_help();
		}
	}
	if (optind < argc)
		pn_usage_error("extra operand '%s'", argv[optind]);
	if (align)
		parse_align(align);
	if (!layer)
		pn_usage_error("missing --layer");
	choose_type(layer);

	/* grid columns, in the order given; the first varies slowest */
	col *grid[16];
	int ngrid = 0;
	for (int i = 0; i < nspec; i++) {
		const char *rest, *arg = spec[i].arg;
		col *k;
		switch (spec[i].opt) {
		case 'r':
			set_range(arg);
			break;
		case 'p':
			set_list("--precision", find("precision"), arg);
			break;
		case 'c':
			k = option_col("--choice", arg, &rest);
			set_list("--choice", k, rest);
			break;
		case 'g':
			k = option_col("--grid", arg, &rest);
			if (k->grid)
				pn_usage_error("--grid: %s given twice",
					       k->t->name);
			if (ngrid == 16)
				pn_usage_error("--grid: more than 16 columns");
			set_list("--grid", k, rest);
			k->grid = ++ngrid;
			grid[ngrid - 1] = k;
			break;
		}
	}
	col *opt = find("optimizer");
	if (!opt->grid)
		for (int i = 0; i < opt->nchoice; i++)
			if (opt->cval[i] == PN_OPT_NONE)
				pn_usage_error("--choice: optimizer none is "
					       "drawn by --train-ratio");
	if (ranges) {
		FILE *f = pn_output_open(out);
		show_ranges(f);
		pn_output_close(f);
		return 0;
	}
	long long n;
	if (count)
		n = pn_opt_whole("--count", count, 1, PN_WHOLE_MAX);
	else if (ngrid)
		n = 1;
	else
		pn_usage_error("missing --count");

	pn_rng r;
	pn_rng_seed(&r, seed);
	FILE *f = pn_output_open(out);
	header(f);
	long long written = generate(f, &r, n, grid, ngrid, layer);
	if (written == 0)
		pn_die(PN_EXIT_DATA, "no possible configuration in the grid");
	pn_output_close(f);
	return 0;
}
