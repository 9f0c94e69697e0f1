"""Grouped and depthwise conv2d on NdArray against PyTorch, forward and backward.

A standalone measurement (not a `make bench` family): median CPU times of
NdArray's conv2d forward and of its two backward ops (the input gradient,
`conv_transpose2d`, and `conv2d_weight_backward`) beside `torch.nn.functional`'s
forward and autograd backward, on the same thread count.

    .venv/bin/python benchmarks/grouped_conv_speed.py [--threads 1] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path


def _threads_from_argv() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per case")
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)  # before NumPy loads its BLAS
    return args


ARGS = _threads_from_argv()

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from burnbook.backend.module_ops import ConvOptions, ConvTransposeOptions  # noqa: E402
from burnbook.backend.ndarray import NdArray  # noqa: E402

# name, x shape, (out channels, kernel, stride, padding, groups)
CASES = [
    ("depthwise 3x3 s1", (32, 96, 56, 56), (96, 3, 1, 1, 96)),
    ("depthwise 3x3 s2", (32, 96, 56, 56), (96, 3, 2, 1, 96)),
    ("grouped g=4 3x3", (32, 64, 28, 28), (64, 3, 1, 1, 4)),
    ("grouped g=32 3x3 (ResNeXt)", (8, 128, 28, 28), (128, 3, 1, 1, 32)),
    ("depthwise 3x3 s1 batch 1", (1, 144, 16, 16), (144, 3, 1, 1, 144)),
    ("depthwise 5x5 s1 batch 1", (1, 240, 8, 8), (240, 5, 1, 2, 240)),
]


def _median(fn, repeat: int) -> float:
    """Median CPU time of this process per call: on one thread that is the
    call's own work, and it swings far less than wall time on a shared machine."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main() -> None:
    torch.set_num_threads(ARGS.threads)
    rng = np.random.default_rng(0)
    print(f"threads={ARGS.threads}  repeat={ARGS.repeat}  (median CPU ms; ratio = NdArray / torch)")
    print(f"{'case':30s} {'fwd nd':>8s} {'fwd torch':>9s} {'ratio':>6s} {'bwd nd':>8s} {'bwd torch':>9s} {'ratio':>6s}")
    for name, xs, (o, k, s, p, g) in CASES:
        x = rng.standard_normal(xs, dtype=np.float32)
        w = rng.standard_normal((o, xs[1] // g, k, k), dtype=np.float32)
        opts = ConvOptions((s, s), (p, p), (1, 1), g)
        out = NdArray.conv2d(x, w, None, opts)
        gy = rng.standard_normal(out.shape, dtype=np.float32)
        pad_out = tuple(xs[2 + d] + 2 * p - (k - 1) - 1 - (out.shape[2 + d] - 1) * s for d in range(2))
        topts = ConvTransposeOptions((s, s), (p, p), pad_out, (1, 1), g)

        def nd_bwd():
            NdArray.conv_transpose2d(gy, w, None, topts)
            NdArray.conv2d_weight_backward(x, gy, w.shape, opts)

        tx, tw, tg = (torch.from_numpy(a) for a in (x, w, gy))
        tx.requires_grad_(True)
        tw.requires_grad_(True)

        def t_fwd():
            with torch.no_grad():
                torch.nn.functional.conv2d(tx, tw, None, s, p, 1, g)

        def t_bwd():
            torch.nn.functional.conv2d(tx, tw, None, s, p, 1, g).backward(tg)

        f_nd = _median(lambda: NdArray.conv2d(x, w, None, opts), ARGS.repeat)
        f_t = _median(t_fwd, ARGS.repeat)
        # torch's backward includes its forward: subtract the forward's median.
        b_nd = _median(nd_bwd, ARGS.repeat)
        b_t = max(_median(t_bwd, ARGS.repeat) - f_t, 1e-9)
        print(f"{name:30s} {f_nd * 1e3:8.1f} {f_t * 1e3:9.1f} {f_nd / f_t:6.1f} "
              f"{b_nd * 1e3:8.1f} {b_t * 1e3:9.1f} {b_nd / b_t:6.1f}")


if __name__ == "__main__":
    main()
