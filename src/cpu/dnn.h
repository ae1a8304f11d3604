/* dnn.h - inside the cpu backend of pn-time: the prepared layer (pn_run)
 * and the helpers that build it from oneDNN primitives and plain-C ops.
 * One file per layer family builds its layers (gemm.c: dense, bmm,
 * attention; conv.c: conv2d; rnn.c: rnn, lstm, gru; vector.c: embedding,
 * layernorm, softmax, xent, elementwise, posenc; pool.c: batchnorm, pool), as
 * src/cuda does; core.c holds
 * the helpers and the backend's table.
 *
 * A layer builder adds ops to the forward (FWD) and backward (BWD) phases
 * of r, its parameters (with their gradients) and the canonical tensors of
 * --check.  Every helper does nothing once r has failed (r->st set by
 * dn_fail or DN): a builder may call on after a failure and check r->st
 * only before it uses what a helper returned (NULL after a failure).
 */
#ifndef PN_CPU_DNN_H
#define PN_CPU_DNN_H

#include <stddef.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>

#include "../time/backend.h"
#include "rng.h"

#define MAXOPS 64
#define MAXBUF 160
#define MAXPAR 64
#define MAXPD 64
#define MAXL 16           /* recurrent layers */

enum { FWD, BWD, NPHASE };
enum { CX, CX2, CY, CDX, CDX2, CDY, NCANON };

typedef struct op {
	dnnl_primitive_t prim;
	int nargs;
	dnnl_exec_arg_t args[16];
	void (*fn)(const struct op *);   /* a plain-C op */
	float *a, *b, *c, *d;
	const int32_t *idx;
	size_t n, m;
	float f;
	int k;
	int half;                /* a, b hold bf16, not float (dropout) */
	void *mask;              /* dropout's noise, of the run's type */
	void *ctx;               /* the op's own (dropout: its run) */
} op;

typedef struct {
	dnnl_memory_t w, g;                /* weights and their gradient */
	float *s1, *s2;                    /* optimizer state */
	float *master, *g32;               /* bf16 w: its fp32 master copy and
					      a gradient widened to fp32 */
	size_t n;                          /* elements of w (with padding) */
	dnnl_memory_desc_t canon, gcanon;  /* canonical layout of w, g */
} param;

struct pn_run {
	pn_config cfg;
	int st;
	char msg[256];
	double bytes, limit;
	void *buf[MAXBUF];
	int nbuf;
	dnnl_memory_t mem[MAXBUF];
	int nmem;
	dnnl_primitive_desc_t pd[MAXPD];
	int npd;
	op ops[NPHASE][MAXOPS];
	int nops[NPHASE];
	param par[MAXPAR];
	int npar;
	long t;                            /* optimizer steps taken */
	char impl[160];
	pn_rng rng;
	dnnl_memory_t canon[NCANON];       /* tensors of pn_io */
	dnnl_memory_desc_t cmd[NCANON];    /* ... and their canonical layout */
	int32_t *idx;                      /* embedding indices, xent targets */
	dnnl_memory_t fresh;               /* new values before each step */
	long draw;                         /* steps timed: each draws its
					      dropout masks anew (0: --check) */
	pn_mt mt;                          /* ... from this generator */
	int rnn;                           /* weights need the recurrent map */
	int nl;                            /* recurrent layers */
	dnnl_memory_t rw[MAXL][2], rb[MAXL], rdw[MAXL][2], rdb[MAXL];
};

extern dnnl_engine_t dn_eng;       /* the engine, its stream, the options */
extern dnnl_stream_t dn_strm;
extern pn_bk_opts dn_opts;
/* The data type of the row being prepared (dnnl_f32, or dnnl_bf16 for a
 * bf16 row): MD, ANY and MDS describe tensors of it; MDF is always f32
 * (layer normalization's statistics, scale and shift).  A bf16 row runs
 * oneDNN's bf16 kernels (fp32 accumulation) and keeps an fp32 master copy
 * of every weight: the optimizer widens the gradient, updates the master
 * and narrows it back into the weight, as automatic mixed precision does. */
extern dnnl_data_type_t dn_dt;


/* ---- errors and memory (core.c) ------------------------------------------ */

/* Record the first failure of r: status st and a message. */
void dn_fail(pn_run *r, int st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A oneDNN status: 0 on success, else -1 after dn_fail (unimplemented:
 * PN_INVALID; out of memory: PN_OOM; else PN_ERROR naming file:line). */
#define DN(call, what) dn_status(r, (call), what, __FILE__, __LINE__)
int dn_status(pn_run *r, dnnl_status_t s, const char *what, const char *file,
	      int line);
/* bytes counted against --mem-limit (PN_OOM beyond it), freed by release */
void *dn_balloc(pn_run *r, size_t bytes);
/* The context of an op (its sizes and pointers): pn-time's bookkeeping,
 * not the layer's memory, so not in mem_bytes; freed by release too. */
void *dn_ctx(pn_run *r, size_t bytes);
float *dn_fbuf(pn_run *r, size_t n);          /* n zeroed floats */

/* A memory object of md on a new buffer; fill ZERO, RAND in [-1, 1),
 * WEIGHT in [-1/sqrt(fan), 1/sqrt(fan)). */
typedef enum { ZERO, RAND, WEIGHT, NOFILL } fill;
dnnl_memory_t dn_tensor(pn_run *r, const dnnl_memory_desc_t *md, fill f,
			double fan);
/* Give m new random values in [-1, 1) before every step, outside its
 * timing: a kernel whose branches follow its data (a max pool's
 * comparisons) would otherwise meet the same data every repetition, and
 * a branch predictor learns a few thousand of those outcomes by heart,
 * which a training step, whose data change between the op's calls, never
 * lets it do. */
void dn_fresh(pn_run *r, dnnl_memory_t m);
/* A memory object of md on an existing buffer. */
dnnl_memory_t dn_view(pn_run *r, const dnnl_memory_desc_t *md, void *p);
void *dn_ptr(dnnl_memory_t m);
const dnnl_memory_desc_t *dn_mdof(dnnl_memory_t m);
/* elements of m (padding included), and the bytes of one */
size_t dn_nelems(dnnl_memory_t m);
size_t dn_esize(dnnl_data_type_t t);
/* Fill m with uniform values in [lo, hi), or with the n floats of v,
 * narrowed to m's data type. */
void dn_fill(pn_run *r, dnnl_memory_t m, float lo, float hi);
void dn_set(dnnl_memory_t m, const float *v, size_t n);

/* memory descriptors: MD plain, ANY the primitive's choice, MDS strided */
dnnl_memory_desc_t dn_md_tag(int nd, const dnnl_dim_t *dims,
			     dnnl_format_tag_t tag);
dnnl_memory_desc_t dn_md_str(int nd, const dnnl_dim_t *dims,
			     const dnnl_dim_t *strides);
dnnl_memory_desc_t dn_md_f32(int nd, const dnnl_dim_t *dims);
extern const dnnl_format_tag_t dn_plain[];
#define DIMS(...) ((const dnnl_dim_t[]){__VA_ARGS__})
#define MD(nd, ...) dn_md_tag(nd, DIMS(__VA_ARGS__), dn_plain[nd])
#define ANY(nd, ...) dn_md_tag(nd, DIMS(__VA_ARGS__), dnnl_format_tag_any)
#define MDS(nd, d, s) dn_md_str(nd, d, s)
#define MDF(nd, ...) dn_md_f32(nd, DIMS(__VA_ARGS__))

/* ---- primitives (core.c) ------------------------------------------------- */

/* Attributes: user scratchpad, an activation post-op, an output scale. */
dnnl_primitive_attr_t dn_attr_new(int act, float scale);
/* A primitive descriptor of desc (an op descriptor) with attributes
 * (act, scale), after the forward hint; NULL on failure. */
dnnl_primitive_desc_t dn_pdesc(pn_run *r, const void *desc, int act,
			       float scale, const_dnnl_primitive_desc_t hint,
			       const char *what);
const dnnl_memory_desc_t *dn_q(const_dnnl_primitive_desc_t pd,
			       dnnl_query_t what, int i);
/* Add the primitive of pd to phase ph with (arg, memory) pairs ending in
 * -1; allocates its scratchpad.  A NULL memory drops its argument. */
void dn_prim(pn_run *r, int ph, dnnl_primitive_desc_t pd, ...);
/* A reorder of src into dst added to phase ph. */
void dn_reorder(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t dst);
/* m in layout want: m itself, or a new tensor filled by a reorder added
 * to phase ph now. */
dnnl_memory_t dn_as(pn_run *r, int ph, dnnl_memory_t m,
		    const dnnl_memory_desc_t *want);
/* Add s to the implementations that the row's message lists (once). */
void dn_note(pn_run *r, const char *s);
/* A plain-C op fn added to phase ph (its fields set by the caller). */
op *dn_cop(pn_run *r, int ph, void (*fn)(const op *));
/* Dropout as PyTorch runs it on a CPU tensor (core.c): the forward draws
 * a Bernoulli noise tensor of the run's type over the n elements of a
 * (rate p), scales it by 1 / (1 - p) and writes b = a * noise, three
 * passes; a timed step draws from MT19937, a new mask each step (the
 * run's draw counts them), --check (draw 0) takes pn_keep's mask of salt
 * k, the one every backend shares.  dn_dropout_fwd adds its op to phase
 * ph and returns the noise when keep (training: autograd keeps it, 4 bytes
 * an element in fp32), else NULL (also on failure); dn_dropout_bwd adds
 * dx = dy * noise to phase ph.  a, b, dy and dx are bf16 when the run's
 * type is. */
void *dn_dropout_fwd(pn_run *r, int ph, void *a, void *b, size_t n,
		     float p, int k, int keep);
void dn_dropout_bwd(pn_run *r, int ph, void *dy, void *dx, size_t n,
		    const void *noise);
/* A parameter w with gradient g (NULL: not trained) and the canonical
 * layout of --check (NULL: w's own), with its optimizer state. */
void dn_addparam(pn_run *r, dnnl_memory_t w, dnnl_memory_t g,
		 const dnnl_memory_desc_t *canon);
/* A normalization's scale g and shift b, fp32 parameters of layout mc
 * with gradients dg and db, and the data's gradients dy and dx in their
 * --check slots; dg, db, dy and dx NULL in inference. */
void dn_norm_params(pn_run *r, dnnl_memory_t g, dnnl_memory_t b,
		    dnnl_memory_t dg, dnnl_memory_t db,
		    const dnnl_memory_desc_t *mc, dnnl_memory_t dy,
		    dnnl_memory_t dx);
/* The buffers of a normalization that pn's C loops run (batch norm, layer
 * norm): data x, y and in training dy, dx (layout md, the run's type);
 * scale g, shift b and their gradients dg, db (mc, fp32). */
typedef struct {
	void *x, *y, *dy, *dx;
	float *g, *b, *dg, *db;
} normio;
/* Allocate io's tensors and add fwd, and in training bwd, to their phases
 * with ctx (the loops' context, which holds io), noted as note; the
 * tensors go to --check's slots, g and b are its parameters. */
void dn_norm_loops(pn_run *r, const dnnl_memory_desc_t *md,
		   const dnnl_memory_desc_t *mc, normio *io, void *ctx,
		   void (*fwd)(const op *), void (*bwd)(const op *),
		   const char *note);
/* The tensor of pn_io in slot (CX...) is m, canonical layout md (NULL:
 * m's own). */
void dn_canon(pn_run *r, int slot, dnnl_memory_t m,
	      const dnnl_memory_desc_t *md);
/* y = act(y) in place, an eltwise forward primitive added to FWD (none:
 * nothing); a framework runs its activation as an op of its own. */
void dn_act_fwd(pn_run *r, int act, dnnl_memory_t y);
/* dz = dy * act'(y) as an eltwise backward primitive on y's layout. */
dnnl_memory_t dn_act_bwd(pn_run *r, int act, dnnl_memory_t y,
			 dnnl_memory_t dy);

/* ---- the layers, by family ----------------------------------------------- */

void dn_dense(pn_run *r);           /* gemm.c */
void dn_bmm(pn_run *r);
void dn_attention(pn_run *r);
void dn_conv2d(pn_run *r);          /* conv.c */
void dn_rnn(pn_run *r);             /* rnn.c: rnn, lstm, gru */
/* --check: recurrent weights between the canonical (PyTorch) layout w and
 * oneDNN's (in = 1: into oneDNN's), of the gradients when grad */
void dn_rnn_xfer(pn_run *r, float *w, int in, int grad);
void dn_embedding(pn_run *r);       /* vector.c */
void dn_layernorm(pn_run *r);
/* A normalization with scale and shift (layer normalization) from its
 * forward pd and, in training, its backward pd: data md, statistics ms,
 * scale and shift mc (fp32). */
void dn_norm(pn_run *r, dnnl_primitive_desc_t fpd, dnnl_primitive_desc_t bpd,
	     const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *ms,
	     const dnnl_memory_desc_t *mc);
void dn_softmax(pn_run *r);
/* rowwise.c: a softmax (log: a log-softmax) over the last axis of rows
 * of m contiguous elements from x into y, added to phase ph, as PyTorch
 * runs it: in fp32 ATen's loop (note c:softmax), else oneDNN's forward pd
 * fpd; dn_softmax_bwd likewise its backward, from its output y and
 * gradient dy into dx (note c:softmax_bwd; else bpd). */
void dn_softmax_fwd(pn_run *r, int ph, dnnl_primitive_desc_t fpd, int log,
		    dnnl_memory_t x, dnnl_memory_t y, size_t rows, size_t m);
void dn_softmax_bwd(pn_run *r, int ph, dnnl_primitive_desc_t bpd, int log,
		    dnnl_memory_t y, dnnl_memory_t dy, dnnl_memory_t dx,
		    size_t rows, size_t m);
void dn_xent(pn_run *r);
void dn_elementwise(pn_run *r);
void dn_posenc(pn_run *r);
void dn_batchnorm(pn_run *r);       /* bnorm.c */
/* rowwise.c: fp32 layer norm as ATen's loops */
void dn_layernorm_c(pn_run *r);
void dn_pool(pn_run *r);            /* pool.c */

#endif
