"""Arithmetic of Float and Int tensors: `+ - * / %`, powers, negation.

A binary op takes a tensor of the same backend, kind and rank (sizes
broadcast where one side is 1) or a Python number, and calls the backend's
op of the tensor's kind (`float_add` or `int_add`, `float_add_scalar` or
`int_add_scalar`); Bool tensors have no arithmetic.
"""

from __future__ import annotations

import numpy as np

from .core import TensorBase
from .kind import Float, Int, unavailable

# What a binary op takes as its scalar operand.
NUMBER = (int, float, np.number, bool)


class ArithmeticOps(TensorBase):
    """`add`, `sub`, `mul`, `div`, `remainder`, powers and their operators."""

    __slots__ = ()

    # -- helpers -----------------------------------------------------------------
    def _unsupported(self, op: str, other):
        """Raise for an operand that is neither a same-type tensor nor a number."""
        self._check_other(op, other)
        raise TypeError(f"{op}: unsupported operand {other!r}")

    def _no_zero_divisor(self, op: str, sign: str, other) -> None:
        """Integer division or remainder by zero has no value (Burn panics,
        Python raises), so it raises `ZeroDivisionError` naming the op, the
        shapes and where the zero is; Float division keeps IEEE inf/NaN."""
        if isinstance(other, TensorBase):
            zeros = other._B.bool_into_data(other._B.int_equal_elem(other._p, 0))
            if zeros.any():
                where = [int(i) for i in np.argwhere(zeros)[0]]
                raise ZeroDivisionError(
                    f"{op}: integer division by zero: Int tensor {self.dims()} {sign} Int tensor "
                    f"{other.dims()}, which holds 0 at index {where}; mask or clamp the divisor first "
                    "(Float division gives inf or NaN instead)")
        elif self._scalar(other, op) == 0:
            raise ZeroDivisionError(f"{op}: integer division by zero: Int tensor {self.dims()} {sign} 0")

    # -- arithmetic (operators map here) -----------------------------------------------
    def add(self, other):
        """Element-wise `self + other` (a tensor or a number)."""
        B, K = self._B, self._K
        if type(other) is type(self):
            fn = B.float_add if K is Float else B.int_add if K is Int else unavailable("add", K)
            try:
                return self._like(fn(self._p, other._p))
            except ValueError:
                self._broadcast_error("add", other)
                raise
        if type(other) is float and K is Float:   # the common scalar, without `_scalar`'s checks
            return self._like(B.float_add_scalar(self._p, other))
        if isinstance(other, NUMBER):
            fn = B.float_add_scalar if K is Float else B.int_add_scalar if K is Int else unavailable("add_scalar", K)
            return self._like(fn(self._p, self._scalar(other, "add")))
        return self._unsupported("add", other)

    def sub(self, other):
        """Element-wise `self - other` (a tensor or a number)."""
        B, K = self._B, self._K
        if type(other) is type(self):
            fn = B.float_sub if K is Float else B.int_sub if K is Int else unavailable("sub", K)
            try:
                return self._like(fn(self._p, other._p))
            except ValueError:
                self._broadcast_error("sub", other)
                raise
        if type(other) is float and K is Float:
            return self._like(B.float_sub_scalar(self._p, other))
        if isinstance(other, NUMBER):
            fn = B.float_sub_scalar if K is Float else B.int_sub_scalar if K is Int else unavailable("sub_scalar", K)
            return self._like(fn(self._p, self._scalar(other, "sub")))
        return self._unsupported("sub", other)

    def mul(self, other):
        """Element-wise `self * other` (a tensor or a number)."""
        B, K = self._B, self._K
        if type(other) is type(self):
            fn = B.float_mul if K is Float else B.int_mul if K is Int else unavailable("mul", K)
            try:
                return self._like(fn(self._p, other._p))
            except ValueError:
                self._broadcast_error("mul", other)
                raise
        if type(other) is float and K is Float:
            return self._like(B.float_mul_scalar(self._p, other))
        if isinstance(other, NUMBER):
            fn = B.float_mul_scalar if K is Float else B.int_mul_scalar if K is Int else unavailable("mul_scalar", K)
            return self._like(fn(self._p, self._scalar(other, "mul")))
        return self._unsupported("mul", other)

    def div(self, other):
        """Element-wise division; Int division truncates toward zero, and an
        Int divisor holding 0 raises `ZeroDivisionError`."""
        B, K = self._B, self._K
        if K is Int and (type(other) is type(self) or isinstance(other, NUMBER)):
            self._no_zero_divisor("div", "/", other)
        if type(other) is type(self):
            fn = B.float_div if K is Float else B.int_div if K is Int else unavailable("div", K)
            try:
                return self._like(fn(self._p, other._p))
            except ValueError:
                self._broadcast_error("div", other)
                raise
        if isinstance(other, NUMBER):
            fn = B.float_div_scalar if K is Float else B.int_div_scalar if K is Int else unavailable("div_scalar", K)
            return self._like(fn(self._p, self._scalar(other, "div")))
        return self._unsupported("div", other)

    def remainder(self, other):
        """Int remainder with the divisor's sign, as Burn's `remainder`,
        `torch.remainder` and Python's `%`: `-7 % 2 == 1`. Division truncates
        instead (`-7 / 2 == -3`), so `(a / b) * b + a % b == a` only holds
        where a and b have the same sign. A zero divisor raises."""
        if self._K is not Int:
            raise TypeError(f"remainder is an Int operation here; this tensor's kind is {self._K.name}")
        if isinstance(other, NUMBER):
            b = self._scalar(other, "remainder")
            self._no_zero_divisor("remainder", "%", b)
            r = self.sub(self._like(self._B.int_div_scalar(self._p, b)).mul_scalar(b))
            wrong_sign = r.lower_elem(0) if b > 0 else r.greater_elem(0)
            return r.mask_where(wrong_sign, r.add_scalar(b))
        if type(other) is not type(self):
            self._check_other("remainder", other)
        if other.dims() != self.dims():
            self._broadcast_error("remainder", other)
        self._no_zero_divisor("remainder", "%", other)
        r = self.sub(self._like(self._B.int_div(self._p, other._p)).mul(other))
        wrong_sign = r.lower_elem(0).bool_and(other.greater_elem(0)).bool_or(
            r.greater_elem(0).bool_and(other.lower_elem(0)))
        return r.mask_where(wrong_sign, r.add(other))

    def remainder_scalar(self, s):
        return self.remainder(s)

    def add_scalar(self, s):
        B, K = self._B, self._K
        fn = B.float_add_scalar if K is Float else B.int_add_scalar if K is Int else unavailable("add_scalar", K)
        return self._like(fn(self._p, self._scalar(s, "add_scalar")))

    def sub_scalar(self, s):
        B, K = self._B, self._K
        fn = B.float_sub_scalar if K is Float else B.int_sub_scalar if K is Int else unavailable("sub_scalar", K)
        return self._like(fn(self._p, self._scalar(s, "sub_scalar")))

    def mul_scalar(self, s):
        B, K = self._B, self._K
        fn = B.float_mul_scalar if K is Float else B.int_mul_scalar if K is Int else unavailable("mul_scalar", K)
        return self._like(fn(self._p, self._scalar(s, "mul_scalar")))

    def div_scalar(self, s):
        return self.div(s)

    def neg(self):
        B, K = self._B, self._K
        return self._like((B.float_neg if K is Float else B.int_neg if K is Int else unavailable("neg", K))(self._p))

    def abs(self):
        B, K = self._B, self._K
        return self._like((B.float_abs if K is Float else B.int_abs if K is Int else unavailable("abs", K))(self._p))

    # -- powers (computed in Float) --------------------------------------------------
    def powf(self, other):
        """Element-wise power with a Float exponent tensor (Int tensors are cast)."""
        if self._K is Int:
            return self.float().powf(other.float() if isinstance(other, TensorBase) else other)
        if isinstance(other, TensorBase) and other._K is not Float:
            other = other.float()
        B, K = self._B, self._K
        if type(other) is type(self):   # so both are Float
            try:
                return self._like(B.float_powf(self._p, other._p))
            except ValueError:
                self._broadcast_error("powf", other)
                raise
        if isinstance(other, NUMBER):
            fn = B.float_powf_scalar if K is Float else unavailable("powf_scalar", K)
            return self._like(fn(self._p, self._scalar(other, "powf")))
        return self._unsupported("powf", other)

    def powi(self, other):
        """Element-wise power with an Int exponent tensor."""
        if self._K is Int:
            return self.powf(other).int()
        return self.powf(other.float() if isinstance(other, TensorBase) else other)

    def powf_scalar(self, s: float):
        K = self._K
        if K is Int:
            return self.float().powf_scalar(s)
        fn = self._B.float_powf_scalar if K is Float else unavailable("powf_scalar", K)
        return self._like(fn(self._p, float(s)))

    def powi_scalar(self, s: int):
        K = self._K
        if K is Int:
            return self.float().powf_scalar(int(s)).int()
        fn = self._B.float_powf_scalar if K is Float else unavailable("powf_scalar", K)
        return self._like(fn(self._p, float(int(s))))

    # -- operators ------------------------------------------------------------------------
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
