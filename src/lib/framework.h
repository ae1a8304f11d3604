/* framework.h - a framework's fixed costs: what a real framework (PyTorch
 * on the CPU) pays per op beyond its kernels' work, as measured data, and
 * how many of those costs a row of a network (network.h) stands for.
 * pn-sum --framework adds them to each row's predicted time; pn-sum(1)
 * ("FRAMEWORK OVERHEAD") gives these rules to users.
 *
 * A profile is a TSV (tsv.h) with the columns
 *
 *   cost   the cost's name (below); every name once
 *   us     its time, microseconds, >= 0
 *
 * and any others (what: a note), which are ignored.  bench/framework_cpu.py
 * measures one; samples/frameworks/ ships them, with the machine, versions
 * and how to re-measure in its README.  The names:
 *
 *   step               once per training step (a network with a train or
 *                      bwd row): optimizer.step()'s call, backward()'s
 *                      start, zero_grad
 *   step.page          optional: per 4 KiB page of the memory a training
 *                      step allocates and frees again (memory.h's fresh:
 *                      saved activations, gradients, the optimizer's
 *                      temporaries), the part of it the allocator gives
 *                      back to the kernel each step times the cost of
 *                      touching a page afresh (a page fault and its
 *                      zeroing); added to the phase that first touches
 *                      the memory
 *   opt.NAME           per parameter tensor of the optimizer NAME (pn's
 *                      optimizer names: sgd, adam, ...) in a step
 *   opt.NAME.element   per weight element: the framework's update itself
 *                      (PyTorch 1.13's single-tensor Adam runs ~10 passes
 *                      over each weight-sized tensor where pn-time's
 *                      fused loop runs one), its temporaries' pages kept
 *                      from step to step: step.page charges the pages a
 *                      step faults in
 *   opt.NAME.momentum opt.NAME.momentum.element  the same with pn-sum
 *                      --momentum (sgd, rmsprop)
 *   TYPE.fwd TYPE.bwd  the forward and backward of one row of layer type
 *                      TYPE (layer.h's names) beyond its kernels: what the
 *                      smallest module of the type costs
 *   TYPE.OP.fwd TYPE.OP.bwd  of a row whose op is OP (an elementwise op,
 *                      pool's max or avg), before TYPE.fwd and TYPE.bwd;
 *                      a mem row (a copy, AMP's casts) of a profile
 *                      without mem.fwd and mem.bwd takes elementwise's
 *   TYPE.fwd.step TYPE.bwd.step  rnn lstm gru: per layer, direction and
 *                      time step (PyTorch's CPU recurrences run the cell's
 *                      ops once a time step), besides TYPE.fwd and
 *                      TYPE.bwd once per row.  A profile with TYPE.fwd.step
 *                      says its framework runs TYPE's recurrence op by op:
 *                      pn-sum then predicts TYPE's train rows as those ops
 *                      (step.h's pn_step_cell_parts)
 *
 * The overhead of one instance of a row (pn_framework_row), by phase:
 *   fwd    TYPE[.OP].fwd, + layers x (1 + bidirectional) x seq_len x
 *          TYPE.fwd.step (rnn lstm gru), + elementwise.ACT.fwd for a dense
 *          or conv2d row with an activation (relu tanh sigmoid)
 *   bwd    the same with .bwd
 *   opt    tensors x opt.NAME[.momentum] + weights x
 *          opt.NAME[.momentum].element (the row's optimizer; weights:
 *          step.h's pn_step_weights, its elements), where
 *          tensors, the row's parameter tensors as PyTorch's modules hold
 *          them, is: dense conv2d 1 + bias; attention 2 + 2 bias (in and
 *          out projections); embedding posenc 1; layernorm batchnorm 2;
 *          rnn lstm gru layers x (1 + bidirectional) x (2 + 2 bias);
 *          0 for other types and for optimizer none
 * A row of phase fwd has the fwd overhead; bwd the bwd; train fwd + bwd +
 * opt; acc (a traced graph's accumulation) none.  The row's batch does
 * not count: the costs are fixed per op (and per weight element).  A
 * whole train row's model (pn-time's step) has pn's own fused update in
 * it too, which the element cost then counts a second time: a few
 * percent of the framework's update for Adam (one pass of pn's against
 * ~10 of PyTorch's).
 */
#ifndef PN_FRAMEWORK_H
#define PN_FRAMEWORK_H

#include "layer.h"

typedef struct pn_framework pn_framework;

/* Read the profile at path ("-": standard input).  Dies (exit 1) with
 * tsv.h's errors and "file:line: column 'cost': 'x' is repeated",
 * "file:line: column 'us': '-1' is too small (at least 0)",
 * "file:line: column 'cost': empty name", "file: no costs". */
pn_framework *pn_framework_load(const char *path);
void pn_framework_free(pn_framework *fw);
const char *pn_framework_path(const pn_framework *fw);

/* The cost called name, us, or -1 when the profile has none. */
double pn_framework_cost(const pn_framework *fw, const char *name);

/* The overhead of one instance of layer l in phase (network.h's PN_PH_*)
 * by the rules above into ms[0..3) (fwd, bwd, opt; ms), momentum 1 with
 * pn-sum --momentum.  Returns NULL, or the name of the first cost that
 * the row needs and the profile lacks (static storage, valid until the
 * next call); ms is then untouched. */
const char *pn_framework_row(const pn_framework *fw, const pn_layer *l,
			     int phase, int momentum, double ms[3]);

#endif
