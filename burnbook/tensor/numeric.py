"""Numeric ops (Float and Int): arithmetic, comparison, reduction, indexing.

Binary ops take a tensor of the same backend, kind and rank (sizes broadcast
where one side is 1) or a Python number. Reductions keep the rank, as Burn.
"""

from __future__ import annotations

import numpy as np

from .core import TensorBase
from .data import ValueRangeError, int_scalar
from .kind import Bool, Float, Int

_Number = (int, float, np.number, bool)


class NumericOps:
    __slots__ = ()

    # -- helpers -----------------------------------------------------------------
    def _scalar(self, s, op: str):
        if self._K is Int:
            return int_scalar(s, op)
        try:
            return float(s)
        except OverflowError:
            raise ValueRangeError(f"{op}: the scalar {s} is too large for any float dtype") from None

    def _no_zero_divisor(self, op: str, sign: str, other) -> None:
        """Integer division or remainder by zero has no value (Burn panics,
        Python raises), so it raises `ZeroDivisionError` naming the op, the
        shapes and where the zero is; Float division keeps IEEE inf/NaN."""
        if isinstance(other, TensorBase):
            zeros = other._B.bool_into_data(other._ops.equal_elem(other._p, 0))
            if zeros.any():
                where = [int(i) for i in np.argwhere(zeros)[0]]
                raise ZeroDivisionError(
                    f"{op}: integer division by zero: Int tensor {self.dims()} {sign} Int tensor "
                    f"{other.dims()}, which holds 0 at index {where}; mask or clamp the divisor first "
                    "(Float division gives inf or NaN instead)")
        elif self._scalar(other, op) == 0:
            raise ZeroDivisionError(f"{op}: integer division by zero: Int tensor {self.dims()} {sign} 0")

    def _binary(self, op: str, other, scalar_op: str | None = None):
        if type(other) is type(self):
            try:
                return self._like(getattr(self._ops, op)(self._p, other._p))
            except ValueError:
                self._broadcast_error(op, other)
                raise
        if isinstance(other, _Number) and scalar_op is not None:
            return self._like(getattr(self._ops, scalar_op)(self._p, self._scalar(other, op)))
        self._check_other(op, other)
        raise TypeError(f"{op}: unsupported operand {other!r}")

    def _compare(self, op: str, other):
        if isinstance(other, _Number):
            p = getattr(self._ops, op + "_elem")(self._p, self._scalar(other, op))
        else:
            if type(other) is not type(self):
                self._check_other(op, other)
            try:
                p = getattr(self._ops, op)(self._p, other._p)
            except ValueError:
                self._broadcast_error(op, other)
                raise
        return self._as(p, kind=Bool)

    # -- arithmetic (operators map here) -----------------------------------------------
    def add(self, other):
        if type(other) is type(self):
            try:
                return self._like(self._ops.add(self._p, other._p))
            except ValueError:
                self._broadcast_error("add", other)
                raise
        if type(other) is float and self._K is Float:
            return self._like(self._ops.add_scalar(self._p, other))
        return self._binary("add", other, "add_scalar")

    def sub(self, other):
        if type(other) is type(self):
            try:
                return self._like(self._ops.sub(self._p, other._p))
            except ValueError:
                self._broadcast_error("sub", other)
                raise
        if type(other) is float and self._K is Float:
            return self._like(self._ops.sub_scalar(self._p, other))
        return self._binary("sub", other, "sub_scalar")

    def mul(self, other):
        if type(other) is type(self):
            try:
                return self._like(self._ops.mul(self._p, other._p))
            except ValueError:
                self._broadcast_error("mul", other)
                raise
        if type(other) is float and self._K is Float:
            return self._like(self._ops.mul_scalar(self._p, other))
        return self._binary("mul", other, "mul_scalar")

    def div(self, other):
        """Element-wise division; Int division truncates toward zero, and an
        Int divisor holding 0 raises `ZeroDivisionError`."""
        if self._K is Int and (type(other) is type(self) or isinstance(other, _Number)):
            self._no_zero_divisor("div", "/", other)
        return self._binary("div", other, "div_scalar")

    def remainder(self, other):
        """Int remainder with the divisor's sign, as Burn's `remainder`,
        `torch.remainder` and Python's `%`: `-7 % 2 == 1`. Division truncates
        instead (`-7 / 2 == -3`), so `(a / b) * b + a % b == a` only holds
        where a and b have the same sign. A zero divisor raises."""
        if self._K is not Int:
            raise TypeError(f"remainder is an Int operation here; this tensor's kind is {self._K.name}")
        if isinstance(other, _Number):
            b = self._scalar(other, "remainder")
            self._no_zero_divisor("remainder", "%", b)
            r = self.sub(self._like(self._ops.div_scalar(self._p, b)).mul_scalar(b))
            wrong_sign = r.lower_elem(0) if b > 0 else r.greater_elem(0)
            return r.mask_where(wrong_sign, r.add_scalar(b))
        if type(other) is not type(self):
            self._check_other("remainder", other)
        if other.dims() != self.dims():
            self._broadcast_error("remainder", other)
        self._no_zero_divisor("remainder", "%", other)
        r = self.sub(self._like(self._ops.div(self._p, other._p)).mul(other))
        wrong_sign = r.lower_elem(0).bool_and(other.greater_elem(0)).bool_or(
            r.greater_elem(0).bool_and(other.lower_elem(0)))
        return r.mask_where(wrong_sign, r.add(other))

    def remainder_scalar(self, s):
        return self.remainder(s)

    def add_scalar(self, s):
        return self._like(self._ops.add_scalar(self._p, self._scalar(s, "add_scalar")))

    def sub_scalar(self, s):
        return self._like(self._ops.sub_scalar(self._p, self._scalar(s, "sub_scalar")))

    def mul_scalar(self, s):
        return self._like(self._ops.mul_scalar(self._p, self._scalar(s, "mul_scalar")))

    def div_scalar(self, s):
        return self.div(s)

    def neg(self):
        return self._like(self._ops.neg(self._p))

    def abs(self):
        return self._like(self._ops.abs(self._p))

    def powf(self, other):
        """Element-wise power with a Float exponent tensor (Int tensors are cast)."""
        if self._K is Int:
            return self.float().powf(other.float() if isinstance(other, TensorBase) else other)
        if isinstance(other, TensorBase) and other._K is not Float:
            other = other.float()
        return self._binary("powf", other, "powf_scalar")

    def powi(self, other):
        """Element-wise power with an Int exponent tensor."""
        if self._K is Int:
            return self.powf(other).int()
        return self.powf(other.float() if isinstance(other, TensorBase) else other)

    def powf_scalar(self, s: float):
        if self._K is Int:
            return self.float().powf_scalar(s)
        return self._like(self._ops.powf_scalar(self._p, float(s)))

    def powi_scalar(self, s: int):
        if self._K is Int:
            return self.float().powf_scalar(int(s)).int()
        return self._like(self._ops.powf_scalar(self._p, float(int(s))))

    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = div
    __mod__ = remainder
    __neg__ = neg
    __abs__ = abs

    def __radd__(self, s):
        return self.add(s)

    def __rsub__(self, s):
        return self.neg().add(s)

    def __rmul__(self, s):
        return self.mul(s)

    def __rtruediv__(self, s):
        return self.full_like(s).div(self)

    def __rmod__(self, s):
        return self.full_like(s).remainder(self)

    def __pow__(self, other):
        if isinstance(other, int) and self._K is Int:
            return self.powi_scalar(other)
        return self.powf(other)

    def __rpow__(self, s):
        return self.full_like(s).powf(self)

    def __matmul__(self, other):
        return self.matmul(other)

    # -- comparison (Bool results) ----------------------------------------------------
    def equal(self, other):
        return self._compare("equal", other)

    def not_equal(self, other):
        return self._compare("equal", other).bool_not()

    def equal_elem(self, s):
        return self._compare("equal", s)

    def not_equal_elem(self, s):
        return self._compare("equal", s).bool_not()

    def greater(self, other):
        return self._compare("greater", other)

    def greater_elem(self, s):
        return self._compare("greater", s)

    def greater_equal(self, other):
        return self._compare("greater_equal", other)

    def greater_equal_elem(self, s):
        return self._compare("greater_equal", s)

    def lower(self, other):
        return self._compare("lower", other)

    def lower_elem(self, s):
        return self._compare("lower", s)

    def lower_equal(self, other):
        return self._compare("lower_equal", other)

    def lower_equal_elem(self, s):
        return self._compare("lower_equal", s)

    # -- reductions (rank kept) ------------------------------------------------------
    def sum(self):
        """The sum of every element, shape [1]."""
        return self._as(self._ops.sum(self._p), rank=1)

    def mean(self):
        """The mean of every element, shape [1] (Int: truncated)."""
        n = self.num_elements()
        return self.sum().div(n) if n else self.sum().div(float("nan"))

    def sum_dim(self, dim: int):
        return self._like(self._ops.sum_dim(self._p, self._dim(dim, "sum_dim")))

    def mean_dim(self, dim: int):
        d = self._dim(dim, "mean_dim")
        if self._K is Int:
            return self.sum_dim(d).div(max(self.dims()[d], 1))
        return self._like(self._ops.mean_dim(self._p, d))

    def _nonempty(self, op: str) -> None:
        if self.num_elements() == 0:
            raise ValueError(f"{op}: the tensor is empty (shape {self.dims()})")

    def max(self):
        self._nonempty("max")
        return self._as(self._ops.max(self._p), rank=1)

    def min(self):
        self._nonempty("min")
        return self._as(self._ops.min(self._p), rank=1)

    def _extreme_dim(self, dim: int, op: str) -> int:
        # Only the reduced dim must be non-empty: [0, 3] reduced over dim 1
        # is an empty [0, 1], as in torch.
        d = self._dim(dim, op)
        if self.dims()[d] == 0:
            raise ValueError(f"{op}: dim {dim} has size 0 (shape {self.dims()}); the extreme of nothing is undefined")
        return d

    def max_dim(self, dim: int):
        return self._like(self._ops.max_dim(self._p, self._extreme_dim(dim, "max_dim")))

    def min_dim(self, dim: int):
        return self._like(self._ops.min_dim(self._p, self._extreme_dim(dim, "min_dim")))

    def argmax(self, dim: int):
        return self._as(self._ops.argmax(self._p, self._extreme_dim(dim, "argmax")), kind=Int)

    def argmin(self, dim: int):
        return self._as(self._ops.argmin(self._p, self._extreme_dim(dim, "argmin")), kind=Int)

    def max_dim_with_indices(self, dim: int):
        """(max values, their Int indices) along `dim`, both with size 1 there."""
        idx = self.argmax(dim)
        return self.gather(dim, idx), idx

    def min_dim_with_indices(self, dim: int):
        idx = self.argmin(dim)
        return self.gather(dim, idx), idx

    def clamp(self, min=None, max=None):  # noqa: A002 - Burn's names
        if min is not None and max is not None and min > max:
            raise ValueError(f"clamp: min {min} is greater than max {max}")
        lo = None if min is None else self._scalar(min, "clamp")
        hi = None if max is None else self._scalar(max, "clamp")
        return self._like(self._ops.clamp(self._p, lo, hi))

    def clamp_min(self, min):  # noqa: A002
        return self.clamp(min, None)

    def clamp_max(self, max):  # noqa: A002
        return self.clamp(None, max)

    # -- masks and indices -------------------------------------------------------------
    def _check_mask(self, op: str, mask) -> None:
        if not isinstance(mask, TensorBase) or mask._K is not Bool:
            raise TypeError(f"{op}: the mask must be a Bool tensor, got {type(mask).__name__}")
        if mask._B is not self._B or mask._D != self._D:
            raise ValueError(f"{op}: mask {mask.dims()} must have this tensor's backend and rank ({self.dims()})")

    def mask_where(self, mask, value):
        """`value` where `mask` is true, this tensor elsewhere (torch.where(mask, value, self))."""
        self._check_mask("mask_where", mask)
        if type(value) is not type(self):
            self._check_other("mask_where", value)
        try:
            return self._like(self._ops.mask_where(self._p, mask._p, value._p))
        except ValueError:
            from burnbook.backend.base import broadcast_shape

            broadcast_shape("mask_where", broadcast_shape("mask_where", self.dims(), mask.dims()), value.dims())
            raise

    def mask_fill(self, mask, value):
        self._check_mask("mask_fill", mask)
        try:
            return self._like(self._ops.mask_fill(self._p, mask._p, self._scalar(value, "mask_fill")))
        except ValueError:
            self._broadcast_error("mask_fill", mask)
            raise

    def _check_indices(self, op: str, indices, rank: int | None = None) -> None:
        if not isinstance(indices, TensorBase) or indices._K is not Int:
            raise TypeError(f"{op}: indices must be an Int tensor, got {type(indices).__name__}")
        if indices._B is not self._B:
            raise TypeError(f"{op}: indices are on backend {indices._B.name()}, the tensor on {self._B.name()}")
        if rank is not None and indices._D != rank:
            raise ValueError(f"{op}: indices must have rank {rank}, got rank {indices._D}")

    def _check_bounds(self, op: str, indices, size: int, dim: int) -> None:
        if indices.num_elements() == 0:
            return
        idx = indices.to_numpy()
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= size:
            raise IndexError(f"{op}: index {lo if lo < 0 else hi} is out of bounds for dim {dim} of size {size}")

    def gather(self, dim: int, indices):
        """Values at `indices` along `dim` (torch.gather); output has indices' shape."""
        d = self._dim(dim, "gather")
        self._check_indices("gather", indices, self._D)
        dims, idims = self.dims(), indices.dims()
        if any(i > s for k, (i, s) in enumerate(zip(idims, dims)) if k != d):
            raise ValueError(f"gather: indices {idims} exceed the tensor {dims} outside dim {d}")
        self._check_bounds("gather", indices, dims[d], d)
        return self._like(self._ops.gather(d, self._p, indices._p))

    def scatter(self, dim: int, indices, values):
        """Add `values` into this tensor at `indices` along `dim` (torch.scatter_add)."""
        d = self._dim(dim, "scatter")
        self._check_indices("scatter", indices, self._D)
        self._check_other("scatter", values)
        if values.dims() != indices.dims():
            raise ValueError(f"scatter: values {values.dims()} and indices {indices.dims()} must have the same shape")
        self._check_bounds("scatter", indices, self.dims()[d], d)
        return self._like(self._ops.scatter(d, self._p, indices._p, values._p))

    def select(self, dim: int, indices):
        """The slices at `indices` (a 1-D Int tensor) along `dim` (torch.index_select)."""
        d = self._dim(dim, "select")
        self._check_indices("select", indices, 1)
        self._check_bounds("select", indices, self.dims()[d], d)
        return self._like(self._ops.select(self._p, d, indices._p))

    def select_assign(self, dim: int, indices, values):
        """Add `values` into the slices at `indices` along `dim`."""
        d = self._dim(dim, "select_assign")
        self._check_indices("select_assign", indices, 1)
        self._check_other("select_assign", values)
        expect = self.dims()
        expect[d] = indices.dims()[0]
        if values.dims() != expect:
            raise ValueError(f"select_assign: values have shape {values.dims()}, expected {expect}")
        self._check_bounds("select_assign", indices, self.dims()[d], d)
        return self._like(self._ops.select_assign(self._p, d, indices._p, values._p))

    # -- triangles ---------------------------------------------------------------
    def _triangle_mask(self, diagonal: int, upper: bool):
        if self._D < 2:
            raise ValueError(f"{'triu' if upper else 'tril'}: needs rank >= 2, got rank {self._D}")
        dims = self.dims()
        rows, cols = np.indices(dims[-2:])
        keep = (cols - rows >= diagonal) if upper else (cols - rows <= diagonal)
        mask = np.broadcast_to(~keep, dims).copy()
        return type(self)._specialise(self._B, self._D, Bool).from_data(mask, self.device())

    def triu(self, diagonal: int = 0):
        """Keep the upper triangle of the last two dims (from `diagonal` up)."""
        return self.mask_fill(self._triangle_mask(diagonal, True), 0)

    def tril(self, diagonal: int = 0):
        return self.mask_fill(self._triangle_mask(diagonal, False), 0)

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

    def one_hot_indices(self, num_classes: int):
        """[n] indices -> [n, num_classes] one-hot rows, of this tensor's kind."""
        if self._D != 1:
            raise ValueError(f"one_hot: expects a rank-1 tensor of indices, got rank {self._D}")
        idx = self.to_numpy().astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= num_classes):
            raise IndexError(f"one_hot: index {int(idx.max() if idx.max() >= num_classes else idx.min())} "
                             f"is out of range for {num_classes} classes")
        out = np.zeros((idx.size, num_classes), dtype=self._K.default_dtype)
        out[np.arange(idx.size), idx] = 1
        return type(self)._specialise(self._B, 2, self._K).from_data(out, self.device())


def one_hot_constructor(cls, index: int, num_classes: int, device=None):
    """Burn's `Tensor::one_hot(index, num_classes, device)`: a [num_classes]
    Float tensor with a single 1 at `index`."""
    if not 0 <= index < num_classes:
        raise IndexError(f"one_hot: index {index} is out of range for {num_classes} classes")
    out = np.zeros(num_classes, dtype=np.float32)
    out[index] = 1
    return cls._specialise(cls._B, 1, Float).from_data(out, device)

