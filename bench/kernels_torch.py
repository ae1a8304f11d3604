"""bench/kernels_torch.py - per-element times of PyTorch's CPU kernels for
bench/kernels-vs-torch: one training call (forward, then backward) of each
row of a TSV (op, rows, dim: layernorm, softmax or xent over the last
axis of a rows x dim tensor, or the activation relu, gelu, tanh or
sigmoid on it), one thread, thread CPU time, the median of
REPS calls after WARMUP.  Prints layer, rows, dim, fwd_ns, bwd_ns (ns an
element of the input)."""
import sys
import time

import torch

F = torch.nn.functional


def call(layer, x, dim, t):
    if layer == "layernorm":
        return torch.nn.LayerNorm(dim)
    if layer == "softmax":
        return lambda z: F.softmax(z, -1)
    if layer == "xent":
        return lambda z: F.cross_entropy(z, t)
    act = {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh,
           "sigmoid": torch.sigmoid}
    if layer in act:
        return act[layer]
    raise SystemExit("kernels_torch.py: %s: not a layer it times" % layer)


def main():
    reps, warmup = int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    torch.manual_seed(1)
    with open(sys.argv[1]) as f:
        rows = [line.split() for line in f if line.strip()]
    for layer, n, d in rows:
        n, d = int(n), int(d)
        x = torch.randn(n, d, requires_grad=True)
        t = torch.randint(0, d, (n,))
        fn = call(layer, x, d, t)
        g = torch.tensor(1.0) if layer == "xent" else torch.randn(n, d)
        fw, bw = [], []
        for r in range(warmup + reps):
            t0 = time.thread_time_ns()
            y = fn(x)
            t1 = time.thread_time_ns()
            y.backward(g)
            t2 = time.thread_time_ns()
            x.grad = None
            if r >= warmup:
                fw.append(t1 - t0)
                bw.append(t2 - t1)
        fw.sort()
        bw.sort()
        print("%s\t%d\t%d\t%.4f\t%.4f" % (layer, n, d, fw[len(fw) // 2] / (n * d),
                                          bw[len(bw) // 2] / (n * d)))


main()
