"""Runtime helpers for the ONNX reductions: `reduce` (ReduceSum,
ReduceMean) and `reduce_ext` (ReduceMax, ReduceMin, ReduceProd, ReduceL1,
ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare) over any axes,
empty sets reducing to the operation's identity, and `saturate_reduction`,
which keeps a narrow int reduction's result at its type's bounds as
onnxruntime does.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Int, Tensor

from .host import axis_index


# -- ReduceSum, ReduceMean --------------------------------------------------------------
def reduce(x: Any, op: str, axes: Sequence[int] | None, keepdims: bool, rank: int,
           noop_with_empty_axes: bool = False) -> Any:
    """ONNX `ReduceSum`/`ReduceMean` over `axes` of a tensor of ONNX rank
    `rank`: no (or empty) axes mean every dim, or nothing at all with
    `noop_with_empty_axes`; dims are kept with size 1 when `keepdims`."""
    if not axes:
        if noop_with_empty_axes:
            return x
        axes = list(range(rank))
    axes = sorted(a + rank if a < 0 else a for a in axes)
    dims = x.dims()
    if rank == 0:
        return x
    if op == "mean" and any(dims[a] == 0 for a in axes):
        raise ValueError(f"ReduceMean over an empty dim: shape {dims}, axes {axes}")
    if len(axes) > 1 and axes[-1] - axes[0] == len(axes) - 1 and 0 not in dims:
        # One run of adjacent dims: merged into one and reduced in one call
        # (a global average pool's [N, C, H, W] -> [N, C, 1, 1]: one reduction
        # over H*W contiguous values instead of two strided ones).
        first, last = axes[0], axes[-1] + 1
        merged = x.reshape(dims[:first] + [math.prod(dims[first:last])] + dims[last:])
        x = _sum_or_mean_dim(merged, op, first).reshape(dims[:first] + [1] * len(axes) + dims[last:])
    else:
        for a in axes:
            x = _sum_or_mean_dim(x, op, a)
    if keepdims:
        return x
    out = [d for i, d in enumerate(x.dims()) if i not in axes]
    return x.reshape(out or [1])


def _sum_or_mean_dim(x: Any, op: str, dim: int) -> Any:
    """`sum_dim`/`mean_dim`, with the sum over an empty dim being zeros."""
    dims = x.dims()
    if dims[dim] == 0:
        out = dims[:dim] + [1] + dims[dim + 1:]
        return type(x).zeros(out, x.device())
    return getattr(x, f"{op}_dim")(dim)


_REDUCE_OPS = ("max", "min", "prod", "l1", "l2", "log_sum", "log_sum_exp", "sum_square")


_INT64 = np.iinfo(np.int64)


# -- ReduceMax, ReduceProd, ReduceL2, ... -- ------------------------------------------------------------------------
def _identity(x: Any, op: str) -> float | int:
    """What a reduction of nothing gives: ONNX's value for an empty set."""
    if op == "max":
        return int(_INT64.min) if x.kind is Int else -math.inf
    if op == "min":
        return int(_INT64.max) if x.kind is Int else math.inf
    return 1 if op == "prod" else 0


def _prod_dim(x: Any, dim: int) -> Any:
    """The product over `dim` (size kept as 1), by halving: the first half of
    the dim times the second, an odd last slice carried along, about log2(n)
    multiplications in all."""
    n = x.dims()[dim]
    while n > 1:
        half = n // 2
        paired = x.narrow(dim, 0, half) * x.narrow(dim, half, half)
        x = paired if n == 2 * half else Tensor.cat([paired, x.narrow(dim, 2 * half, 1)], dim)
        n = x.dims()[dim]
    return x


def _reduce_dim(x: Any, op: str, dim: int) -> Any:
    """One dim reduced with `op` ("sum", "max", "min", "prod"), kept with
    size 1; an empty dim gives the op's identity."""
    dims = x.dims()
    if dims[dim] == 0:
        return type(x).full(dims[:dim] + [1] + dims[dim + 1:], _identity(x, op), x.device())
    if op == "prod":
        return _prod_dim(x, dim)
    return getattr(x, f"{op}_dim")(dim)


def reduce_ext(x: Any, op: str, axes: Sequence[int] | None, keepdims: bool, rank: int,
               noop_with_empty_axes: bool = False) -> Any:
    """ONNX `ReduceMax`, `ReduceMin`, `ReduceProd`, `ReduceL1`, `ReduceL2`,
    `ReduceLogSum`, `ReduceLogSumExp` and `ReduceSumSquare` (`op` is "max",
    "min", "prod", "l1", "l2", "log_sum", "log_sum_exp", "sum_square") over
    `axes` of a tensor of ONNX rank `rank`. No (or empty) axes mean every
    dim, or with `noop_with_empty_axes` no dim at all (the element-wise part
    still applies, as in onnxruntime and ONNX's reference: ReduceL1 gives
    |x|, ReduceSumSquare x*x); an empty set reduces to the op's identity
    (-inf for a max, 0 for a sum...)."""
    if op not in _REDUCE_OPS:
        raise ValueError(f"reduce_ext: unknown reduction {op!r} (one of {', '.join(_REDUCE_OPS)})")
    if not axes:
        axes = [] if noop_with_empty_axes else list(range(rank))
    axes = sorted({axis_index(int(a), max(rank, 1), f"Reduce {op}") for a in axes}) if rank else []
    if x.kind is Bool:  # only max/min take booleans: any (false for nothing) and all (true for nothing)
        # the axes are resolved by now: empty means no dim, not every dim
        count = reduce_ext((x if op == "max" else x.bool_not()).int(), "l1", axes, keepdims, rank, True)
        return count.greater_elem(0) if op == "max" else count.equal_elem(0)
    back_to_int = x.kind is Int and op in ("l2", "log_sum", "log_sum_exp")
    if back_to_int:  # ONNX computes these in the float domain and casts back
        x = x.float()
    if op == "log_sum_exp":
        out = _log_sum_exp(x, axes)
    else:
        if op == "l1":
            x = x.abs()
        elif op in ("l2", "sum_square"):
            x = x * x
        base = op if op in ("max", "min", "prod") else "sum"
        for a in axes:
            x = _reduce_dim(x, base, a)
        out = x.sqrt() if op == "l2" else x.log() if op == "log_sum" else x
    if back_to_int:
        out = out.int()
    if keepdims or not axes:
        return out
    kept = [d for i, d in enumerate(out.dims()) if i not in axes]
    return out.reshape(kept or [1])


SATURATED_ABOVE = 2.0 ** 40
"""Beyond this magnitude a float product or sum of squares decides the
saturated bound alone; below it the i64 result is exact (no wrap before
2**63). Constant folding (`fold.py`) uses the same rule."""


def saturate_reduction(exact: Any, approx: Any, lo: int, hi: int) -> Any:
    """A narrow-int ReduceProd or ReduceSumSquare as onnxruntime gives it:
    the exact value saturated to [lo, hi]. `exact` is the Int reduction,
    which wraps in i64 once the true value passes 2**63 ((-2**31)**3 wraps
    to 0); `approx` is the same reduction in floats, whose sign and size are
    right however large the value. Where |approx| > 2**40 the result is the
    bound of approx's sign; elsewhere `exact` clamped."""
    big = approx.abs().greater_elem(SATURATED_ABOVE)
    up = big.bool_and(approx.greater_elem(0.0))
    down = big.bool_and(approx.lower_elem(0.0))
    return exact.clamp(lo, hi).mask_fill(up, hi).mask_fill(down, lo)


def _log_sum_exp(x: Any, axes: list[int]) -> Any:
    """log(sum(exp(x))) shifted by the maximum, which is exact and does not
    overflow; where the maximum is infinite, the shift is left out."""
    peak = x
    for a in axes:
        peak = _reduce_dim(peak, "max", a)
    peak = peak.detach()  # a constant shift: the gradient is softmax's either way
    peak = peak.mask_fill(peak.abs().equal_elem(math.inf), 0.0)
    shifted = (x - peak).exp()
    for a in axes:
        shifted = _reduce_dim(shifted, "sum", a)
    return shifted.log() + peak
