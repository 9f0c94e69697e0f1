"""Autodiff overhead against PyTorch CPU eager (not a test; run it directly).

    .venv/bin/python tests/autodiff/bench_overhead.py

1. a tracked add of two 4-element tensors (primitive level and Tensor level);
2. a forward+backward+SGD step of a 3-layer MLP (batch 64, 784-256-128-10,
   ReLU, log-softmax cross-entropy) on Autodiff[NdArray].
Prints the best of several repeats, and the ratio ours / torch. Both sides
run with the same number of BLAS/intra-op threads (`BENCH_THREADS`, default 1:
on a shared or loaded machine multi-threaded BLAS timings are noise).
"""

from __future__ import annotations

import os
import timeit

THREADS = os.environ.get("BENCH_THREADS", "1")
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = THREADS   # before NumPy loads its BLAS

import numpy as np
import torch

from burnbook.autodiff import Autodiff
from burnbook.backend.ndarray import NdArray
from burnbook.tensor import Tensor, activation

B = Autodiff[NdArray]


def best(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def bench_add():
    d = B.default_device()
    a = B.float_require_grad(B.float_from_data(np.ones(4, np.float32), d))
    b = B.float_require_grad(B.float_from_data(np.ones(4, np.float32), d))
    ta = Tensor[B, 1].from_floats([1.0] * 4).require_grad()
    tb = Tensor[B, 1].from_floats([1.0] * 4).require_grad()
    xa = torch.ones(4, requires_grad=True)
    xb = torch.ones(4, requires_grad=True)
    n = 100_000
    prim = best(lambda: B.float_add(a, b), n)
    tens = best(lambda: ta + tb, n)
    ref = best(lambda: xa + xb, n)
    print(f"tracked add, 4 elements: primitive {prim * 1e6:.2f} us, Tensor {tens * 1e6:.2f} us, "
          f"torch {ref * 1e6:.2f} us  (ratio primitive {prim / ref:.2f}x, Tensor {tens / ref:.2f}x)")
    return prim, tens, ref


def bench_mlp(steps=30):
    rng = np.random.default_rng(0)
    sizes = [784, 256, 128, 10]
    ws = [rng.normal(0, (2 / i) ** 0.5, (i, o)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    bs = [np.zeros((1, o), np.float32) for o in sizes[1:]]
    x = rng.normal(size=(64, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 64)
    onehot = np.eye(10, dtype=np.float32)[labels]
    lr = 0.01

    params = [Tensor[B, 2].from_data(p) for pair in zip(ws, bs) for p in pair]
    X = Tensor[B, 2].from_data(x)
    Y = Tensor[B, 2].from_data(onehot)

    def forward_backward():
        ps = [p.require_grad() for p in params]
        h = X
        for i in range(3):
            h = h.matmul(ps[2 * i]) + ps[2 * i + 1]
            if i < 2:
                h = activation.relu(h)
        loss = (activation.log_softmax(h, 1) * Y).sum_dim(1).mean().neg()
        return ps, loss.backward()

    def ours():
        nonlocal params
        ps, grads = forward_backward()
        params = [Tensor[B, 2].from_inner(p.inner() - p.grad(grads) * lr) for p in ps]

    tw = [torch.tensor(w.T.copy()) for w in ws]
    tparams = []
    for w, b in zip(tw, bs):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(w)
            lin.bias.copy_(torch.tensor(b[0]))
        tparams.append(lin)
    model = torch.nn.Sequential(tparams[0], torch.nn.ReLU(), tparams[1], torch.nn.ReLU(), tparams[2])
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    tx, ty = torch.tensor(x), torch.tensor(labels)

    def theirs_forward_backward():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(tx), ty).backward()

    def theirs():
        theirs_forward_backward()
        opt.step()

    for _ in range(5):
        ours()
        theirs()
    fb = best(forward_backward, steps)
    fb_ref = best(theirs_forward_backward, steps)
    mine = best(ours, steps)
    ref = best(theirs, steps)
    print(f"MLP forward+backward (64, 784-256-128-10): ours {fb * 1e3:.3f} ms, "
          f"torch {fb_ref * 1e3:.3f} ms (ratio {fb / fb_ref:.2f}x)")
    print(f"MLP step with SGD update: ours {mine * 1e3:.3f} ms, torch {ref * 1e3:.3f} ms "
          f"(ratio {mine / ref:.2f}x)")
    return fb, fb_ref, mine, ref


if __name__ == "__main__":
    torch.set_num_threads(int(THREADS))
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, numpy {np.__version__}")
    bench_add()
    bench_mlp()
