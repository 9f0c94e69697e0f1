"""Per-op dispatch overhead: the time of one call on a 4-element tensor.

At this size the arithmetic is free, so the time is the framework's own cost
per call (argument checks, wrapping, dispatch). The NumPy baseline is the
fastest idiomatic NumPy spelling of the same op (operators and array methods,
which skip the Python wrappers of `np.sum`), so the ratio is a strict one.
"""

from __future__ import annotations

import numpy as np

from ..measurement import Case
from ..profiles import Profile

FAMILY = "dispatch"
TITLE = "Per-op dispatch overhead (4-element f32 tensors)"
INTRO = (
    "Median time of one call on a 4-element tensor (`[4]`, or `[2, 2]` for "
    "`sum_dim` and `matmul`); the arithmetic is negligible, so this is the "
    "per-call cost of each framework. The NumPy baseline is the fastest NumPy "
    "spelling (`x + y`, `np.exp(x)`, `x.sum(axis=1, keepdims=True)`, `x @ y`). "
    "Ratios are times: lower is better. Autodiff[NdArray] here is *untracked* "
    "(no `require_grad`); tracked ops are in the autodiff family."
)

# The ops with a bar (NdArray <= 3x NumPy), then informational ones.
BAR_OPS = ("add", "mul", "exp", "sum_dim", "matmul")


def _vec(rng: np.random.Generator) -> dict:
    return {
        "x": rng.uniform(-1, 1, 4).astype(np.float32),
        "y": rng.uniform(-1, 1, 4).astype(np.float32),
    }


def _mat(rng: np.random.Generator) -> dict:
    return {
        "x": rng.uniform(-1, 1, (2, 2)).astype(np.float32),
        "y": rng.uniform(-1, 1, (2, 2)).astype(np.float32),
    }


def cases(profile: Profile) -> list:
    def case(op, inputs, stmt, size="4"):
        return Case(FAMILY, op, size, inputs, stmt, ratio="time", tol=1e-6, tiny=True)

    return [
        case("add", _vec, {"*": "x + y"}),
        case("mul", _vec, {"*": "x * y"}),
        case("exp", _vec, {"numpy": "np.exp(x)", "burnbook": "x.exp()", "torch": "torch.exp(x)"}),
        case("sum_dim", _mat, {
            "numpy": "x.sum(axis=1, keepdims=True)",
            "burnbook": "x.sum_dim(1)",
            "torch": "x.sum(dim=1, keepdim=True)",
        }, size="2x2"),
        case("matmul", _mat, {"numpy": "x @ y", "burnbook": "x.matmul(y)", "torch": "x @ y"}, size="2x2"),
        # Informational (no bar).
        case("add_scalar", _vec, {"*": "x + 2.0"}),
        case("sum", _vec, {"numpy": "x.sum()", "burnbook": "x.sum()", "torch": "x.sum()"}),
        case("reshape", _mat, {"numpy": "x.reshape(4)", "burnbook": "x.reshape([4])", "torch": "x.reshape(4)"}),
    ]
