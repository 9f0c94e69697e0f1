"""`float_matmul`: `[..., m, k] @ [..., k, n]`, batch dims broadcasting
(size 1 on either side), with degenerate sizes (m = 1, n = 1, k = 1)."""

from __future__ import annotations

import numpy as np

from ..case import Case, shape_id, uniform

F = "arithmetic"

_PAIRS = (((3, 4), (4, 5)), ((1, 3), (3, 1)), ((4, 1), (1, 3)), ((2, 3, 4), (2, 4, 2)),
          ((2, 3, 4), (1, 4, 2)), ((1, 2, 3), (3, 3, 5)), ((2, 1, 3, 4), (1, 2, 4, 2)))

CASES: list[Case] = [
    Case(f"float_matmul[{shape_id(a, b)}]", F, "float_matmul",
         (lambda a, b: lambda rng: (uniform(rng, a), uniform(rng, b)))(a, b),
         lambda B, d, x, y: B.float_matmul(x, y), np.matmul, rtol=1e-5, atol=1e-5)
    for a, b in _PAIRS
]
