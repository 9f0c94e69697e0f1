"""Element-wise throughput on large flat tensors: one add, and a chain of five ops."""

from __future__ import annotations

import numpy as np

from ..formatting import fmt_size
from ..measurement import Case
from ..profiles import Profile

FAMILY = "elementwise"
TITLE = "Element-wise throughput (f32)"
# The chain of five ops, written once per API.
CHAIN = {
    "numpy": "np.sin(np.exp(x * y + x)) - y",
    "burnbook": "(x * y + x).exp().sin() - y",
    "torch": "torch.sin(torch.exp(x * y + x)) - y",
}
INTRO = (
    "`add`: `x + y` on two flat tensors; throughput counts 12 bytes per element "
    "(two f32 reads, one write). `chain5`: `sin(exp(x*y + x)) - y` (five ops: "
    "mul, add, exp, sin, sub; unfused in every framework here), in millions of "
    "output elements per second. Inputs are uniform in [-1, 1). Ratios are "
    "throughputs: higher is better."
)


def _inputs(n: int):
    def make(rng: np.random.Generator) -> dict:
        return {
            "x": rng.uniform(-1, 1, n).astype(np.float32),
            "y": rng.uniform(-1, 1, n).astype(np.float32),
        }

    return make


def cases(profile: Profile) -> list:
    out = []
    for n in profile.elementwise_sizes:
        size = fmt_size(n)
        out.append(Case(FAMILY, "add", size, _inputs(n), {"*": "x + y"},
                        work=12.0 * n, unit="GB/s", tol=1e-6))
        out.append(Case(FAMILY, "chain5", size, _inputs(n), CHAIN,
                        work=float(n), unit="Melem/s", tol=1e-5))
    return out
