#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "memory.h"
#include "optim.h"

/* CPU: bench/real-memory's development networks (the median of measured
 * less modelled, 0.01 MB); GPU: cited, see memory.h. */
const double pn_mem_fixed[PN_MEM_NBACKENDS] = {
	[PN_MEM_CPU] = 0,
	[PN_MEM_GPU] = 1343.0 * 1024 * 1024,
};

int pn_mem_backend(const pn_gpu *g)
{
	return pn_gpu_is_cpu(g) ? PN_MEM_CPU : PN_MEM_GPU;
}

/* PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp):
 * every block a multiple of kMinBlockSize, 512 B; a request of
 * kMinLargeAlloc, 10 MiB, or more gets a segment of its own, rounded up
 * to kRoundLarge, 2 MiB.  Smaller blocks share the 2 MiB and 20 MiB
 * segments of the small and large pools (their free tails: not counted). */
#define MIB 1048576.0

double pn_mem_alloc(int backend, double bytes)
{
	if (backend != PN_MEM_GPU || bytes <= 0)
		return bytes;
	double b = ceil(bytes / 512) * 512;
	return bytes >= 10 * MIB ? ceil(bytes / (2 * MIB)) * 2 * MIB : b;
}

/* Temporaries of PyTorch's single-tensor optimizer step, in tensors of a
 * parameter's size (sqrt, then the division, of Adam's denominator). */
static const double opt_temps[PN_NOPT] = {
	[PN_OPT_NONE] = 0, [PN_OPT_SGD] = 0, [PN_OPT_ADAM] = 2,
	[PN_OPT_ADAGRAD] = 1, [PN_OPT_ADADELTA] = 2, [PN_OPT_RMSPROP] = 1,
};

static int opt_states(int opt, int momentum)
{
	return pn_opt_states(opt) +
	       (momentum && (opt == PN_OPT_SGD || opt == PN_OPT_RMSPROP));
}

/* Which of a layer's own tensors its backward keeps. */
enum { KEEP_IN = 1, KEEP_OUT = 2 };

static int keeps(const pn_layer *l)
{
	switch (l->type) {
	case PN_DENSE: case PN_CONV2D:
		return KEEP_IN | (l->activation ? KEEP_OUT : 0);
	case PN_BMM: case PN_ATTENTION: case PN_EMBEDDING: case PN_RNN:
	case PN_LSTM: case PN_GRU: case PN_LAYERNORM: case PN_BATCHNORM:
	case PN_POOL:
		return KEEP_IN;
	case PN_SOFTMAX: case PN_XENT:
		return KEEP_OUT;
	case PN_ELEMENTWISE: {
		static const char *const out[] = {"relu", "tanh", "sigmoid",
						  "exp", 0};
		static const char *const in[] = {"gelu", "powu", "mul", "div",
						 "pow", "silu_mul", "gelu_mul",
						 0};
		return pn_name_index(out, l->op) >= 0 ? KEEP_OUT :
		       pn_name_index(in, l->op) >= 0 ? KEEP_IN : 0;
	}
	default:
		return 0;
	}
}

/* Bytes kept beyond the layer's input and output, and its forward
 * workspace beyond its output (formulas: memory.h). */
static void inner(const pn_layer *l, double dropout, int backend,
		  double *kept, double *work)
{
	double B = l->batch, S = l->seq_len, e = l->bytes;
	*kept = *work = 0;
	switch (l->type) {
	case PN_ATTENTION: {
		double E = l->embed_dim, P = B * l->heads * S * S;
		*kept = (6 * B * S * E + P) * e;
		if (dropout > 0)
			*kept += P * e + P * (backend == PN_MEM_CPU ? e : 1);
		*work = 3 * B * S * E * e;
		break;
	}
	case PN_RNN: case PN_LSTM: case PN_GRU: {
		double g = l->type == PN_LSTM ? 4 : l->type == PN_GRU ? 3 : 1;
		double k = g > 1 ? g + 3 : 1, dirs = l->bidirectional ? 2 : 1;
		double H = l->hidden;
		*kept = dirs * B * S * H * (k * l->layers + l->layers - 1) * e;
		*work = dirs * B * S * g * H * e;
		break;
	}
	case PN_LAYERNORM:
		*kept = 2 * B * S * 4;
		break;
	case PN_BATCHNORM:   /* save_mean, save_invstd: fp32 a channel */
		*kept = 2 * l->in_channels * 4;
		break;
	case PN_POOL:        /* max_pool2d_with_indices: int64 indices */
		if (strcmp(l->op, "max") == 0) {
			double y = pn_conv_out(l);
			*kept = B * l->in_channels * y * y * 8;
		}
		break;
	case PN_ELEMENTWISE:
		if (strcmp(l->op, "dropout") == 0)
			*kept = B * S * l->dim * (backend == PN_MEM_CPU ? e : 1);
		break;
	default:
		break;
	}
}

/* On the CPU, PyTorch's oneDNN convolution works in a blocked layout of
 * channels padded to 16 (nChw16c) and reorders from and to PyTorch's:
 * blk(c, s) = B ceil(c / 16) 16 s s e.  Forward: the blocked output,
 * with the blocked input where it has 16 channels or more (a first
 * layer's few channels are read as they are); then the output, the
 * blocked output still there.  Backward: the blocked output gradient and
 * the blocked input gradient; then the input gradient, the blocked one
 * still there (gin 0: no input gradient, the blocked output gradient
 * only).  Returns the bytes of each pass beyond the row's own output
 * (fwd) and output and input gradients (bwd); 0 on a GPU or for another
 * type. */
static void cpu_blocked(const pn_layer *l, int backend, int gin,
			double *fwd, double *bwd)
{
	*fwd = *bwd = 0;
	if (backend != PN_MEM_CPU || l->type != PN_CONV2D)
		return;
	double y = pn_conv_out(l), x = l->image, B = l->batch, e = l->bytes;
	double bout = B * ceil(l->out_channels / 16) * 16 * y * y * e;
	double bin = B * ceil(l->in_channels / 16) * 16 * x * x * e;
	double out = B * l->out_channels * y * y * e;
	double in = B * l->in_channels * x * x * e;
	*fwd = fmax((l->in_channels >= 16 ? bin : 0) + bout - out, bout);
	*bwd = gin ? fmax(bout + bin - in, bin) : bout;
}

/* The bytes of a row's bias (and other vector) weights: the allocator
 * holds them apart from its weight matrices. */
static double vector_weights(const pn_layer *l)
{
	double e = l->bytes, g = l->type == PN_LSTM ? 4 : l->type == PN_GRU ?
				 3 : 1;
	switch (l->type) {
	case PN_DENSE: return l->bias * l->out_features * e;
	case PN_CONV2D: return l->bias * l->out_channels * e;
	case PN_ATTENTION: return 4 * l->embed_dim * e;
	case PN_LAYERNORM: return 2 * l->dim * e;
	case PN_BATCHNORM: return 2 * l->in_channels * e;
	case PN_RNN: case PN_LSTM: case PN_GRU:
		return (l->bidirectional ? 2 : 1) * l->layers * 2 * g *
		       l->hidden * e;
	default: return 0;
	}
}

void pn_mem_row_of(const pn_layer *l, int train, double dropout, int opt,
		   const pn_mem_opts *o, pn_mem_row *m)
{
	pn_work w;
	pn_layer_work(l, &w);
	memset(m, 0, sizeof *m);
	int be = o->backend;
	double in = pn_mem_alloc(be, w.cm_in), out = pn_mem_alloc(be, w.cm_out);
	if (pn_layer_defs[l->type].weights) {
		double v = vector_weights(l);
		m->weights = pn_mem_alloc(be, w.cm_weights - v) +
			     pn_mem_alloc(be, v);
	}
	double kept, work;
	inner(l, dropout, be, &kept, &work);
	kept = pn_mem_alloc(be, kept);
	int k = train ? keeps(l) : 0;
	/* the input lives on while the row runs, unless kept (counted) */
	double bfwd, bbwd;
	cpu_blocked(l, be, 1, &bfwd, &bbwd);
	m->fwd_work = out + pn_mem_alloc(be, work) + bfwd +
		      (k & KEEP_IN ? 0 : in);
	if (!train)
		return;
	m->grads = m->weights;
	m->state = opt_states(opt, o->momentum) * m->weights;
	m->saved = kept + (k & KEEP_IN ? in : 0) + (k & KEEP_OUT ? out : 0);
	m->bwd_work = in + out + bbwd;
}

/* ---- mixed precision (memory.h) ----------------------------------------- */

/* The bytes of l's row were it fp32: the masters' side of a half row. */
static void fp32_row(const pn_layer *l, int train, double dropout, int opt,
		     const pn_mem_opts *o, pn_mem_row *m32)
{
	pn_layer l32 = *l;
	l32.prec = PN_FP32;
	l32.bytes = pn_prec_bytes(PN_FP32);
	pn_mem_row_of(&l32, train, dropout, opt, o, m32);
}

/* A row with weights under AMP: fp32 masters, gradients and state (each
 * tensor rounded as an fp32 one, pn_mem_alloc); the half copy of the
 * weights its forward used. */
static void amp_row(const pn_layer *l, int train, double dropout, int opt,
		    const pn_mem_opts *o, pn_mem_row *m)
{
	if (m->weights <= 0)
		return;
	double half = m->weights;
	pn_mem_row m32;
	fp32_row(l, train, dropout, opt, o, &m32);
	m->weights = m32.weights;
	m->grads = m32.grads;
	m->state = m32.state;
	if (l->prec != PN_FP16 && l->prec != PN_BF16)
		return;
	if (train) {
		m->saved += half;
		m->bwd_work += half;
	} else {
		m->fwd_work += half;
	}
}

/* A half row with weights under --fp32-master (memory.h, Masters): its
 * fp32 masters beside its weights, and fp32 state. */
static void master_row(const pn_layer *l, int train, double dropout, int opt,
		       const pn_mem_opts *o, pn_mem_row *m)
{
	if (m->weights <= 0 || (l->prec != PN_FP16 && l->prec != PN_BF16))
		return;
	pn_mem_row m32;
	fp32_row(l, train, dropout, opt, o, &m32);
	m->weights += m32.weights;
	m->master = m32.weights;
	m->state = m32.state;
}

/* A cast row (pn_netrow.cast, l at the batch): a transient of both
 * tensors, but a weight's fp32 side is the weights'.  A cast of an input
 * starts a new chain of activations (a mem row keeps nothing for the row
 * after: shared); shared skips a cast of a weight. */
static void amp_cast(const pn_netrow *r, const pn_layer *l, double traffic,
		     pn_mem_row *m)
{
	if (r->phase == PN_PH_BWD)
		return;
	if (r->cast == PN_CAST_WEIGHT) {
		m->fwd_work = l->elements / 2 * l->bytes;
		return;
	}
	m->fwd_work = traffic;
}

/* ---- the step ---------------------------------------------------------- */

typedef struct {
	int train;         /* the network trains */
	int acc;           /* it has acc rows: they hold the weights */
	int cdrop;         /* its dropout column, or -1 */
} netinfo;

static netinfo info_of(const pn_network *net)
{
	netinfo ni = {0, 0, -1};
	for (long i = 0; i < net->n; i++) {
		ni.train |= net->r[i].phase != PN_PH_FWD;
		ni.acc |= net->r[i].phase == PN_PH_ACC;
	}
	for (int c = 0; c < net->ncols; c++)
		if (strcmp(net->col[c], "dropout") == 0)
			ni.cdrop = c;
	return ni;
}

static double dropout_of(const netinfo *ni, const pn_netrow *r)
{
	if (ni->cdrop < 0)
		return 0;
	char *end;
	double p = strtod(r->field[ni->cdrop], &end);
	return end != r->field[ni->cdrop] && *end == 0 && p > 0 ? p : 0;
}

/* The tensors of a forward row (bytes): its input and output, and which
 * of them it kept (0: not kept). */
typedef struct {
	double in, out, kin, kout;
} tensors;

/* The bytes of row i's input (in) that rows above already keep (memory.h:
 * the row before's output, or a residual's earlier tensor). */
static double shared(const pn_network *net, const tensors *t, long i,
		     double in)
{
	long p = i - 1;
	while (p >= 0 && (net->r[p].phase == PN_PH_BWD ||
			  net->r[p].phase == PN_PH_ACC ||
			  net->r[p].cast == PN_CAST_WEIGHT))
		p--;
	if (p < 0)
		return 0;
	if (t[p].kout > 0)
		return fmin(t[p].kout, in);
	if (net->r[p].l.type == PN_MEM || t[p].out == in)
		return 0;
	/* not the row before's output: an earlier tensor of its block */
	for (long j = p - 1; j >= 0 && net->r[j].repeat == net->r[i].repeat;
	     j--)
		if (t[j].kin == in || t[j].kout == in)
			return in;
	return 0;
}

/* The bytes of row i at batch (zero for rows of no forward: bwd, acc,
 * whose tensors are the forward rows'); t[i]: its tensors, for the rows
 * below. */
static void row_bytes(const pn_network *net, const netinfo *ni, long i,
		      double batch, const pn_mem_opts *o, tensors *t,
		      pn_mem_row *m)
{
	const pn_netrow *r = &net->r[i];
	pn_layer l;
	double traffic;
	memset(m, 0, sizeof *m);
	pn_network_scaled(net, r, batch, &l, &traffic);
	if (r->cast) {
		amp_cast(r, &l, traffic, m);
		return;
	}
	if (r->phase == PN_PH_ACC) {
		if (l.type == PN_ELEMENTWISE) {  /* one per weight tensor */
			pn_work w;
			pn_layer_work(&l, &w);
			m->weights = pn_mem_alloc(o->backend, w.cm_out);
			m->grads = m->weights;
			int opt = o->optimizer >= 0 ? o->optimizer : PN_OPT_NONE;
			m->state = opt_states(opt, o->momentum) * m->weights;
		}
		return;
	}
	if (r->phase == PN_PH_BWD)
		return;
	int opt = o->optimizer >= 0 && pn_layer_defs[l.type].weights ?
		  o->optimizer : l.optimizer;
	pn_mem_row_of(&l, ni->train, dropout_of(ni, r), opt, o, m);
	if (o->amp)
		amp_row(&l, ni->train, dropout_of(ni, r), opt, o, m);
	else if (o->master)
		master_row(&l, ni->train, dropout_of(ni, r), opt, o, m);
	if (ni->acc)
		m->weights = m->grads = m->state = m->master = 0;
	if (!ni->train)
		return;
	pn_work w;
	pn_layer_work(&l, &w);
	int k = keeps(&l);
	t[i] = (tensors){w.cm_in, w.cm_out, k & KEEP_IN ? w.cm_in : 0,
			 k & KEEP_OUT ? w.cm_out : 0};
	if (k & KEEP_IN)   /* kept by a row above: counted there */
		m->saved -= pn_mem_alloc(o->backend, shared(net, t, i, w.cm_in));
}

/* The first row: the network's input needs no gradient, so its backward
 * computes none (PyTorch's autograd). */
static void first_bwd(const pn_network *net, double batch,
		      const pn_mem_opts *o, pn_mem_row *m)
{
	pn_layer l;
	pn_work w;
	double traffic, bfwd, bbwd;
	pn_network_scaled(net, &net->r[0], batch, &l, &traffic);
	if (net->r[0].phase != PN_PH_FWD && net->r[0].phase != PN_PH_TRAIN)
		return;
	pn_layer_work(&l, &w);
	cpu_blocked(&l, o->backend, 0, &bfwd, &bbwd);
	m->bwd_work = pn_mem_alloc(o->backend, w.cm_out) + bbwd;
}

/* The last forward row: the training loop holds its input (the model's
 * output, which the loss reads) until the step ends (a mem row's elements
 * are no tensor: not it). */
static long last_forward(const pn_network *net)
{
	for (long i = net->n - 1; i >= 0; i--)
		if (net->r[i].phase == PN_PH_FWD || net->r[i].phase == PN_PH_TRAIN)
			return i;
	return -1;
}

/* The model's output, which the training loop holds until the step ends:
 * the logits a last softmax row (the loss) reads.  Bytes held; a tensor
 * the row did not keep is added to its saved bytes.  Another last row
 * (a network without its loss) keeps its input, as every row's backward
 * reads it; it is freed at that row's backward. */
static double held_output(const pn_network *net, double batch,
			  const pn_mem_opts *o, pn_mem_row *m)
{
	const pn_netrow *r = &net->r[last_forward(net)];
	pn_layer l;
	pn_work w;
	double traffic;
	if (r->l.type == PN_MEM || (keeps(&r->l) & KEEP_IN))
		return 0;
	pn_network_scaled(net, r, batch, &l, &traffic);
	pn_layer_work(&l, &w);
	double in = pn_mem_alloc(o->backend, w.cm_in);
	m->saved += in;
	m->fwd_work = fmax(0, m->fwd_work - in);
	return r->l.type == PN_SOFTMAX || r->l.type == PN_XENT ? in : 0;
}

void pn_mem_step_of(const pn_network *net, double batch,
		    const pn_mem_opts *o, pn_mem_step *s, pn_mem_row *rows)
{
	netinfo ni = info_of(net);
	pn_mem_row *m = rows ? rows : pn_xmalloc((size_t)net->n * sizeof *m);
	memset(s, 0, sizeof *s);
	long last = ni.train ? last_forward(net) : -1;
	tensors *ts = pn_xcalloc((size_t)net->n, sizeof *ts);
	double fwd = 0, opt_tmp = 0, held = 0;
	for (long i = 0; i < net->n; i++) {
		double rep = net->r[i].repeat;
		row_bytes(net, &ni, i, batch, o, ts, &m[i]);
		if (i == 0 && ni.train)
			first_bwd(net, batch, o, &m[i]);
		if (i == last)
			held = held_output(net, batch, o, &m[i]);
		s->weights += rep * m[i].weights;
		s->grads += rep * m[i].grads;
		s->state += rep * m[i].state;
		s->activations += rep * m[i].saved;
		/* forward: what rows up to i keep, and i's workspace */
		fwd = fmax(fwd, s->activations + m[i].fwd_work);
		s->workspace = fmax(s->workspace, fmax(m[i].fwd_work,
						       m[i].bwd_work));
		if (m[i].grads > 0) {
			const pn_layer *l = &net->r[i].l;
			int opt = o->optimizer >= 0 ? o->optimizer :
				  l->optimizer;
			double t = opt_temps[opt] +
				   (opt == PN_OPT_SGD && o->momentum);
			double w = m[i].master > 0 ? m[i].master :
				   m[i].weights;
			opt_tmp = fmax(opt_tmp, t * w);
			s->fresh[PN_MEM_AT_OPT] += rep * t * w;
		}
	}
	double base = s->weights + s->state, bwd = 0, opt = 0;
	fwd += base;
	if (ni.train) {
		/* backward, from the last row: its activations freed (but
		 * the model's output, held by the loop), the gradients of
		 * the weights allocated */
		double act = s->activations, grads = 0;
		for (long i = net->n - 1; i >= 0; i--) {
			double rep = net->r[i].repeat;
			grads += rep * m[i].grads;
			bwd = fmax(bwd, base + act + grads + m[i].bwd_work);
			act -= rep * m[i].saved - (i == last ? held : 0);
		}
		opt = base + s->grads + held + opt_tmp;
		s->fresh[PN_MEM_AT_FWD] = s->activations;
		s->fresh[PN_MEM_AT_BWD] = s->grads;
	}
	s->peak = fwd;
	s->at = PN_MEM_AT_FWD;
	if (bwd > s->peak) {
		s->peak = bwd;
		s->at = PN_MEM_AT_BWD;
	}
	if (opt > s->peak) {
		s->peak = opt;
		s->at = PN_MEM_AT_OPT;
	}
	s->fixed = pn_mem_fixed[o->backend];
	s->peak += s->fixed;
	free(ts);
	if (!rows)
		free(m);
}

double pn_mem_max_batch(const pn_network *net, const pn_mem_opts *o,
			double bytes)
{
	if (net->traced)
		PN_BUG("pn_mem_max_batch: a traced network");
	pn_mem_row *m = pn_xmalloc((size_t)net->n * sizeof *m);
	pn_mem_step s;
	double lo = 0, hi = 1;
	/* the peak grows with the batch: double, then bisect */
	for (;;) {
		pn_mem_step_of(net, hi, o, &s, m);
		if (s.peak > bytes)
			break;
		lo = hi;
		if (hi >= 0x1p53) {
			free(m);
			return lo;
		}
		hi *= 2;
	}
	while (hi - lo > 1) {
		double mid = floor((lo + hi) / 2);
		pn_mem_step_of(net, mid, o, &s, m);
		if (s.peak > bytes)
			hi = mid;
		else
			lo = mid;
	}
	free(m);
	return lo;
}
