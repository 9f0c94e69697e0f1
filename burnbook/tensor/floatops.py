"""Float-only ops: element-wise math, matmul, variance and precision
(`float_*` ops of the backend; an Int or Bool tensor gets a TypeError that
says to convert with `.float()`)."""

from __future__ import annotations

import numpy as np

from burnbook.backend.base import broadcast_shape
from .core import TensorBase
from .kind import Float, unavailable

_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


class FloatOps(TensorBase):
    """Float math: element-wise functions, matmul, variance, precision."""

    __slots__ = ()

    def exp(self):
        """Element-wise e**x."""
        if self._K is not Float:
            self._require_float("exp")
        return self._like(self._B.float_exp(self._p))

    def log(self):
        """Element-wise natural logarithm."""
        if self._K is not Float:
            self._require_float("log")
        return self._like(self._B.float_log(self._p))

    def log1p(self):
        """Element-wise log(1 + x), accurate near 0."""
        if self._K is not Float:
            self._require_float("log1p")
        return self._like(self._B.float_log1p(self._p))

    def erf(self):
        """Element-wise error function."""
        if self._K is not Float:
            self._require_float("erf")
        return self._like(self._B.float_erf(self._p))

    def sqrt(self):
        """Element-wise square root."""
        if self._K is not Float:
            self._require_float("sqrt")
        return self._like(self._B.float_sqrt(self._p))

    def recip(self):
        """Element-wise 1 / x (torch.reciprocal)."""
        if self._K is not Float:
            self._require_float("recip")
        return self._like(self._B.float_recip(self._p))

    def cos(self):
        """Element-wise cosine."""
        if self._K is not Float:
            self._require_float("cos")
        return self._like(self._B.float_cos(self._p))

    def sin(self):
        """Element-wise sine."""
        if self._K is not Float:
            self._require_float("sin")
        return self._like(self._B.float_sin(self._p))

    def tanh(self):
        """Element-wise hyperbolic tangent."""
        if self._K is not Float:
            self._require_float("tanh")
        return self._like(self._B.float_tanh(self._p))

    def sigmoid(self):
        """1 / (1 + e^-x), accurate on both tails (the backend's `float_sigmoid`;
        its gradient is y (1 - y) from the output, as in Burn and PyTorch)."""
        if self._K is not Float:
            unavailable("sigmoid", self._K)
        return self._like(self._B.float_sigmoid(self._p))

    def is_nan(self):
        """A Bool tensor, true where the value is NaN."""
        if self._K is not Float:
            return self.equal_elem(0).bool_and(self.equal_elem(1))
        return self.equal(self).bool_not()

    def contains_nan(self) -> bool:
        return bool(np.isnan(self.to_numpy()).any()) if self._K is Float else False

    def matmul(self, other):
        """Matrix product over the last two dims, `[..., m, k] @ [..., k, n]`,
        batch dims broadcast."""
        if type(other) is not type(self) or self._K is not Float or self._D < 2:
            self._require_float("matmul")
            self._check_other("matmul", other)
            raise ValueError(f"matmul: needs rank >= 2, got rank {self._D} ({self.dims()})")
        try:
            return self._like(self._B.float_matmul(self._p, other._p))
        except ValueError:
            # Checked only on failure, so the common path pays nothing.
            a, b = self.dims(), other.dims()
            if a[-1] != b[-2]:
                raise ValueError(
                    f"matmul: inner dims differ: lhs {a} has {a[-1]} columns, rhs {b} has {b[-2]} rows"
                ) from None
            broadcast_shape("matmul", a[:-2], b[:-2])
            raise

    def var(self, dim: int):
        """Unbiased variance along `dim` (divides by n - 1), size 1 at `dim`."""
        return self.var_mean(dim)[0]

    def var_bias(self, dim: int):
        """Biased variance along `dim` (divides by n)."""
        return self.var_mean_bias(dim)[0]

    def var_mean(self, dim: int):
        """(unbiased variance, mean) along `dim`."""
        return self._var_mean(dim, 1)

    def var_mean_bias(self, dim: int):
        return self._var_mean(dim, 0)

    def _var_mean(self, dim: int, correction: int):
        self._require_float("var")
        d = self._dim(dim, "var")
        n = self.dims()[d]
        mean = self.mean_dim(d)
        centred = self.sub(mean)
        var = centred.mul(centred).sum_dim(d).div_scalar(max(n - correction, 0) or float("nan"))
        return var, mean

    # -- precision -------------------------------------------------------------------
    def cast(self, dtype):
        """The values in another float type: "f16", "f32", "f64" or a NumPy dtype."""
        self._require_float("cast")
        target = np.dtype(_DTYPES.get(str(dtype), dtype))
        if target.kind != "f":
            raise TypeError(f"cast: {dtype} is not a float type; use .int() or .bool()")
        if self._B.float_dtype(self._p) == target:
            return self
        return self._like(self._B.float_cast(self._p, target))

    def to_full_precision(self):
        """The tensor in f32 (Burn's full precision) when it is stored in f16."""
        self._require_float("to_full_precision")
        return self.cast(np.float32) if self._B.float_dtype(self._p) == np.float16 else self

    @classmethod
    def from_full_precision(cls, tensor):
        """Back from full precision to this type's float (f32 by default)."""
        return cls._wrap(tensor._p) if tensor._dtype() == np.float32 else tensor.cast(np.float32)
