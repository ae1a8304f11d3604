/* memory.h - the memory of a training step: what each row of a network
 * (network.h) keeps in memory, and the peak of the whole step as a
 * framework (PyTorch) reaches it.  pn-sum(1) prints the peak per GPU, says
 * whether it fits and finds the largest batch that does; its man page
 * gives these formulas to users.
 *
 * Every byte count derives from layer.h: a row's weights are
 * pn_layer_work's cm_weights on the layer types that have weights
 * (pn_layer_defs[t].weights), its input and output tensors cm_in and
 * cm_out, the element size the precision's (pn_prec_bytes: weights,
 * gradients and optimizer state are kept at the row's precision, as a
 * model converted with .half() keeps them; fp32 masters: "Mixed
 * precision" and "Masters" below).  Per row, at the batch it runs (bytes;
 * B batch, S seq_len, E embed_dim, h heads, H hidden, e element size, n
 * the row's elements B S dim):
 *
 *   weights    W = cm_weights (types with weights; others 0)
 *   gradients  G = W when the network trains (a row of phase train, bwd
 *              or acc), else 0
 *   state      pn_opt_states(opt) W (optim.h: sgd 0, adagrad 1, rmsprop
 *              1, adam 2 (AdamW the same), adadelta 2), + W for SGD and
 *              RMSprop with momentum (pn_mem_opts.momentum)
 *   saved      what the backward pass needs, kept from the forward pass
 *              to the layer's backward:
 *                dense conv2d  input; + output with an activation
 *                bmm           both inputs
 *                attention     input + (6 B S E + B h S S) e, + 2 B h S S e
 *                              and the mask with dropout > 0 (PyTorch's
 *                              MultiheadAttention, batch first: the copy
 *                              of the input, q k v, the scaled q, the
 *                              probabilities, the dropped ones, the
 *                              heads' output)
 *                embedding     the indices (int64)
 *                rnn lstm gru  input + dirs B S H (k layers + layers - 1)
 *                              e, k = 1 (rnn), 6 (gru), 7 (lstm): the
 *                              cells' gates, states and hidden states of
 *                              every step (PyTorch's CPU cells)
 *                layernorm     input + 2 B S x 4 (mean, 1/std in fp32)
 *                batchnorm     input + 2 C x 4 (mean, 1/std a channel,
 *                              fp32: PyTorch's save_mean, save_invstd)
 *                pool          input (max_pool2d_with_indices_backward
 *                              and avg_pool2d_backward read it); max:
 *                              + the int64 indices, 8 bytes an output
 *                              element
 *                softmax xent  output (xent: the log-probabilities)
 *                elementwise   relu tanh sigmoid exp: output; gelu powu
 *                              and the binary mul div pow: input; dropout:
 *                              its mask, n x mask bytes (the backend's:
 *                              CPU PyTorch keeps a mask of e bytes, CUDA
 *                              one byte); others: nothing
 *                posenc mem    nothing
 *              An input that the row before kept as its output is the
 *              same tensor: it counts once (the row's input less that
 *              output, at least 0).  An input of another size than the
 *              row before's output (that row no mem row) is an earlier
 *              tensor, a residual block's input read by its shortcut:
 *              when a row above, among those of the same repeat up to
 *              the first of another, kept a tensor of exactly that size,
 *              it is that tensor and counts once.
 *   workspace  transient, one row at a time: forward, its output (+ 3 B S
 *              E e for attention's packed projection, + dirs B S g H e
 *              for an RNN's input projection); backward, the gradients of
 *              its input and output (cm_in + cm_out; the first row's
 *              input needs none: cm_out).  On the CPU a conv2d adds
 *              oneDNN's blocked copies (memory.c, cpu_blocked), blk(c, s)
 *              = B ceil(c / 16) 16 s s e: forward max(blk(in) + blk(out)
 *              - cm_out, blk(out)), blk(in) only with 16 input channels
 *              or more; backward max(blk(out) + blk(in) - cm_in,
 *              blk(in)), the first row blk(out)
 * Each of a row's tensors above (its weight matrices and its vector
 * weights, biases and norms' scales, as two; their gradients and each
 * state tensor alike; its input, output, the rest of its saved bytes,
 * its workspace) is
 * counted as the backend's allocator holds it (pn_mem_alloc: PyTorch's
 * CUDA caching allocator's rounding on a GPU).
 *
 * The last forward row keeps its input (unless it is a mem row).  When
 * it is the loss (xent, or a softmax standing for it), that input is the model's output (the
 * logits), which the training loop holds until the step ends (H below:
 * `out = model(x)` lives through backward and optimizer.step), so its
 * backward does not free it.  A row counts `repeat` times.  The weights of a network with acc rows
 * (a traced graph: one acc row per weight tensor's gradient) are the
 * elements of its acc rows (a tied weight counts twice), since its
 * embeddings are mem rows.
 *
 * The step (steady state: the optimizer's state exists from the end of
 * the first step on; gradients are freed at the start of each step, as
 * zero_grad(set_to_none=True), PyTorch 2's default): with W G S the
 * network's totals, A(<=i) the saved bytes of rows up to i, G(>=i) the
 * gradients of rows from i on,
 *   forward    max over rows i: W + S + A(<=i) + i's forward workspace
 *   backward   max over rows i (from the last): W + S + A(<=i) + G(>=i)
 *              + workspace of i's backward (+ H where i is before the
 *              last forward row)
 *   optimizer  W + S + G + H + t x the largest row's weights (temporaries of
 *              PyTorch's single-tensor step: t = 2 for adam and adadelta,
 *              1 for the others, 0 for sgd without momentum)
 *   peak       max of the three + the backend's fixed cost
 * A network without training rows (inference) keeps nothing: W + max
 * workspace + fixed.
 *
 * The fixed cost (pn_mem_fixed) is per backend (pn_mem_backend): the CPU
 * value is measured by bench/real-memory (see there); the GPU value is
 * the CUDA context and kernels, a cited figure, not measured by pn.
 * Mixed precision (pn_mem_opts.amp; a network that pn_precision_apply
 * rewrote in amp-fp16 or amp-bf16, precision.h), as PyTorch's autocast
 * with fp32 parameters keeps it: per row with weights, of w weight
 * elements, in a row of element size e (2 when the row runs in half):
 *   weights    4 w (the fp32 master weights)
 *   gradients  4 w (.grad of an fp32 parameter is fp32)
 *   state      pn_opt_states(opt) 4 w (+ 4 w momentum, as above)
 *   saved      + e w when the row runs in half: the weight's half copy
 *              (autocast's cast cache), kept to the row's backward
 *   workspace  backward + e w (the half gradient before its cast)
 * Activations are kept in the precision of the row that keeps them (its
 * e).  A cast row (pn_netrow.cast) of N elements keeps nothing; its
 * forward workspace: a cast of an input, its traffic_bytes (both tensors,
 * (4 + 2) N); of a weight, its output e N (the fp32 side is among the
 * weights), and it leaves the chain of activations alone (the row after
 * it reads the output of the row before).  The loss scaler's state (a few scalars) is
 * not counted.
 *
 * Masters (pn_mem_opts.master, pn-sum --fp32-master; AMP has them
 * already): a row with weights in half (fp16, bf16; e = 2) keeps an fp32
 * master of each weight, which the optimizer steps with fp32 state and
 * narrows into the half weight (pn-time's half train rows): per row of w
 * weight elements
 *   weights    e w + 4 w (the half weights and their masters)
 *   gradients  e w (as the backward writes them)
 *   state      pn_opt_states(opt) 4 w (+ 4 w momentum)
 * Megatron-LM's and DeepSpeed's bf16 training keep an fp32 gradient
 * buffer besides (4 w), which is not counted.
 *
 * Not modelled: the caching allocator's fragmentation and the unused
 * tails of its shared segments, a batch norm's running statistics (2 C x
 * 4 bytes), activation checkpointing. */
#ifndef PN_MEMORY_H
#define PN_MEMORY_H

#include "gpuspec.h"
#include "layer.h"
#include "network.h"

enum { PN_MEM_CPU, PN_MEM_GPU, PN_MEM_NBACKENDS };

/* Fixed cost of a framework's step beyond its tensors, bytes:
 *   CPU  measured: the median over bench/real-memory's development
 *        networks of measured peak less the model, 0.01 MB on 24 cases
 *        (torch 1.13, 2026-11-23): 0.  PyTorch's CPU allocator does not
 *        cache; what the model misses is per network, not fixed
 *   GPU  the CUDA context and PyTorch's kernels, 1343 MB, as Hugging
 *        Face's "Model training anatomy" measured it with nvidia-smi
 *        (https://huggingface.co/docs/transformers/model_memory_anatomy);
 *        the caching allocator's rounding: pn_mem_alloc */
extern const double pn_mem_fixed[PN_MEM_NBACKENDS];

/* The bytes the backend's allocator holds for a tensor of `bytes` bytes:
 * CPU, the bytes (c10's CPU allocator takes what it is asked); GPU,
 * PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
 * and "CUDA semantics: memory management" of PyTorch's documentation):
 * a request is rounded up to a multiple of 512 B (kMinBlockSize), and one
 * of 10 MiB (kMinLargeAlloc) or more gets a segment of its own, rounded up
 * to a multiple of 2 MiB (kRoundLarge), all of which the allocator keeps
 * reserved.  Blocks under 10 MiB share segments of 2 MiB (requests up to
 * 1 MiB) and 20 MiB (the others); the unused tail of the pools' last
 * segments (at most 2 + 20 MiB) and fragmentation are not counted.
 * Non-positive bytes are returned as given. */
double pn_mem_alloc(int backend, double bytes);

/* The backend of a device of the spec table: PN_MEM_CPU when its arch
 * starts with "CPU" (pn-time --cpu-spec), else PN_MEM_GPU. */
int pn_mem_backend(const pn_gpu *g);

typedef struct {
	int backend;     /* PN_MEM_* */
	int optimizer;   /* PN_OPT_* for every row with weights, or -1: each
			    row's own */
	int momentum;    /* sgd and rmsprop keep a momentum buffer */
	int amp;         /* automatic mixed precision (precision.h): fp32
			    masters (see "Mixed precision" above) */
	int master;      /* pn-sum --fp32-master: half rows keep fp32
			    masters and state (see "Masters" above) */
} pn_mem_opts;

/* One row, one instance (bytes). */
typedef struct {
	double weights, grads, state, saved, fwd_work, bwd_work;
	double master;   /* of weights, the fp32 masters' under
			    --fp32-master (else 0): the optimizer's
			    temporaries are their size */
} pn_mem_row;

/* The bytes of layer l (at its batch) of a training row (train: 1) or not;
 * dropout: the row's dropout probability (attention). saved is before the
 * shared-input rule (the caller knows the row before). */
void pn_mem_row_of(const pn_layer *l, int train, double dropout, int opt,
		   const pn_mem_opts *o, pn_mem_row *m);

typedef enum { PN_MEM_AT_FWD, PN_MEM_AT_BWD, PN_MEM_AT_OPT } pn_mem_at;

/* The step at `batch` samples (a traced network: as traced), bytes.
 * fresh: what a training step allocates and frees again every step, by
 * the phase that first touches it: forward, the saved activations (the
 * backward frees them); backward, the gradients (freed at the next
 * step's start); optimizer, the step's temporaries, t x each row's
 * weights, repeats counted (t as for the peak above).  All 0 without
 * training rows.  A framework whose allocator gives part of that memory
 * back to the kernel touches it afresh the next step (framework.h's
 * step.page). */
typedef struct {
	double weights, grads, state, activations, workspace, fixed;
	double peak;
	pn_mem_at at;          /* where the peak is reached */
	double fresh[3];       /* by pn_mem_at */
} pn_mem_step;

/* The memory of the step; rows[] (net->n entries, or NULL) gets each
 * row's bytes, saved after the shared-input rule. */
void pn_mem_step_of(const pn_network *net, double batch,
		    const pn_mem_opts *o, pn_mem_step *s, pn_mem_row *rows);

/* The largest batch (1 .. 2^53) whose peak is at most `bytes`; 0 when not
 * even batch 1 fits.  A traced network cannot be rescaled: the caller
 * must not ask (PN_BUG). */
double pn_mem_max_batch(const pn_network *net, const pn_mem_opts *o,
			double bytes);

#endif
