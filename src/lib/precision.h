/* precision.h - the precision a network trains in: pn-sum --precision
 * rewrites every row of a network (network.h) in one of six modes, and
 * adds the casts that mixed precision runs.  The rules live here only;
 * pn-sum(1) gives them to users.
 *
 * Modes (pn_pmode_names):
 *   fp32 fp16 bf16  every row in that precision (a model converted with
 *                   .half() or .bfloat16(): weights, gradients and state
 *                   in it too); no casts
 *   tf32            the GEMM-like rows (roofline.h's pn_unit_matrix:
 *                   dense bmm conv2d attention rnn lstm gru) in tf32, the
 *                   others fp32: TF32 runs on tensor cores and frameworks
 *                   use it for matrix products and convolutions only
 *                   (torch.backends.cuda.matmul.allow_tf32)
 *   amp-fp16 amp-bf16  automatic mixed precision with fp32 master weights,
 *                   as PyTorch's torch.autocast on CUDA runs it
 *                   (https://pytorch.org/docs/stable/amp.html, "Autocast
 *                   Op Reference"); the half type h is fp16 or bf16:
 *
 *   row                                   precision  rule
 *   dense bmm conv2d attention rnn lstm   h          autocast-half: on
 *     gru, forward                                   the list that
 *                                                    autocasts to h
 *                                                    (linear, matmul,
 *                                                    bmm, conv2d, the
 *                                                    RNN cells)
 *   layernorm softmax xent; elementw. exp fp32       autocast-fp32: on
 *     pow powu                                       the list that
 *                                                    autocasts to fp32
 *                                                    (layer_norm,
 *                                                    softmax, exp, pow;
 *                                                    the losses)
 *   embedding posenc                      fp32       fp32-weights: on no
 *                                                    list, they read an
 *                                                    fp32 table
 *   elementwise add sub mul div (binary)  fp32       promote: their
 *                                                    second input (a
 *                                                    residual, a mask) is
 *                                                    taken as fp32 and
 *                                                    the widest type wins
 *   other elementwise (unary, ...u with   the input  follow: ops on no
 *     a scalar), mem                                 list run in their
 *                                                    input's type: the
 *                                                    precision of the
 *                                                    forward row before
 *                                                    (fp32 for the first)
 *   bwd rows                              as its     backward: a backward
 *                                         forward    op runs in the type
 *                                                    its forward ran in;
 *                                                    the forward row is
 *                                                    the last fwd row
 *                                                    above of the same
 *                                                    name (none: the
 *                                                    forward rules)
 *   acc rows                              fp32       fp32-grads: the
 *                                                    gradients of fp32
 *                                                    parameters are fp32
 *
 * Rows of phase train (a whole step of one layer) follow the forward
 * rules.  In the plain modes the rule is the mode's name.
 *
 * Casts (AMP only), each a `mem` row named "amp.cast:ROW" after the row
 * ROW that needs it, phase fwd (and a bwd twin for the gradient's way
 * back when the network trains), repeat as ROW's, with N elements read in
 * one precision and written in the other: elements 2N (mem: read plus
 * written), traffic_bytes (4 + 2) N, precision h:
 *   cast-weight       before each forward row of h with weights (types
 *                     with weights): N its weight elements; autocast
 *                     casts each fp32 weight once per forward (its cast
 *                     cache).  Not scaled by the batch.  Its bwd twin,
 *                     cast-weight-grad, after the row: the h gradient of
 *                     the weight cast to the fp32 .grad
 *   cast-input        before an autocast-half row whose input (the
 *                     forward row before) is fp32, or an autocast-fp32
 *                     row whose input is h: N the row's input elements
 *                     (bmm: its first operand); twin cast-input-grad
 * A row's input is the output of the forward row before it: a row that
 * reads a tensor from further above (attention's key and value
 * projections) gets no cast, though autocast casts it again for each.
 * Every other row gets rule and precision only.  A row's traffic_bytes is
 * scaled by the ratio of its new element size to its old. */
#ifndef PN_PRECISION_H
#define PN_PRECISION_H

#include "layer.h"
#include "network.h"

enum { PN_PM_FP32, PN_PM_TF32, PN_PM_FP16, PN_PM_BF16, PN_PM_AMP_FP16,
       PN_PM_AMP_BF16, PN_NPMODES };

/* "fp32" "tf32" "fp16" "bf16" "amp-fp16" "amp-bf16", NULL-terminated. */
extern const char *const pn_pmode_names[PN_NPMODES + 1];

/* The half type of an AMP mode (PN_FP16, PN_BF16), or -1 for a plain
 * mode. */
int pn_pmode_amp(int mode);

/* The precision a GEMM-like row runs in under mode. */
pn_prec pn_pmode_gemm(int mode);

/* Rewrite net in mode: every row's precision (pn_netrow.prec and its
 * pn_layer), its precision and traffic_bytes fields and its rule; the
 * casts inserted (pn_netrow.cast).  The network gains the columns it
 * lacks of precision, elements, traffic_bytes and precision_rule (NA
 * where they do not apply).  Never fails. */
void pn_precision_apply(pn_network *net, int mode);

#endif
