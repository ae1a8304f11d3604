"""bench/kernels_torch.py - PyTorch's CPU kernels for bench/kernels-vs-torch:
one training call (forward, then backward) of each row of a TSV (op, then
its sizes: layernorm, softmax and xent over the last axis of a rows x dim
tensor, the activations relu, gelu, tanh and sigmoid on one; bmm of batch
x m x n by batch x n x k; attention as nn.MultiheadAttention, batch x
seq_len x embed_dim, heads, dropout 0.1; conv2d as nn.Conv2d with a
bias, batch x in_channels x image x out_channels x kernel, stride 1,
padding kernel / 2, the input's gradient computed unless in_channels is
1 or 3, a network's first layer), one thread, thread CPU time, the
median of REPS calls after WARMUP.  Prints op, sizes (x-joined), fwd_us,
bwd_us."""
import os
import sys
import time

# one thread means one: OpenBLAS and OpenMP keep their own pools
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import torch  # noqa: E402 (after the environment it reads)

F = torch.nn.functional
ACT = {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh,
       "sigmoid": torch.sigmoid}


def case(op, d):
    """The call, its inputs that need gradients and the gradient of its
    output, for op of sizes d."""
    if op == "bmm":
        a = torch.randn(d[0], d[1], d[2], requires_grad=True)
        b = torch.randn(d[0], d[2], d[3], requires_grad=True)
        return (lambda: torch.bmm(a, b)), (a, b), torch.randn(d[0], d[1], d[3])
    if op == "attention":
        m = torch.nn.MultiheadAttention(d[2], d[3], dropout=0.1,
                                        batch_first=True)
        x = torch.randn(d[0], d[1], d[2], requires_grad=True)
        return (lambda: m(x, x, x, need_weights=False)[0]), (x,), torch.randn(d[0], d[1], d[2])
    if op == "conv2d":
        m = torch.nn.Conv2d(d[1], d[3], d[4], padding=d[4] // 2)
        x = torch.randn(d[0], d[1], d[2], d[2], requires_grad=d[1] not in (1, 3))
        y = d[2] + 2 * (d[4] // 2) - d[4] + 1
        return (lambda: m(x)), (x,), torch.randn(d[0], d[3], y, y)
    n, k = d
    x = torch.randn(n, k, requires_grad=True)
    if op == "layernorm":
        m = torch.nn.LayerNorm(k)
        return (lambda: m(x)), (x,), torch.randn(n, k)
    if op == "softmax":
        return (lambda: F.softmax(x, -1)), (x,), torch.randn(n, k)
    if op == "xent":
        t = torch.randint(0, k, (n,))
        return (lambda: F.cross_entropy(x, t)), (x,), torch.tensor(1.0)
    if op in ACT:
        return (lambda: ACT[op](x)), (x,), torch.randn(n, k)
    raise SystemExit("kernels_torch.py: %s: not an op it times" % op)


def main():
    reps, warmup = int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    torch.manual_seed(1)
    with open(sys.argv[1]) as f:
        rows = [line.split() for line in f if line.strip()]
    for row in rows:
        op, d = row[0], [int(v) for v in row[1:]]
        fn, inputs, g = case(op, d)
        fw, bw = [], []
        for r in range(warmup + reps):
            t0 = time.thread_time_ns()
            y = fn()
            t1 = time.thread_time_ns()
            y.backward(g)
            t2 = time.thread_time_ns()
            for x in inputs:
                x.grad = None
            if r >= warmup:
                fw.append(t1 - t0)
                bw.append(t2 - t1)
        fw.sort()
        bw.sort()
        print("%s\t%s\t%.3f\t%.3f" % (op, "x".join(row[1:]), fw[len(fw) // 2] / 1e3,
                                      bw[len(bw) // 2] / 1e3))


main()
