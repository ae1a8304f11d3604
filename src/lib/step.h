/* step.h - a training step as the ops a framework runs: a `train` row of a
 * network (network.h; forward, backward and optimizer of one layer) split
 * into parts, each a layer row of a kind that per-op data measures (pass
 * fwd, optimizer none: NeuSight's per-op rows, pn-time's forward rows),
 * so that a model fitted on forward ops can predict a training step.
 * pn-sum(1) ("TRAINING STEPS") gives these rules to users.
 *
 * The parts of a train row of layer l at its batch (B batch, S seq_len,
 * e element size; every part at l's precision; bias 0 and activation none
 * on every GEMM part; an elementwise part with batch, seq_len and dim as
 * given, 1 where not said):
 *
 *   forward     l itself, pass fwd, optimizer none (phase fwd)
 *   backward    (phase bwd), per type:
 *     dense (B, I, O)   input-grad  dense (B, O, I) (none with input_grad 0,
 *                         layer.h: the input needs no gradient)
 *                       weight-grad dense (O, B, I): the transposed
 *                         shapes NeuSight's traced graphs give a Linear's
 *                         backward, Linear(rows, O, I) and Linear(O, rows,
 *                         I)
 *                       bias-grad   (bias 1) elementwise add (B, 1, O)
 *                         with traffic e (B O + O): a reduction over rows
 *                       act-grad    (an activation) elementwise op of the
 *                         activation (B, 1, O), traffic 3 B O e (reads the
 *                         gradient and the output, writes the gradient)
 *     bmm (B, m, n, k)  grad-a bmm (B, m, k, n), grad-b bmm (B, n, m, k)
 *                         (NeuSight's graphs trace the same two)
 *     conv2d            as the GEMMs of its implicit-GEMM form (P = B
 *                         OH OH output pixels, K = C k k): data-grad dense
 *                         (P, O, K) (none with input_grad 0), weight-grad dense (O, P, K); bias-grad
 *                         elementwise add (P, 1, O), traffic e (P O + O);
 *                         act-grad as dense's over P O.  The col2im of
 *                         the data gradient is not counted
 *     attention         the backward of its ops (d = E / h): out-proj
 *                         dense (BS, E, E) and (E, BS, E) + bias-grad
 *                         (BS, 1, E); context bmm (Bh, S, S, d): bmm (Bh,
 *                         S, d, S) and (Bh, S, S, d); with a dropout
 *                         rate, dropout.input-grad elementwise dropout
 *                         (Bh, S, S) at the rate; softmax (BhS, 1, S);
 *                         scores bmm (Bh, S, d, S): bmm (Bh, S, S, d) and
 *                         (Bh, d, S, S); in-proj dense (BS, E, 3E): dense
 *                         (BS, 3E, E) and (3E, BS, E) + bias-grad (BS, 1,
 *                         3E).  The scaling is not counted
 *     embedding         grad-zero mem of V E elements (PyTorch's dense
 *                         embedding backward zero-fills the table's
 *                         gradient), scatter-add elementwise add (B, S, E)
 *                         with traffic 3 B S E e
 *     layernorm         input-grad and weight-grad: the row twice
 *                         (PyTorch's CUDA layer_norm backward runs two
 *                         kernels over the input: the input's gradient,
 *                         then gamma's and beta's)
 *     batchnorm         the same: the row twice
 *     softmax, elementwise, pool, mem
 *                       input-grad: the row once (NeuSight's graphs trace
 *                         VECsoftmax, VECgelu, VECrelu, VECmulu ... bwd as
 *                         one op of the forward's kind and shape)
 *     posenc            weight-grad elementwise add (B, S, E), traffic
 *                         e (B S E + S E): a reduction over the batch
 *     xent              the forward too is its ops, so that a model set
 *                         without the loss predicts it: log-softmax
 *                         softmax (B, S, D) and nll mem of 2 B S elements
 *                         (the gather); backward nll.grad mem of B S D
 *                         elements (the likelihood's gradient, zero-filled
 *                         and scattered) and log-softmax.input-grad
 *                         softmax (B, S, D)
 *     rnn lstm gru      not split (pn_step_splits is 0): the row stays
 *                         whole
 *   optimizer   (phase opt) the row's share of the optimizer step
 *               (pn_step_optimizer below) over its weights
 *               (pn_step_weights); none with no weights or optimizer none.
 *
 * The optimizer step runs over every weight of the network at once, as
 * PyTorch's multi-tensor (foreach) optimizers do: each pass is one kernel
 * over the lists of every weight tensor of one precision (its
 * multi_tensor_apply), so a pass over N elements, the network's weights
 * of that optimizer and precision (repeats counted), costs about what one
 * flat pass over N costs, not the sum of as many launches as tensors.  A
 * row of n weight elements takes the share n / N of each pass (the part's
 * count).  The passes are those of torch/optim's _multi_tensor_<name>
 * functions (torch 1.13, the foreach path, PyTorch's default on CUDA;
 * weight decay 0), each an elementwise row (ceil(N / PN_STEP_ROW), 1,
 * min(N, PN_STEP_ROW)) of the op below with traffic t N e (t weight-sized
 * tensors read and written).  A pass is flat: its time depends on N, not on a
 * shape, and rows of 2048 keep the shape within NeuSight's sampled range
 * where (1, 1, N), the shape of a traced graph's acc rows, has a dim far
 * beyond it (at most 16384 sampled):
 *   sgd       add_(w, g)                                          add 3
 *   sgd with momentum: mul_(buf) mulu 2, add_(buf, g) add 3, add_(w, buf)
 *             add 3
 *   adam      mul_(m) mulu 2, add_(m, g) add 3, mul_(v) mulu 2,
 *             addcmul_(v, g, g) mul 3, sqrt(v) powu 2, div_ divu 2,
 *             add(eps) addu 2, addcdiv_(w, m, denom) div 4 (AdamW adds
 *             one mulu 2 on w: not an optimizer of layer.h)
 *   rmsprop   mul_(sq) mulu 2, addcmul_ mul 3, sqrt powu 2, add_(eps)
 *             addu 2, addcdiv_(w, g, avg) div 4; with momentum the last
 *             is mul_(buf) mulu 2, addcdiv_(buf, g, avg) div 4, add_(w,
 *             buf) add 3
 *   adagrad   addcmul_(sum, g, g) mul 3, sqrt powu 2, add(eps) addu 2,
 *             mul(g, clr) mulu 2, div div 3, add_(w, .) add 3
 *   adadelta  mul_(sq) mulu 2, addcmul_ mul 3, add(eps) addu 2, sqrt_
 *             powu 2, add(acc, eps) addu 2, sqrt_ powu 2, div_ div 3,
 *             mul_(g) mul 3, add_(w) add 3, mul_(acc) mulu 2, addcmul_
 *             mul 3
 * (momentum: SGD's and RMSprop's buffer, pn-sum --momentum.)
 */
#ifndef PN_STEP_H
#define PN_STEP_H

#include "layer.h"
#include "network.h"

/* The phase of an optimizer part, after network.h's PN_PH_*: a summary
 * holds PN_STEP_NPHASES sums. */
enum { PN_STEP_OPT = PN_NPHASES, PN_STEP_NPHASES };

/* The row length of an optimizer pass (elements). */
#define PN_STEP_ROW 2048.0

/* The most parts pn_step_parts and pn_step_optimizer return. */
enum { PN_STEP_MAX = 40 };

/* One part of a step. */
typedef struct {
	const char *what;   /* "forward", "input-grad", ... or the optimizer
			       pass ("adam.addcdiv_") */
	int phase;          /* PN_PH_FWD, PN_PH_BWD or PN_STEP_OPT */
	pn_layer l;         /* pass fwd, optimizer none, l's precision */
	double traffic;     /* bytes, or 0: pn_layer_work's estimate */
	double count;       /* how many times it runs (1) */
} pn_step_part;

/* 1 when a train row of type t splits into parts, 0 when it stays whole
 * (rnn lstm gru). */
int pn_step_splits(pn_layer_type t);

/* The parts of a train row of layer l (at its batch) into p[0..], with
 * its share of the optimizer step by optimizer opt (PN_OPT_*) and
 * momentum (sgd, rmsprop): weights of the all elements of precision wprec
 * that the step updates (the row's pn_step_weights, the sum of every
 * row's; under mixed precision the fp32 masters); returns their count, 0
 * when t does not split. */
int pn_step_parts(const pn_layer *l, int opt, int momentum, double weights,
		  double all, pn_prec wprec, pn_step_part *p);

/* The product that a train row of layer l skips when its input needs no
 * gradient (l->no_input_grad, layer.h's input_grad 0), as one part into
 * *p (phase bwd, count 1); returns 1, or 0 when l skips none (a fwd row,
 * input_grad 1, a type that does not take it):
 *   dense (B, I, O)   input-grad  dense (B, O, I), as in the backward above
 *   conv2d (B, C, O, k, X, s, p; output side Y)
 *                     data-grad   conv2d (B, O, C, k, Y, 1, floor(k / 2)),
 *                       no bias or activation: the backward-data of a
 *                       convolution is the transposed convolution of the
 *                       output's gradient, O channels in and C out over
 *                       Y x Y pixels, the forward's FLOPs (B C O k^2 Y^2
 *                       MACs whatever the stride; an even kernel's
 *                       output is Y + 1 a side), which the
 *                       conv2d model predicts; the implicit GEMM's dense
 *                       misses oneDNN's cost for few channels (a first
 *                       conv's 1 or 3), and the forward conv itself more
 * pn-sum subtracts it from a train row predicted whole (rule whole-dx);
 * a decomposed row simply has no input-grad (data-grad) part. */
int pn_step_input_grad(const pn_layer *l, pn_step_part *p);

/* The parts of a train row of an rnn, lstm or gru layer l as a framework
 * that runs the recurrence op by op runs it (PyTorch 1.13 on the CPU:
 * aten's lstm, gru and rnn_tanh call the cell once a time step, as the
 * profiler shows; not oneDNN's fused RNN primitive that pn-time times),
 * with the optimizer's share as pn_step_parts gives it; 0 for another
 * type.  B batch, S seq_len, H hidden, g gates (lstm 4, gru 3, rnn 1), D
 * directions, L layers; each layer and direction (input width I for the
 * first layer, D H above it):
 *   input-proj       dense (SB, I, gH) with bias, once: the input's
 *                      projection over every time step in one GEMM
 *   hidden-proj      dense (B, H, gH) with bias (addmm), every step
 *   gates-add        elementwise add (B, 1, gH), every step
 *   cell             the cell's pointwise ops on (B, 1, H) every step:
 *                      lstm sigmoid 3, tanh 2, mul 3, add 1; gru
 *                      sigmoid 2, tanh 1, mul 2, add 2, sub 1; rnn its
 *                      activation (tanh by default) once
 *   cell-grad        elementwise mul (B, 1, H), every step: one per
 *                      activation, two per mul (lstm 11, gru 7, rnn 1)
 *   hidden-proj.input-grad   dense (B, gH, H), every step
 *   hidden-proj.weight-grad  dense (gH, B, H), every step
 *   hidden-proj.weight-acc   elementwise add of gH H elements, every step
 *                      but one: autograd sums the per-step weight
 *                      gradients; a flat pass as the optimizer's (rows
 *                      of PN_STEP_ROW, traffic 3 gH H e), which per-op
 *                      data sample where (gH, 1, H) has gH rows beyond
 *                      them
 *   hidden-proj.bias-grad    reduction (B, 1, gH), every step
 *   input-proj.input-grad, .weight-grad, .bias-grad  dense (SB, gH, I),
 *                      dense (gH, SB, I), reduction (SB, 1, gH), once
 * (a part's count is how many times it runs over the row).  pn-sum uses
 * them when its framework profile has the type's per-step costs
 * (framework.h: such a framework runs the recurrence op by op). */
int pn_step_cell_parts(const pn_layer *l, int opt, int momentum,
		       double weights, double all, pn_prec wprec,
		       pn_step_part *p);

/* The weight elements of layer l: pn_layer_work's cm_weights / e on types
 * with weights (memory.h's W), else 0. */
double pn_step_weights(const pn_layer *l);

/* The optimizer step (table above) of opt over n elements of precision
 * prec into p[0..], each pass's count share (1: the whole step; a row's
 * n_row / n); returns the count of passes (0: optimizer none or n 0). */
int pn_step_optimizer(int opt, int momentum, double n, pn_prec prec,
		      double share, pn_step_part *p);

#endif
