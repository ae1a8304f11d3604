#!/usr/bin/env python3
"""bench/real_steps.py - whole PyTorch training steps on one CPU thread,
the ground truth that bench/real-steps puts beside pn-sum.

  real_steps.py list                      the cases, one per line
  real_steps.py network CASE OUT.tsv      the case's pn network (one sample)
  real_steps.py measure CASE OUTDIR       time the case's training step
                                          (in PROCESSES fresh processes,
                                          default 1: their medians' median)
  real_steps.py memory CASE OUT.json      the peak memory of its step
  real_steps.py recorded TSV CASE OUTDIR  the case's row of a measured.tsv
                                          (bench/results/) as OUTDIR/CASE.json

A case is NETWORK-bBATCH-OPTIMIZER (mlp-b32-adam).  A training step is
what a framework runs: optimizer.zero_grad(set_to_none=True), forward,
loss (cross-entropy), backward, optimizer.step().  `measure` times WARMUP
steps untimed, then STEPS steps, each by the CPU time of the calling
thread (time.thread_time_ns: other processes on the machine do not count)
and by the wall clock, and writes OUTDIR/CASE.json: median, mean, CV and
every step's time; the peak memory of one step (see peak_memory); and where
the step's time goes per aten op and per pn layer type (profile()).

`network` writes the same model as a pn network (the format of
src/lib/network.h, phase train, the case's optimizer on rows with
weights): forward hooks on the model's leaf modules record every layer's
type and shape as PyTorch runs it, so the network is the model, not a
second description of it.  Rows carry one sample; pn-sum --batch scales.

Python is used in bench/ only (Debian's python3-torch); never in pn.
"""
import json
import os
import resource
import statistics
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

WARMUP = int(os.environ.get("WARMUP", "5"))
STEPS = int(os.environ.get("STEPS", "20"))


class Add(nn.Module):
    """a + b as a module, so that hooks see residual adds."""

    def forward(self, a, b):
        return a + b


class Block(nn.Module):
    """A post-norm transformer block made of leaf modules only (torch's
    TransformerEncoderLayer calls its activation as a function, which no
    hook sees)."""

    def __init__(self, d, heads, ff, causal):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1,
                                          batch_first=True)
        self.drop1, self.add1, self.norm1 = nn.Dropout(0.1), Add(), nn.LayerNorm(d)
        self.ff1, self.act, self.ff2 = nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d)
        self.drop2, self.add2, self.norm2 = nn.Dropout(0.1), Add(), nn.LayerNorm(d)
        self.causal = causal

    def forward(self, x):
        mask = None
        if self.causal:
            s = x.shape[1]
            mask = torch.triu(torch.full((s, s), float("-inf")), 1)
        a, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
        x = self.norm1(self.add1(x, self.drop1(a)))
        f = self.ff2(self.act(self.ff1(x)))
        return self.norm2(self.add2(x, self.drop2(f)))


class Transformer(nn.Module):
    def __init__(self, vocab, d, heads, ff, layers, seq, classes, causal):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.add = Add()
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.Sequential(*[Block(d, heads, ff, causal)
                                      for _ in range(layers)])
        self.head = nn.Linear(d, classes)
        self.per_token = causal
        self.register_buffer("positions", torch.arange(seq))

    def forward(self, x):
        h = self.drop(self.add(self.tok(x), self.pos(self.positions)))
        h = self.blocks(h)
        return self.head(h if self.per_token else h[:, 0])


class RNNLM(nn.Module):
    def __init__(self, kind, vocab, d, hidden, layers, classes, per_token):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = kind(d, hidden, layers, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(hidden, classes)
        self.per_token = per_token

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        h = self.drop(h)
        return self.head(h if self.per_token else h[:, -1])


class Basic(nn.Module):
    """ResNet's basic block: conv-bn-relu-conv-bn, + (projected) input, relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1, self.r1 = nn.BatchNorm2d(cout), nn.ReLU()
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0,
                                                bias=False),
                                      nn.BatchNorm2d(cout))
        self.add, self.r2 = Add(), nn.ReLU()

    def forward(self, x):
        y = self.b2(self.c2(self.r1(self.b1(self.c1(x)))))
        return self.r2(self.add(y, self.proj(x) if self.proj else x))


class Bag(nn.Module):
    """An embedding-heavy recommender: one id per table, concatenated, MLP."""

    def __init__(self, tables, rows, d):
        super().__init__()
        self.emb = nn.ModuleList([nn.Embedding(rows, d) for _ in range(tables)])
        self.mlp = nn.Sequential(nn.Linear(tables * d, 256), nn.ReLU(),
                                 nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        return self.mlp(torch.cat([e(x[:, i]).reshape(x.shape[0], -1)
                                   for i, e in enumerate(self.emb)], 1))


def vgg(cfg, classes, bn):
    layers, c = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c, v, 3, 1, 1)] + ([nn.BatchNorm2d(v)] if bn else []) + [nn.ReLU()]
            c = v
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c * 4 * 4, 256),
                         nn.ReLU(), nn.Dropout(0.5), nn.Linear(256, classes))


def image(b, c, hw):
    return torch.randn(b, c, hw, hw)


def tokens(b, s, vocab):
    return torch.randint(0, vocab, (b, s))


# name: (model factory, input(batch), target(batch), batches, loss over tokens)
NETWORKS = {
    "mlp": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(),
                                  nn.Dropout(0.2), nn.Linear(1024, 1024), nn.ReLU(),
                                  nn.Dropout(0.2), nn.Linear(1024, 10)),
            lambda b: image(b, 1, 28), lambda b: torch.randint(0, 10, (b,)),
            (16, 64, 256)),
    "lenet": (lambda: nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
                                    nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
                                    nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
                                    nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)),
              lambda b: image(b, 1, 32), lambda b: torch.randint(0, 10, (b,)),
              (16, 64, 256)),
    "vgg-small": (lambda: vgg([32, 32, "M", 64, 64, "M", 128, 128, "M"], 10, True),
                  lambda b: image(b, 3, 32), lambda b: torch.randint(0, 10, (b,)),
                  (8, 32)),
    "resnet-small": (lambda: nn.Sequential(
                         nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         Basic(16, 16, 1), Basic(16, 32, 2), Basic(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)),
                     lambda b: image(b, 3, 32), lambda b: torch.randint(0, 10, (b,)),
                     (8, 32)),
    "lstm-lm": (lambda: RNNLM(nn.LSTM, 10000, 256, 256, 2, 10000, True),
                lambda b: tokens(b, 35, 10000), lambda b: torch.randint(0, 10000, (b * 35,)),
                (4, 16)),
    "gru-lm": (lambda: RNNLM(nn.GRU, 10000, 256, 256, 1, 10000, True),
               lambda b: tokens(b, 35, 10000), lambda b: torch.randint(0, 10000, (b * 35,)),
               (4, 16)),
    "rnn-classifier": (lambda: RNNLM(nn.RNN, 5000, 128, 128, 1, 20, False),
                       lambda b: tokens(b, 50, 5000), lambda b: torch.randint(0, 20, (b,)),
                       (16, 64)),
    "encoder": (lambda: Transformer(8000, 256, 4, 1024, 2, 64, 2, False),
                lambda b: tokens(b, 64, 8000), lambda b: torch.randint(0, 2, (b,)),
                (4, 16)),
    "decoder": (lambda: Transformer(8000, 256, 4, 1024, 2, 64, 8000, True),
                lambda b: tokens(b, 64, 8000), lambda b: torch.randint(0, 8000, (b * 64,)),
                (4, 16)),
    "embedding-bag": (lambda: Bag(8, 100000, 32),
                      lambda b: torch.randint(0, 100000, (b, 8)),
                      lambda b: torch.randint(0, 2, (b,)),
                      (64, 512)),
}
OPTIMIZERS = ("sgd", "adam")


def cases():
    return ["%s-b%d-%s" % (n, b, o) for n, v in NETWORKS.items()
            for b in v[3] for o in OPTIMIZERS]


def parse(case):
    name, b, opt = case.rsplit("-", 2)
    if name not in NETWORKS or not b.startswith("b") or opt not in OPTIMIZERS:
        sys.exit("real_steps.py: unknown case '%s'" % case)
    return name, int(b[1:]), opt


def build(case, seed=1):
    name, batch, opt = parse(case)
    torch.manual_seed(seed)
    make, x, y, _ = NETWORKS[name]
    model = make()
    model.train()
    o = (torch.optim.SGD(model.parameters(), lr=0.01) if opt == "sgd"
         else torch.optim.Adam(model.parameters(), lr=1e-3))
    return model, o, x(batch), y(batch), nn.CrossEntropyLoss(), batch


def step(model, opt, x, y, loss_fn):
    opt.zero_grad(set_to_none=True)
    out = model(x)
    loss = loss_fn(out.reshape(-1, out.shape[-1]), y)
    loss.backward()
    opt.step()


# ---- the pn network --------------------------------------------------------

COLUMNS = ("name layer op phase repeat batch seq_len dim in_features "
           "out_features bias activation m n k in_channels out_channels kernel "
           "image stride padding embed_dim heads vocab input_size hidden layers "
           "bidirectional elements dropout precision optimizer input_grad").split()


def rows_of(case):
    """The pn rows of one sample of the case, from hooks on leaf modules."""
    model, opt, x, y, loss_fn, batch = build(case)
    optname = parse(case)[2]
    rows = []

    def add(name, layer, weights, **dims):
        r = dict(name=name, layer=layer, op=dims.pop("op", layer), phase="train",
                 repeat=1, precision="fp32",
                 optimizer=optname if weights else "none")
        r.update(dims)
        rows.append(r)

    def per_sample(t):
        return t.numel() // batch

    def hook(name):
        def f(m, inp, out):
            a = inp[0]
            if isinstance(m, nn.Linear):
                add(name, "dense", True, batch=per_sample(a) // m.in_features,
                    in_features=m.in_features, out_features=m.out_features,
                    bias=int(m.bias is not None), input_grad=int(a.requires_grad))
            elif isinstance(m, nn.Conv2d):
                assert a.shape[2] == a.shape[3] and m.kernel_size[0] == m.kernel_size[1]
                add(name, "conv2d", True, batch=1, in_channels=m.in_channels,
                    out_channels=m.out_channels, kernel=m.kernel_size[0],
                    image=a.shape[2], stride=m.stride[0], padding=m.padding[0],
                    bias=int(m.bias is not None), input_grad=int(a.requires_grad))
            elif isinstance(m, nn.BatchNorm2d):
                assert a.shape[2] == a.shape[3]
                add(name, "batchnorm", True, batch=1, in_channels=a.shape[1],
                    image=a.shape[2])
            elif isinstance(m, nn.LayerNorm):
                d = m.normalized_shape[0]
                add(name, "layernorm", True, batch=1, seq_len=per_sample(a) // d, dim=d)
            elif isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
                one = lambda v: v if isinstance(v, int) else v[0]
                assert a.shape[2] == a.shape[3] and not m.ceil_mode
                add(name, "pool", False,
                    op="max" if isinstance(m, nn.MaxPool2d) else "avg",
                    batch=1, in_channels=a.shape[1], image=a.shape[2],
                    kernel=one(m.kernel_size), stride=one(m.stride),
                    padding=one(m.padding))
            elif isinstance(m, nn.AdaptiveAvgPool2d):
                assert a.shape[2] == a.shape[3] and out.shape[2] == 1
                add(name, "pool", False, op="avg", batch=1,
                    in_channels=a.shape[1], image=a.shape[2],
                    kernel=a.shape[2], stride=a.shape[2], padding=0)
            elif isinstance(m, (nn.ReLU, nn.GELU, nn.Tanh, nn.Dropout, Add)):
                op = {nn.ReLU: "relu", nn.GELU: "gelu", nn.Tanh: "tanh",
                      nn.Dropout: "dropout", Add: "add"}[type(m)]
                rate = {"dropout": m.p} if isinstance(m, nn.Dropout) else {}
                # pn's (batch, seq_len, dim): the last dimension, and the
                # others of a sample as the sequence
                d = out.shape[-1] if out.dim() > 1 else 1
                add(name, "elementwise", False, op=op, batch=1,
                    seq_len=per_sample(out) // d, dim=d, **rate)
            elif isinstance(m, nn.Embedding):
                add(name, "embedding", True, batch=1,
                    seq_len=max(1, a.numel() // batch) if a.dim() > 1 else 1,
                    vocab=m.num_embeddings, embed_dim=m.embedding_dim)
            elif isinstance(m, (nn.LSTM, nn.GRU, nn.RNN)):
                kind = {nn.LSTM: "lstm", nn.GRU: "gru", nn.RNN: "rnn"}[type(m)]
                add(name, kind, True, batch=1, seq_len=a.shape[1],
                    input_size=m.input_size, hidden=m.hidden_size,
                    layers=m.num_layers, bidirectional=int(m.bidirectional),
                    dropout=m.dropout)
            elif isinstance(m, nn.MultiheadAttention):
                add(name, "attention", True, batch=1, seq_len=a.shape[1],
                    embed_dim=m.embed_dim, heads=m.num_heads,
                    dropout=m.dropout)
            elif isinstance(m, nn.Flatten):
                pass                               # a view: no work
            else:
                raise SystemExit("real_steps.py: no pn row for %s" % type(m).__name__)
        return f

    def leaves(m, prefix=""):
        if isinstance(m, nn.MultiheadAttention) or not list(m.children()):
            yield prefix or type(m).__name__, m
            return
        for n, c in m.named_children():
            yield from leaves(c, prefix + ("." if prefix else "") + n)

    handles = [m.register_forward_hook(hook(n)) for n, m in leaves(model)]
    # with autograd on, as a step runs: a layer whose input does not
    # require grad (the one that reads the data) gets no input gradient
    # in backward, and its row says so (input_grad 0, src/lib/layer.h)
    out = model(x)
    for h in handles:
        h.remove()
    flat = out.reshape(-1, out.shape[-1])
    # the loss: cross-entropy over the classes (pn's xent), a token a row
    add("loss", "xent", False, batch=1, seq_len=flat.shape[0] // batch,
        dim=flat.shape[1])
    return rows


def write_network(case, path):
    with open(path, "w") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for r in rows_of(case):
            f.write("\t".join(str(r.get(c, "NA")) for c in COLUMNS) + "\n")


# ---- measuring -------------------------------------------------------------

# aten ops (self CPU time) grouped by the pn layer type that would carry them
GROUPS = [
    ("dense", ("addmm", "mm", "linear", "matmul", "bmm", "t", "AddmmBackward",
               "MmBackward", "sum")),
    ("conv2d", ("convolution", "conv2d", "mkldnn_convolution",
                "ConvolutionBackward", "_convolution")),
    ("batchnorm", ("batch_norm", "native_batch_norm", "NativeBatchNormBackward")),
    ("layernorm", ("layer_norm", "native_layer_norm", "NativeLayerNormBackward")),
    ("pool", ("max_pool2d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d",
              "MaxPool2DWithIndicesBackward", "AdaptiveAvgPool2DBackward",
              "mean")),
    ("rnn", ("lstm", "gru", "rnn_tanh", "_thnn", "LstmBackward", "GruBackward")),
    ("embedding", ("embedding", "embedding_bag", "_embedding_bag",
                   "EmbeddingBackward", "EmbeddingBagBackward",
                   "embedding_dense_backward", "index_select", "index_add_")),
    ("attention", ("multi_head_attention", "_native_multi_head_attention",
                   "baddbmm", "softmax", "_softmax", "SoftmaxBackward")),
    ("loss", ("cross_entropy", "log_softmax", "nll_loss", "NllLossBackward",
              "LogSoftmaxBackward", "_log_softmax")),
    ("dropout", ("dropout", "bernoulli_", "native_dropout", "NativeDropoutBackward")),
    ("activation", ("relu", "clamp_min", "gelu", "tanh", "threshold_backward",
                    "GeluBackward", "ReluBackward", "TanhBackward")),
    # zero_grad's fill_ of every gradient too: pn's whole train row
    # carries it (pn-sum's sweep)
    ("optimizer", ("Optimizer.step", "Optimizer.zero_grad", "fill_", "zero_",
                   "_foreach", "add_", "addcdiv_", "addcmul_", "lerp_", "sqrt",
                   "mul_", "div_")),
]


def group_of(op):
    """The group of a profiler key: its name (after "aten::", or after the
    ": " of an autograd key) is a group's key, or the key and then "_", a
    digit or "#" ("max_pool2d_with_indices", "AddmmBackward0",
    "Optimizer.step#SGD.step"): "t" is aten::t, never threshold_backward."""
    name = op.split(": ")[-1].split("::")[-1]
    for g, keys in GROUPS:
        for k in keys:
            if name == k or (name.startswith(k) and
                             (name[len(k)] in "_#" or name[len(k)].isdigit())):
                return g
    return "other"


PROFILED = 3


def profile(model, opt, x, y, loss_fn, step_ms):
    """Where a step's time goes, per aten op and per group: the profiler's
    self CPU time over PROFILED steps, as shares of the step scaled to
    step_ms (the profiler's own clock is the wall clock and adds its
    overhead, so only its shares are kept); and the peak memory of one
    more step (step_peak)."""
    from torch.profiler import ProfilerActivity, profile as prof
    with prof(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(PROFILED):
            step(model, opt, x, y, loss_fn)
    ops, groups = {}, {}
    total = sum(e.self_cpu_time_total for e in p.key_averages()
                if e.self_cpu_time_total > 0)
    for e in p.key_averages():
        if e.self_cpu_time_total <= 0:
            continue
        ms = e.self_cpu_time_total / total * step_ms
        ops[e.key] = ops.get(e.key, 0) + ms
        g = group_of(e.key)
        groups[g] = groups.get(g, 0) + ms
    return ops, groups, step_peak(model, opt, x, y, loss_fn)


def live_bytes(model, opt, x, y):
    """Bytes live before a step: parameters, their gradients where they
    exist, buffers, optimizer state, the batch."""
    n = sum(p.numel() * p.element_size() for p in model.parameters())
    n += sum(p.grad.numel() * p.grad.element_size()
             for p in model.parameters() if p.grad is not None)
    n += sum(b.numel() * b.element_size() for b in model.buffers())
    for st in opt.state.values():
        n += sum(t.numel() * t.element_size() for t in st.values()
                 if torch.is_tensor(t))
    return n + x.numel() * x.element_size() + y.numel() * y.element_size()


def measure(case, outdir):
    """Time the case in PROCESSES fresh processes (each one `measure` with
    PROCESSES=1) and merge them: a process's allocator history and the
    VM's state move its median by several percent, which steps within
    one process do not show."""
    k = int(os.environ.get("PROCESSES", "1"))
    if k <= 1:
        return measure_one(case, outdir)
    import subprocess
    import tempfile
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(k):
            d = os.path.join(tmp, str(i))
            os.mkdir(d)
            subprocess.run([sys.executable, os.path.abspath(__file__), "measure",
                            case, d], check=True, env=dict(os.environ, PROCESSES="1"))
            with open(os.path.join(d, case + ".json")) as f:
                runs.append(json.load(f))
    med = [r["median_ms"] for r in runs]
    steps = [t for r in runs for t in r["step_ms"]]
    res = dict(runs[0])
    res.update({
        "processes": k, "process_medians_ms": med,
        "median_ms": statistics.median(med), "mean_ms": statistics.mean(steps),
        "cv": statistics.median(r["cv"] for r in runs),
        "process_cv": statistics.stdev(med) / statistics.mean(med),
        "wall_median_ms": statistics.median(r["wall_median_ms"] for r in runs),
        "step_ms": steps, "peak_bytes": max(r["peak_bytes"] for r in runs),
        "faults_per_step": statistics.median(r["faults_per_step"] for r in runs),
    })
    with open(os.path.join(outdir, case + ".json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)


def measure_one(case, outdir):
    model, opt, x, y, loss_fn, batch = build(case)
    for _ in range(WARMUP):
        step(model, opt, x, y, loss_fn)
    cpu, wall = [], []
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(STEPS):
        t0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        step(model, opt, x, y, loss_fn)
        cpu.append((time.thread_time_ns() - t0) / 1e6)
        wall.append((time.perf_counter_ns() - w0) / 1e6)
    # pages the steps touched for the first time: memory the allocator
    # gave back to the kernel between steps (glibc trims and unmaps freed
    # tensors), whose faults the step's thread time counts
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / STEPS
    start = live_bytes(model, opt, x, y)
    ops, groups, peak = profile(model, opt, x, y, loss_fn,
                                statistics.median(cpu))
    res = {
        "case": case, "batch": batch, "steps": STEPS, "warmup": WARMUP,
        "median_ms": statistics.median(cpu), "mean_ms": statistics.mean(cpu),
        "cv": statistics.stdev(cpu) / statistics.mean(cpu),
        "wall_median_ms": statistics.median(wall), "step_ms": cpu,
        "start_bytes": start, "peak_bytes": peak, "faults_per_step": faults,
        "params": sum(p.numel() for p in model.parameters()),
        "profile_groups_ms": groups, "profile_ops_ms": ops,
        "torch": torch.__version__, "threads": torch.get_num_threads(),
    }
    with open(os.path.join(outdir, case + ".json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)


def step_peak(model, opt, x, y, loss_fn):
    """The peak memory of one training step, bytes, as exactly as PyTorch
    on the CPU allows: the gradients of the step before are freed first
    (the step's zero_grad(set_to_none=True) frees them anyway, but the
    profiler does not see the free of a block allocated before it
    started); then the bytes live at the start (live_bytes: every tensor,
    by its size) plus the highest running sum of the profiler's memory
    events through one step (every allocation and free of c10's CPU
    allocator, with its size, in the order of their microsecond
    timestamps).  Not seen: memory outside c10's allocator (oneDNN's
    and OpenMP's own buffers, Python objects) and the C library's
    rounding and retention of each malloc."""
    from torch.profiler import ProfilerActivity, profile as prof
    opt.zero_grad(set_to_none=True)
    start = live_bytes(model, opt, x, y)
    with prof(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        step(model, opt, x, y, loss_fn)
    mem = [(e.start_us(), k, e.nbytes())
           for k, e in enumerate(p.profiler.kineto_results.events())
           if e.name() == "[memory]"]
    cur = peak = 0
    for _, _, d in sorted(mem):
        cur += d
        peak = max(peak, cur)
    return start + peak


def memory(case, out):
    """The peak memory of the case's step (step_peak) after MEM_WARMUP (2)
    steps, when the optimizer's state exists, into out (JSON)."""
    model, opt, x, y, loss_fn, batch = build(case)
    for _ in range(int(os.environ.get("MEM_WARMUP", "2"))):
        step(model, opt, x, y, loss_fn)
    peak = step_peak(model, opt, x, y, loss_fn)
    par = sum(q.numel() * q.element_size() for q in model.parameters())
    state = sum(t.numel() * t.element_size() for st in opt.state.values()
                for t in st.values() if torch.is_tensor(t))
    res = {"case": case, "batch": batch, "peak_bytes": peak,
           "param_bytes": par, "state_bytes": state,
           "input_bytes": x.numel() * x.element_size() +
                          y.numel() * y.element_size(),
           "torch": torch.__version__}
    with open(out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)


def recorded(tsv, case, outdir):
    """The case's row of a measured.tsv that bench/real-steps wrote (the
    form bench/results/ keeps) as the JSON that `measure` writes, with
    what that row holds: no per-step times, no per-op profile."""
    with open(tsv) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if not l.startswith("#")]
    head = rows[0]
    for r in rows[1:]:
        if r[0] != case:
            continue
        v = dict(zip(head, r))
        res = {"case": case, "batch": int(v["batch"]), "steps": int(v["steps"]),
               "warmup": int(v["warmup"]), "median_ms": float(v["median_ms"]),
               "mean_ms": float(v["mean_ms"]), "cv": float(v["cv"]),
               "wall_median_ms": float(v["wall_median_ms"]),
               "threads": int(v["threads"]), "peak_bytes": int(v["peak_bytes"]),
               "faults_per_step": (float(v["faults_per_step"])
                                   if v.get("faults_per_step", "NA") != "NA" else None),
               "processes": int(v.get("processes", "1")),
               "process_cv": (float(v["process_cv"])
                              if v.get("process_cv", "NA") != "NA" else None),
               "profile_groups_ms": {k[:-3]: float(x) for k, x in v.items()
                                     if k.endswith("_ms") and k[:-3] not in
                                     ("median", "mean", "wall_median") and float(x) > 0},
               "recorded": tsv}
        with open(os.path.join(outdir, case + ".json"), "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
        return
    sys.exit("real_steps.py: %s: no case '%s'" % (tsv, case))


def main(argv):
    if len(argv) >= 1 and argv[0] == "list":
        print("\n".join(cases()))
    elif len(argv) == 3 and argv[0] == "network":
        write_network(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "measure":
        measure(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "memory":
        memory(argv[1], argv[2])
    elif len(argv) == 4 and argv[0] == "recorded":
        recorded(argv[1], argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
