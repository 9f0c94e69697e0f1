"""Comparisons, reductions, clamping and kind conversions of tensors.

Comparisons give Bool tensors; reductions keep the rank, as Burn. Each op
calls the backend's op of the tensor's kind (`float_greater` or
`int_greater`); an op the kind lacks is a TypeError that names it.
"""

from __future__ import annotations

import numpy as np

from .arithmetic import NUMBER
from .core import TensorBase
from .kind import Bool, Float, Int, unavailable


class NumericOps(TensorBase):
    """Comparison (Bool results), reductions, clamp and `int`/`float`/`bool`."""

    __slots__ = ()

    # -- comparison (Bool results) ----------------------------------------------------
    def _compared(self, op: str, fn, other):
        """`fn(self, other)` on two primitives as a Bool tensor (the caller
        has checked `other`); a broadcast failure names both shapes."""
        try:
            return self._as(fn(self._p, other._p), kind=Bool)
        except ValueError:
            self._broadcast_error(op, other)
            raise

    # A comparison takes a tensor or a number, so each `*_elem` form (Burn's
    # name for the number) is the same method.
    def equal(self, other):
        """Element-wise `self == other` (a tensor or a number), a Bool tensor."""
        B, K = self._B, self._K
        if isinstance(other, NUMBER):
            if K is Bool:
                return self._bool_equal_elem(other)
            fn = B.float_equal_elem if K is Float else B.int_equal_elem if K is Int else unavailable("equal_elem", K)
            return self._as(fn(self._p, self._scalar(other, "equal")), kind=Bool)
        if type(other) is not type(self):
            self._check_other("equal", other)
        return self._compared("equal", B.float_equal if K is Float else B.int_equal if K is Int else B.bool_equal,
                              other)

    def _bool_equal_elem(self, value):
        """A Bool tensor's `equal_elem(True)` is its own values, `equal_elem(False)`
        their negation (Burn's default `bool_equal_elem`)."""
        if isinstance(value, (float, np.floating)) or value not in (0, 1):
            raise TypeError(f"equal_elem: a Bool tensor compares with True or False, got {value!r}")
        B = self._B
        return self._as(self._p if value else B.bool_not(self._p), kind=Bool)

    def greater(self, other):
        """Element-wise `self > other` (a tensor or a number), a Bool tensor."""
        B, K = self._B, self._K
        if isinstance(other, NUMBER):
            fn = (B.float_greater_elem if K is Float else B.int_greater_elem if K is Int
                  else unavailable("greater_elem", K))
            return self._as(fn(self._p, self._scalar(other, "greater")), kind=Bool)
        if type(other) is not type(self):
            self._check_other("greater", other)
        fn = B.float_greater if K is Float else B.int_greater if K is Int else unavailable("greater", K)
        return self._compared("greater", fn, other)

    def greater_equal(self, other):
        """Element-wise `self >= other` (a tensor or a number), a Bool tensor."""
        B, K = self._B, self._K
        if isinstance(other, NUMBER):
            fn = (B.float_greater_equal_elem if K is Float else B.int_greater_equal_elem if K is Int
                  else unavailable("greater_equal_elem", K))
            return self._as(fn(self._p, self._scalar(other, "greater_equal")), kind=Bool)
        if type(other) is not type(self):
            self._check_other("greater_equal", other)
        fn = (B.float_greater_equal if K is Float else B.int_greater_equal if K is Int
              else unavailable("greater_equal", K))
        return self._compared("greater_equal", fn, other)

    def lower(self, other):
        """Element-wise `self < other` (a tensor or a number), a Bool tensor."""
        B, K = self._B, self._K
        if isinstance(other, NUMBER):
            fn = B.float_lower_elem if K is Float else B.int_lower_elem if K is Int else unavailable("lower_elem", K)
            return self._as(fn(self._p, self._scalar(other, "lower")), kind=Bool)
        if type(other) is not type(self):
            self._check_other("lower", other)
        fn = B.float_lower if K is Float else B.int_lower if K is Int else unavailable("lower", K)
        return self._compared("lower", fn, other)

    def lower_equal(self, other):
        """Element-wise `self <= other` (a tensor or a number), a Bool tensor."""
        B, K = self._B, self._K
        if isinstance(other, NUMBER):
            fn = (B.float_lower_equal_elem if K is Float else B.int_lower_equal_elem if K is Int
                  else unavailable("lower_equal_elem", K))
            return self._as(fn(self._p, self._scalar(other, "lower_equal")), kind=Bool)
        if type(other) is not type(self):
            self._check_other("lower_equal", other)
        fn = (B.float_lower_equal if K is Float else B.int_lower_equal if K is Int
              else unavailable("lower_equal", K))
        return self._compared("lower_equal", fn, other)

    equal_elem = equal
    greater_elem = greater
    greater_equal_elem = greater_equal
    lower_elem = lower
    lower_equal_elem = lower_equal

    def not_equal(self, other):
        return self.equal(other).bool_not()

    def not_equal_elem(self, s):
        return self.equal(s).bool_not()

    # -- reductions (rank kept) ------------------------------------------------------
    def sum(self):
        """The sum of every element, shape [1]."""
        B, K = self._B, self._K
        return self._as((B.float_sum if K is Float else B.int_sum if K is Int else unavailable("sum", K))(self._p),
                        rank=1)

    def mean(self):
        """The mean of every element, shape [1] (Int: truncated)."""
        n = self.num_elements()
        return self.sum().div(n) if n else self.sum().div(float("nan"))

    def sum_dim(self, dim: int):
        """The sum along `dim`, which keeps size 1."""
        B, K = self._B, self._K
        fn = B.float_sum_dim if K is Float else B.int_sum_dim if K is Int else unavailable("sum_dim", K)
        return self._like(fn(self._p, self._dim(dim, "sum_dim")))

    def mean_dim(self, dim: int):
        """The mean along `dim`, which keeps size 1 (Int: the truncated
        quotient of `sum_dim`; the protocol has no `int_mean_dim`)."""
        d = self._dim(dim, "mean_dim")
        K = self._K
        if K is Int:
            return self.sum_dim(d).div(max(self.dims()[d], 1))
        fn = self._B.float_mean_dim if K is Float else unavailable("mean_dim", K)
        return self._like(fn(self._p, d))

    def _nonempty(self, op: str) -> None:
        if self.num_elements() == 0:
            raise ValueError(f"{op}: the tensor is empty (shape {self.dims()})")

    def max(self):
        """The largest element, shape [1]."""
        self._nonempty("max")
        B, K = self._B, self._K
        return self._as((B.float_max if K is Float else B.int_max if K is Int else unavailable("max", K))(self._p),
                        rank=1)

    def min(self):
        """The smallest element, shape [1]."""
        self._nonempty("min")
        B, K = self._B, self._K
        return self._as((B.float_min if K is Float else B.int_min if K is Int else unavailable("min", K))(self._p),
                        rank=1)

    def _extreme_dim(self, dim: int, op: str) -> int:
        # Only the reduced dim must be non-empty: [0, 3] reduced over dim 1
        # is an empty [0, 1], as in torch.
        d = self._dim(dim, op)
        if self.dims()[d] == 0:
            raise ValueError(f"{op}: dim {dim} has size 0 (shape {self.dims()}); the extreme of nothing is undefined")
        return d

    def max_dim(self, dim: int):
        """The largest value along `dim`, which keeps size 1."""
        B, K = self._B, self._K
        fn = B.float_max_dim if K is Float else B.int_max_dim if K is Int else unavailable("max_dim", K)
        return self._like(fn(self._p, self._extreme_dim(dim, "max_dim")))

    def min_dim(self, dim: int):
        """The smallest value along `dim`, which keeps size 1."""
        B, K = self._B, self._K
        fn = B.float_min_dim if K is Float else B.int_min_dim if K is Int else unavailable("min_dim", K)
        return self._like(fn(self._p, self._extreme_dim(dim, "min_dim")))

    def argmax(self, dim: int):
        """The Int index of the largest value along `dim`, which keeps size 1."""
        B, K = self._B, self._K
        fn = B.float_argmax if K is Float else B.int_argmax if K is Int else unavailable("argmax", K)
        return self._as(fn(self._p, self._extreme_dim(dim, "argmax")), kind=Int)

    def argmin(self, dim: int):
        """The Int index of the smallest value along `dim`, which keeps size 1."""
        B, K = self._B, self._K
        fn = B.float_argmin if K is Float else B.int_argmin if K is Int else unavailable("argmin", K)
        return self._as(fn(self._p, self._extreme_dim(dim, "argmin")), kind=Int)

    def max_dim_with_indices(self, dim: int):
        """(max values, their Int indices) along `dim`, both with size 1 there."""
        idx = self.argmax(dim)
        return self.gather(dim, idx), idx

    def min_dim_with_indices(self, dim: int):
        idx = self.argmin(dim)
        return self.gather(dim, idx), idx

    def clamp(self, min=None, max=None):  # noqa: A002 - Burn's names
        """Each value limited to [min, max]; either bound may be None."""
        if min is not None and max is not None and min > max:
            raise ValueError(f"clamp: min {min} is greater than max {max}")
        lo = None if min is None else self._scalar(min, "clamp")
        hi = None if max is None else self._scalar(max, "clamp")
        B, K = self._B, self._K
        fn = B.float_clamp if K is Float else B.int_clamp if K is Int else unavailable("clamp", K)
        return self._like(fn(self._p, lo, hi))

    def clamp_min(self, min):  # noqa: A002
        return self.clamp(min, None)

    def clamp_max(self, max):  # noqa: A002
        return self.clamp(None, max)

    # -- conversion ----------------------------------------------------------------
    def int(self):
        """An Int tensor (Float values truncated toward zero)."""
        if self._K is Int:
            return self
        if self._K is Bool:
            return self._as(self._B.bool_into_int(self._p), kind=Int)
        return self._as(self._B.float_into_int(self._p), kind=Int)

    def float(self):
        if self._K is Float:
            return self
        if self._K is Bool:
            return self._as(self._B.bool_into_float(self._p), kind=Float)
        return self._as(self._B.int_into_float(self._p), kind=Float)

    def bool(self):
        """A Bool tensor: true where the value is not zero."""
        if self._K is Bool:
            return self
        return self.equal_elem(0).bool_not()

    def sign(self):
        """-1, 0 or 1 by the sign of each element; NaN stays NaN (as in PyTorch
        and Rust's `signum`), never a silent 0."""
        if self._K is Int:
            return self.greater_elem(0).int() - self.lower_elem(0).int()
        out = self.greater_elem(0).float() - self.lower_elem(0).float()
        return out.mask_fill(self.is_nan(), float("nan"))
