#!/usr/bin/env python3
"""bench/framework_cpu.py - the fixed costs of a framework's training step
on one CPU thread (PyTorch), the profile that pn-sum --framework reads
(src/lib/framework.h has the names and how pn-sum counts them;
samples/frameworks/ ships the result).

  framework_cpu.py [--only NAME,...] [OUT.tsv]   (default: standard output)

--only measures the named layer rows alone (e.g. --only xent), to add
a layer type to a shipped profile without measuring the rest again
(--only page: page.fault and step.page; --only element: the
optimizers' opt.NAME.element rows).

Every cost is a thread CPU time (time.thread_time_ns: other processes do
not count) on 1-element tensors, so that the kernels' own work is ~0 and
what is left is what the framework pays: the dispatcher, autograd's
nodes, the Python module call.  Medians over ROUNDS (15) rounds of REPS
(300) calls.  The rows (cost, us, what):

  TYPE[.OP].fwd/.bwd  the forward and the backward of the smallest module
                 of each pn layer type (Linear(1, 1), Conv2d(1, 1, 1), ...
                 one per elementwise op and pool kind), less those of the
                 loss alone (x.sum() and its backward's start; xent, the
                 loss itself, is not summed again); rnn, lstm,
                 gru: of 1 layer and 1 time step, less one step
  TYPE.fwd.step/.bwd.step  rnn lstm gru: per layer and time step, the
                 slope from (1 layer, 1 step) to (2 layers, 17 steps)
  step           once a step: the optimizer's step() and zero_grad (the
                 intercept of the per-tensor slope, SGD) and backward()'s
                 start (a 1-node backward less its forward)
  opt.NAME[.momentum]  the optimizer step per parameter tensor: the slope
                 over 8 to 72 tensors of 1 element (torch 1.13 on the CPU
                 takes the single-tensor path: foreach is False)
  opt.NAME[.momentum].element  per weight element: the slope between one
                 tensor of 2^20 and of 2^22 elements, in a child process
                 whose malloc keeps freed pages (KEEP below: step.page
                 charges a step's fresh pages, the optimizer's
                 temporaries among them)
  op.fwd, op.bwd  one forward op that autograd records, one backward node
                 (a chain of 8 to 72 muls): for reference, not read by pn
  page.fault     touching a 4 KiB page afresh (the kernel's fault and its
                 zeroing): filling a new 64 MiB tensor, less filling a kept
                 one, per page (64 MiB is above glibc's largest mmap
                 threshold, 32 MiB: every new one is mapped anew); for
                 reference, not read by pn
  step.page      per 4 KiB page of the memory a step allocates and frees
                 again (src/lib/memory.h's fresh): RELEASED (0.4), the
                 share of it that glibc's malloc, under PyTorch's CPU
                 allocator, gives back to the kernel each step, times
                 page.fault.  RELEASED is not measured here: it was chosen
                 on bench/real-steps' development networks (2026-11-28;
                 bench/real-steps says how); --only page measures these two

Python is used in bench/ only (Debian's python3-torch).  The machine,
versions, date and load go to standard error.
"""
import os
import platform
import statistics
import subprocess
import sys
import time

# One thread means one: torch.set_num_threads(1) sets OpenMP's threads, not
# those of the BLAS that Debian's torch runs addmm and mm on (OpenBLAS,
# pthreads: as many as there are cores), whose workers' time the
# calling thread's CPU clock does not count.  Set before torch loads it.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.set_num_interop_threads(1)
ROUNDS, REPS, N1, N2 = 15, 300, 8, 72


def clock(f, reps):
    f()
    t0 = time.thread_time_ns()
    for _ in range(reps):
        f()
    return (time.thread_time_ns() - t0) / reps / 1e3      # us


def slope(make):
    """Median over ROUNDS of (time(N2) - time(N1)) / (N2 - N1) and the
    intercept time(N1) - N1 slope, us; make(n) gives the timed callable."""
    f1, f2 = make(N1), make(N2)
    s, c = [], []
    for _ in range(ROUNDS):
        t1, t2 = clock(f1, REPS), clock(f2, REPS)
        s.append((t2 - t1) / (N2 - N1))
        c.append(t1 - N1 * s[-1])
    return statistics.median(s), statistics.median(c)


def fwd_ops(n):
    a = torch.ones(1, requires_grad=True)
    b = torch.ones(1)

    def f():
        x = a
        for _ in range(n):
            x = x * b
    return f


def bwd_nodes(n):
    a = torch.ones(1, requires_grad=True)
    b = torch.ones(1)
    state = {}

    def build():
        x = a
        for _ in range(n):
            x = x * b
        state["y"] = x.sum()

    def f():
        build()
        state["y"].backward()
    return build, f


def bwd_slope():
    """Backward only: (forward + backward) - forward, per node."""
    b1, f1 = bwd_nodes(N1)
    b2, f2 = bwd_nodes(N2)
    s = []
    for _ in range(ROUNDS):
        full = (clock(f2, REPS) - clock(f1, REPS)) / (N2 - N1)
        fwd = (clock(b2, REPS) - clock(b1, REPS)) / (N2 - N1)
        s.append(full - fwd)
    return statistics.median(s)


def optimizer(name):
    def make(n):
        ps = [torch.zeros(1, requires_grad=True) for _ in range(n)]
        o = (torch.optim.Adam(ps, lr=1e-3) if name == "adam" else
             torch.optim.SGD(ps, lr=0.01, momentum=0.9 if name == "sgd_momentum" else 0))
        g = torch.ones(1)

        def f():
            o.zero_grad(set_to_none=True)
            for p in ps:
                p.grad = g
            o.step()
        return f

    def grads(n):
        ps = [torch.zeros(1, requires_grad=True) for _ in range(n)]
        g = torch.ones(1)

        def f():
            for p in ps:
                p.grad = g
        return f
    s, c = slope(make)
    gs, gc = slope(grads)               # the test's own grad assignment
    return s - gs, c - gc


ELEMENTS = (1 << 20, 1 << 22)

# glibc's malloc told to keep what is freed: blocks up to 32 MiB (its
# largest mmap threshold) from the heap, which is never trimmed.  The
# element rows are measured in a child process under it (the variables
# are read when the process starts), so that an optimizer's temporaries
# (Adam's sqrt and quotient, two weight-sized tensors a step) reuse their
# pages: pn-sum charges a step's fresh pages once, by step.page, and the
# temporaries are among them (memory.h's fresh).  Without it each step
# faulted them in anew: Adam's slope was 8.7 ns a weight, 4.2 with them
# kept (Intel Xeon VM, 2026-11-30; 4082 and 228 faults a step).
KEEP = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20),
        "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}
OPTIMIZERS = ("sgd", "sgd_momentum", "adam")


def optimizer_elements(name):
    """The optimizer step per weight element, us: the slope between one
    tensor of ELEMENTS[0] and of ELEMENTS[1] elements (4 and 16 MB: beyond
    the caches, as a network's weights are); run under KEEP."""
    def make(n):
        p = torch.zeros(n, requires_grad=True)
        o = (torch.optim.Adam([p], lr=1e-3) if name == "adam" else
             torch.optim.SGD([p], lr=0.01, momentum=0.9 if name == "sgd_momentum" else 0))
        g = torch.ones(n)

        def f():
            p.grad = g
            o.step()
        return f
    f1, f2 = make(ELEMENTS[0]), make(ELEMENTS[1])
    reps = 5
    return statistics.median((clock(f2, reps) - clock(f1, reps)) /
                             (ELEMENTS[1] - ELEMENTS[0]) for _ in range(ROUNDS))


def element_rows():
    """opt.NAME.element of every optimizer, measured in a child process
    under KEEP (this script again, --only element)."""
    if all(os.environ.get(k) == v for k, v in KEEP.items()):
        return [("opt.%s.element" % n.replace("_", "."),
                 optimizer_elements(n), "per weight element, freed pages "
                 "kept (step.page charges fresh ones)") for n in OPTIMIZERS]
    child = subprocess.run([sys.executable, os.path.abspath(__file__),
                            "--only", "element"], env=dict(os.environ, **KEEP),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    if child.returncode != 0:           # its stderr: only on failure
        sys.exit("framework_cpu.py: measuring the element rows failed:\n" +
                 child.stderr)
    return [(k, float(v), w) for k, v, w in
            (l.split("\t") for l in child.stdout.splitlines()[1:])]


def engine_start():
    """backward() of a 1-node graph minus its forward: what every
    backward pays once beyond its nodes, less one node."""
    a = torch.ones(1, requires_grad=True)

    def fwd():
        return (a * 2).sum()

    def full():
        fwd().backward()
    return statistics.median(clock(full, REPS) - clock(fwd, REPS)
                             for _ in range(ROUNDS))


class Add(nn.Module):
    def forward(self, a):
        return a + a


def bmm(a):
    return torch.bmm(a, a)


class XEnt(nn.Module):
    """The loss as a training loop calls it: cross-entropy of the logits
    against class targets (class 0 here), mean over the rows."""
    def forward(self, a):
        return nn.functional.cross_entropy(a, torch.zeros(a.shape[0], dtype=torch.long))


# the smallest module of each pn layer type (and elementwise op), on
# 1-element inputs: (cost name, module, input)
LAYERS = [
    ("dense", lambda: nn.Linear(1, 1), (1, 1)),
    ("bmm", lambda: bmm, (1, 1, 1)),
    ("conv2d", lambda: nn.Conv2d(1, 1, 1), (1, 1, 1, 1)),
    ("batchnorm", lambda: nn.BatchNorm2d(1), (2, 1, 1, 1)),
    ("layernorm", lambda: nn.LayerNorm(1), (1, 1)),
    ("softmax", lambda: nn.Softmax(-1), (1, 1)),
    ("pool.max", lambda: nn.MaxPool2d(1), (1, 1, 1, 1)),
    ("pool.avg", lambda: nn.AvgPool2d(1), (1, 1, 1, 1)),
    ("xent", lambda: XEnt(), (1, 2)),
    ("elementwise", lambda: Add(), (1,)),
    ("elementwise.relu", lambda: nn.ReLU(), (1,)),
    ("elementwise.gelu", lambda: nn.GELU(), (1,)),
    ("elementwise.tanh", lambda: nn.Tanh(), (1,)),
    ("elementwise.sigmoid", lambda: nn.Sigmoid(), (1,)),
    ("elementwise.dropout", lambda: nn.Dropout(0.1), (1,)),
    ("embedding", lambda: nn.Embedding(1, 1), None),
    ("attention", lambda: nn.MultiheadAttention(1, 1, batch_first=True), (1, 1, 1)),
    ("rnn", lambda: nn.RNN(1, 1, batch_first=True), (1, 1, 1)),
    ("lstm", lambda: nn.LSTM(1, 1, batch_first=True), (1, 1, 1)),
    ("gru", lambda: nn.GRU(1, 1, batch_first=True), (1, 1, 1)),
]
RNN_STEPS = 17         # the per-step slope: 2 layers x 17 steps against 1 x 1


def fwd_bwd(m, x, attention=False):
    """Forward and backward of module m on x, us, less those of x.sum()
    alone (the loss that starts the backward and the engine's start)."""
    def out():
        y = m(x, x, x, need_weights=False)[0] if attention else m(x)
        y = y[0] if isinstance(y, tuple) else y
        return y if y.dim() == 0 else y.sum()    # a loss is its own

    def full():
        out().backward()

    z = x if x.is_floating_point() else torch.ones(1, requires_grad=True)

    def base():
        return z.sum()

    def base_full():
        base().backward()
    med = lambda f: statistics.median(clock(f, REPS) for _ in range(ROUNDS))
    f, b0 = med(out), med(base)
    return f - b0, med(full) - f - (med(base_full) - b0)


def layer(name, make, shape):
    if shape is None:
        x = torch.zeros(1, 1, dtype=torch.long)
    else:
        x = torch.ones(*shape, requires_grad=True)
    m = make()
    return fwd_bwd(m, x, name == "attention")


def rnn_step(name):
    """Per layer and time step of a recurrent module, us: 2 layers of
    RNN_STEPS steps against 1 layer of 1 step."""
    kind = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[name]
    f1, b1 = fwd_bwd(kind(1, 1, 1, batch_first=True),
                     torch.ones(1, 1, 1, requires_grad=True))
    f2, b2 = fwd_bwd(kind(1, 1, 2, batch_first=True),
                     torch.ones(1, RNN_STEPS, 1, requires_grad=True))
    n = 2 * RNN_STEPS - 1
    return (f2 - f1) / n, (b2 - b1) / n


# the share of a step's fresh memory that glibc gives back to the kernel
# each step (chosen on bench/real-steps' development networks, see above)
RELEASED = 0.4


def page_fault():
    """us to touch a 4 KiB page afresh (see page.fault above)."""
    n = 16 << 20                       # floats: 64 MiB
    kept = torch.empty(n)
    kept.fill_(1)
    pages = n * 4 / 4096

    def fresh():
        torch.empty(n).fill_(1)

    def again():
        kept.fill_(1)
    return statistics.median(clock(fresh, 5) - clock(again, 5)
                             for _ in range(ROUNDS)) / pages


def page_rows():
    pf = page_fault()
    return [("page.fault", pf, "touching a 4 KiB page afresh: a new 64 MiB "
             "tensor's fill less a kept one's, per page (not used by pn-sum)"),
            ("step.page", RELEASED * pf, "per 4 KiB page of a step's fresh "
             "memory: the share glibc gives back to the kernel each step "
             "(%.2g, chosen on bench/real-steps' development networks) x "
             "page.fault" % RELEASED)]


def main(argv):
    only = None
    if argv[:1] == ["--only"] and len(argv) > 1:
        only = argv[1].split(",")
        argv = argv[2:]
        unknown = set(only) - {n for n, _, _ in LAYERS} - {"page", "element"}
        if unknown:
            sys.exit("framework_cpu.py: no layer %s" % ", ".join(sorted(unknown)))
    out = open(argv[0], "w") if argv else sys.stdout
    if only:
        rows = layer_rows([l for l in LAYERS if l[0] in only])
        if "page" in only:
            rows += page_rows()
        if "element" in only:
            rows += element_rows()
        print("cost\tus\twhat", file=out)
        for k, v, w in rows:
            print("%s\t%.4g\t%s" % (k, v, w), file=out)
        about()
        return
    op, _ = slope(fwd_ops)
    node = bwd_slope()
    rows = [("op.fwd", op, "a forward op that autograd records (not used by pn-sum)"),
            ("op.bwd", node, "a backward node of one kernel (not used by pn-sum)")]
    sgd = optimizer("sgd")
    rows.append(("step", sgd[1] + engine_start(),
                 "once a step: optimizer.step(), backward()'s start, zero_grad"))
    rows.append(("opt.sgd", sgd[0], "per parameter tensor: SGD"))
    rows.append(("opt.sgd.momentum", optimizer("sgd_momentum")[0],
                 "per parameter tensor: SGD, momentum 0.9"))
    rows.append(("opt.adam", optimizer("adam")[0], "per parameter tensor: Adam"))
    rows += element_rows()
    rows += layer_rows(LAYERS)
    rows += page_rows()
    print("cost\tus\twhat", file=out)
    for k, v, w in rows:
        print("%s\t%.4g\t%s" % (k, v, w), file=out)
    about()


def layer_rows(layers):
    rows = []
    for name, make, shape in layers:
        f, b = layer(name, make, shape)
        if name in ("rnn", "lstm", "gru"):
            fs, bs = rnn_step(name)
            f, b = f - fs, b - bs
            rows.append((name + ".fwd.step", fs, "per layer and time step, forward"))
            rows.append((name + ".bwd.step", bs, "per layer and time step, backward"))
        rows.append((name + ".fwd", f, "the smallest module's forward"))
        rows.append((name + ".bwd", b, "the smallest module's backward"))
    return rows


def about():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    print("bench/framework_cpu.py: torch %s (single-tensor optimizers), one "
          "CPU thread; %s, kernel %s; %s UTC; load average at the end %s" %
          (torch.__version__, cpu, platform.release(),
           time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
           open("/proc/loadavg").read().split()[0]), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
