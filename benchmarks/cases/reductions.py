"""Reductions on large 2-D tensors: full sum, sum over the last and first dim, max."""

from __future__ import annotations

import numpy as np

from ..formatting import fmt_size
from ..measurement import Case
from ..profiles import Profile

FAMILY = "reduction"
TITLE = "Reductions (f32)"
INTRO = (
    "On a square matrix (1M = 1024x1024, 16M = 4096x4096; values uniform in "
    "[0, 1)): `sum` (every element; Burn's `sum()` gives shape `[1]`), "
    "`sum_dim` over the last dim (1) and the first dim (0), and `max_dim` over "
    "the last dim, all keeping the rank. Throughput counts 4 bytes read per "
    "element. Ratios are throughputs: higher is better. Results are checked "
    "against NumPy to 1e-3 of the largest value (f32 summation order differs)."
)

OPS = {
    "sum": {"numpy": "x.sum()", "burnbook": "x.sum()", "torch": "x.sum()"},
    "sum_dim_last": {"numpy": "x.sum(axis=1, keepdims=True)", "burnbook": "x.sum_dim(1)",
                     "torch": "x.sum(dim=1, keepdim=True)"},
    "sum_dim_first": {"numpy": "x.sum(axis=0, keepdims=True)", "burnbook": "x.sum_dim(0)",
                      "torch": "x.sum(dim=0, keepdim=True)"},
    "max_dim_last": {"numpy": "x.max(axis=1, keepdims=True)", "burnbook": "x.max_dim(1)",
                     "torch": "x.amax(dim=1, keepdim=True)"},
}


def _inputs(shape: tuple):
    def make(rng: np.random.Generator) -> dict:
        return {"x": rng.uniform(0, 1, shape).astype(np.float32)}

    return make


def cases(profile: Profile) -> list:
    out = []
    for shape in profile.reduction_shapes:
        n = int(np.prod(shape))
        for op, stmt in OPS.items():
            out.append(Case(FAMILY, op, fmt_size(n), _inputs(shape), stmt,
                            work=4.0 * n, unit="GB/s", tol=1e-3))
    return out
