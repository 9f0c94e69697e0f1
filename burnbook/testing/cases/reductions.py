"""Float reductions. They keep the rank, as Burn's do: `float_sum`,
`float_max`, `float_min` give shape (1,), the `_dim` forms leave size 1 at
`dim`, `float_argmax`/`float_argmin` give Int indices (inputs have no ties)."""

from __future__ import annotations

import numpy as np

from ..case import Case, distinct, fixed
from ._build import along_dim, unary

F = "reductions"


def _full(fn):
    return lambda x: np.asarray(fn(x)).reshape(1)


def _keep(fn):
    return lambda x, d: fn(x, axis=d, keepdims=True)


def _arg(fn):
    return lambda x, d: np.expand_dims(fn(x, axis=d), d).astype(np.int64)


CASES: list[Case] = [
    *unary(F, "float_sum", _full(np.sum), atol=1e-5),
    *unary(F, "float_max", _full(np.max)),
    *unary(F, "float_min", _full(np.min)),
    *along_dim(F, "float_sum_dim", _keep(np.sum), atol=1e-5),
    *along_dim(F, "float_mean_dim", _keep(np.mean)),
    *along_dim(F, "float_max_dim", _keep(np.max)),
    *along_dim(F, "float_min_dim", _keep(np.min)),
    *along_dim(F, "float_argmax", _arg(np.argmax), make=distinct),
    *along_dim(F, "float_argmin", _arg(np.argmin), make=distinct),
    Case("float_sum[many]", F, "float_sum", lambda rng: (rng.uniform(0, 1, 4096).astype(np.float32),),
         lambda B, d, x: B.float_sum(x), _full(np.sum), rtol=1e-5, atol=1e-3,
         note="4096 terms: a naive f32 running sum drifts; pairwise or wider sums do not"),
    Case("float_max[with -inf]", F, "float_max", fixed(np.array([-np.inf, -3.0, -2.5], np.float32)),
         lambda B, d, x: B.float_max(x), _full(np.max)),
]
