"""Square f32 matmul."""

from __future__ import annotations

import numpy as np

from ..measurement import Case
from ..profiles import Profile

FAMILY = "matmul"
TITLE = "Matmul (square, f32)"
INTRO = (
    "`[n, n] @ [n, n]` in f32, values uniform in [-1, 1); GFLOP/s counts "
    "2n^3 flops. NumPy calls its BLAS (see the machine section), PyTorch its "
    "own (MKL / oneDNN). Ratios are throughputs: higher is better."
)


def _inputs(n: int):
    def make(rng: np.random.Generator) -> dict:
        return {
            "x": rng.uniform(-1, 1, (n, n)).astype(np.float32),
            "y": rng.uniform(-1, 1, (n, n)).astype(np.float32),
        }

    return make


def cases(profile: Profile) -> list:
    return [
        Case(FAMILY, "matmul", str(n), _inputs(n),
             {"numpy": "x @ y", "burnbook": "x.matmul(y)", "torch": "x @ y"},
             work=2.0 * n ** 3, unit="GFLOP/s", tol=1e-4)
        for n in profile.matmul_sizes
    ]
