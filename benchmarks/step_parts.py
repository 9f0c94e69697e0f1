"""Where Autodiff[Fusion[Taichi]]'s GPT training step goes: its BLAS
products, its Taichi kernel launches and everything else (Python, host
reductions and copies), beside PyTorch's whole step at the same threads;
and what one Taichi launch costs run serially and on the thread pool.

A standalone diagnosis (not a `make bench` family) on the transformer
bench's own setup (`benchmarks/cases/transformer.py`, two untimed steps
first): the step is timed plain, then again with a timer around every BLAS
product (`backend/taichi/ops/blas.run`) and every kernel launch
(`launcher.Launcher.__call__`); the parts come from the timed steps, so
they add up to a little more than the plain step. Run it as issue 34's bar
is measured, with OpenBLAS on its own kernels:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/step_parts.py [--steps 10]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cases import transformer  # noqa: E402
from benchmarks.frameworks import discover  # noqa: E402

PAIRS = (("autodiff_fusion", "torch"), ("autodiff_fusion_1t", "torch_1t"))


def _setup(fw, size: tuple):
    ns = fw.namespace(transformer._inputs(size)(np.random.default_rng(0)))
    fw.enter()
    (transformer._torch(size) if fw.api == "torch" else transformer._burnbook(size))(fw, ns)
    fw.exit()
    return ns["step"]


def _per_step(fw, step, steps: int) -> float:
    fw.enter()
    try:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        fw.sync()
        return (time.perf_counter() - start) / steps
    finally:
        fw.exit()


def _timed_parts(fw, step, steps: int) -> dict:
    """Seconds per step in BLAS products and in Taichi launches, with the step's own time."""
    from burnbook.backend.taichi import launcher
    from burnbook.backend.taichi.ops import blas

    spent = {"blas": 0.0, "kernels": 0.0}
    run, call = blas.run, launcher.Launcher.__call__

    def timed(part, fn):
        def wrapper(*args):
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spent[part] += time.perf_counter() - start
        return wrapper

    blas.run, launcher.Launcher.__call__ = timed("blas", run), timed("kernels", call)
    try:
        total = _per_step(fw, step, steps)
    finally:
        blas.run, launcher.Launcher.__call__ = run, call
    return {"step": total, "blas": spent["blas"] / steps, "kernels": spent["kernels"] / steps}


def launch_cost(n: int = 20_000, calls: int = 200) -> dict:
    """Median seconds of a Taichi multiply over `n` f32 elements run serially
    and on Taichi's thread pool (`SETTINGS.serial_below`)."""
    from burnbook import Tensor
    from burnbook.backend import Taichi
    from burnbook.backend.taichi.settings import SETTINGS

    x = Tensor[Taichi, 1].from_data(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    out = {}
    for name, below in (("serial", n + 1), ("pool", 0)):
        with SETTINGS.override(serial_below=below):
            x * 1.5   # builds this instance
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                x * 1.5
                times.append(time.perf_counter() - start)
        out[name] = statistics.median(times)
    return out


def main(argv: list[str] | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per measurement")
    parser.add_argument("--size", default="128,4,2,64,32,128",
                        help="d_model,heads,layers,seq,batch,vocab (default: the bench's small size)")
    args = parser.parse_args(argv)
    size = tuple(int(v) for v in args.size.split(","))
    fws = {f.key: f for f in discover(tuple(k for pair in PAIRS for k in pair))}
    rows = []
    for ours, theirs in PAIRS:
        if ours not in fws or theirs not in fws:
            print(f"{ours} / {theirs}: not available here")
            continue
        step, torch_step = _setup(fws[ours], size), _setup(fws[theirs], size)
        gc.collect()
        plain = statistics.median(_per_step(fws[ours], step, args.steps) for _ in range(3))
        reference = statistics.median(_per_step(fws[theirs], torch_step, args.steps) for _ in range(3))
        parts = _timed_parts(fws[ours], step, args.steps)
        rest = parts["step"] - parts["blas"] - parts["kernels"]
        rows.append({"framework": ours, "plain": plain, "torch": reference, **parts, "rest": rest})
        print(f"{ours}: {plain * 1e3:.1f} ms a step (PyTorch's {theirs}: {reference * 1e3:.1f} ms); timed step "
              f"{parts['step'] * 1e3:.1f} ms = BLAS {parts['blas'] * 1e3:.1f} + Taichi kernels "
              f"{parts['kernels'] * 1e3:.1f} + the rest {rest * 1e3:.1f}")
    cost = launch_cost()
    print(f"one Taichi multiply over 20,000 f32: {cost['serial'] * 1e6:.0f} us serial, "
          f"{cost['pool'] * 1e6:.0f} us on the thread pool")
    return rows


if __name__ == "__main__":
    main()
