"""Conv/pool speed against PyTorch CPU eager (not a test; run it directly).

    .venv/bin/python tests/nn/bench_cnn.py

1. conv2d 8->16, 3x3, on [64, 8, 26, 26]: forward, and forward + backward
   (input, weight and bias grads) on Autodiff[NdArray];
2. max_pool2d 2x2 / adaptive_avg_pool2d 24->8 forward + backward;
3. a training step (forward, cross-entropy, backward) of the book's guide
   CNN: conv 1->8 3x3, conv 8->16 3x3, ReLU, adaptive avg pool to 8x8,
   linear 1024->512, ReLU, linear 512->10, batch 64 of 28x28 images
   (dropout left out on both sides), as images/s.

Prints the best of several repeats and the ratio. Both sides use the same
number of BLAS/intra-op threads (`BENCH_THREADS`, default 1).
"""

from __future__ import annotations

import os
import timeit

THREADS = os.environ.get("BENCH_THREADS", "1")
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = THREADS   # before NumPy loads its BLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402

from burnbook import Int, Tensor, nn  # noqa: E402
from burnbook.autodiff import Autodiff  # noqa: E402
from burnbook.backend.ndarray import NdArray  # noqa: E402
from burnbook.tensor import activation  # noqa: E402
from burnbook.tensor import module as M  # noqa: E402
from burnbook.tensor.ops import ConvOptions  # noqa: E402

torch.set_num_threads(int(THREADS))
B = Autodiff[NdArray]
F = torch.nn.functional
rng = np.random.default_rng(0)


def best(fn, number: int = 10, repeat: int = 7) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def row(name: str, ours: float, theirs: float) -> None:
    print(f"{name:<44} burnbook {ours * 1e3:8.3f} ms   torch {theirs * 1e3:8.3f} ms   "
          f"ours/torch {ours / theirs:5.2f}x time")


def conv_case() -> None:
    x, w, b = rng.standard_normal((64, 8, 26, 26)), rng.standard_normal((16, 8, 3, 3)), rng.standard_normal(16)
    X, W, Bb = (Tensor[B, a.ndim].from_data(a).require_grad() for a in (x, w, b))
    xt, wt, bt = (torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in (x, w, b))
    opts = ConvOptions(1, 0, 1, 1)
    row("conv2d forward", best(lambda: M.conv2d(X.detach(), W.detach(), Bb.detach(), opts)),
        best(lambda: F.conv2d(xt.detach(), wt.detach(), bt.detach())))
    row("conv2d forward+backward", best(lambda: M.conv2d(X, W, Bb, opts).sum().backward()),
        best(lambda: F.conv2d(xt, wt, bt).sum().backward()))
    y = rng.standard_normal((64, 16, 24, 24))
    Y = Tensor[B, 4].from_data(y).require_grad()
    yt = torch.tensor(y, dtype=torch.float32, requires_grad=True)
    row("max_pool2d 2x2 forward+backward", best(lambda: M.max_pool2d(Y, 2, 2).sum().backward()),
        best(lambda: F.max_pool2d(yt, 2, 2).sum().backward()))
    row("adaptive_avg_pool2d 24->8 forward+backward",
        best(lambda: M.adaptive_avg_pool2d(Y, (8, 8)).sum().backward()),
        best(lambda: F.adaptive_avg_pool2d(yt, (8, 8)).sum().backward()))


class Guide:
    """The guide's CNN in burnbook (dropout left out)."""

    def __init__(self) -> None:
        self.conv1 = nn.Conv2dConfig([1, 8], [3, 3]).init()
        self.conv2 = nn.Conv2dConfig([8, 16], [3, 3]).init()
        self.pool = nn.AdaptiveAvgPool2dConfig([8, 8]).init()
        self.linear1 = nn.LinearConfig(16 * 8 * 8, 512).init()
        self.linear2 = nn.LinearConfig(512, 10).init()
        self.loss = nn.CrossEntropyLossConfig().init()

    def step(self, images, targets) -> None:
        n = images.dims()[0]
        x = self.conv2(self.conv1(images.reshape([n, 1, 28, 28])))
        x = self.pool(activation.relu(x)).reshape([n, 16 * 8 * 8])
        x = self.linear2(activation.relu(self.linear1(x)))
        self.loss.forward(x, targets).backward()


def torch_guide():
    tn = torch.nn
    model = tn.Sequential(tn.Conv2d(1, 8, 3), tn.Conv2d(8, 16, 3), tn.ReLU(), tn.AdaptiveAvgPool2d((8, 8)),
                          tn.Flatten(), tn.Linear(1024, 512), tn.ReLU(), tn.Linear(512, 10))

    def step(images, targets):
        F.cross_entropy(model(images.reshape(-1, 1, 28, 28)), targets).backward()
    return step


def guide_case(batch: int = 64) -> None:
    images = rng.random((batch, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    ours = Guide()
    imgs, tgts = Tensor[B, 3].from_data(images), Tensor[B, 1, Int].from_data(labels)
    t_ours = best(lambda: ours.step(imgs, tgts), number=5)
    step = torch_guide()
    ti, tt = torch.tensor(images), torch.tensor(labels)
    t_torch = best(lambda: step(ti, tt), number=5)
    print(f"guide CNN train step, batch {batch}: burnbook {batch / t_ours:8.0f} img/s   "
          f"torch {batch / t_torch:8.0f} img/s   ours/torch {t_torch / t_ours:5.2f}x throughput")


if __name__ == "__main__":
    print(f"threads: {THREADS} (BENCH_THREADS); torch {torch.__version__}, numpy {np.__version__}")
    conv_case()
    guide_case()
