"""Runtime helpers for ONNX `Cast` to types burnbook tensors do not hold:
floats rounded to a narrower float type (f16, bf16, the float8 and float4
types) but kept in f32, and ints wrapped to a narrower int type but kept in
i64, as the cast there and back would give.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnbook.tensor import Bool, Tensor


def round_float(x: Any, dtype: str, saturate: bool = True, round_mode: str = "nearest") -> Any:
    """The values of `x` rounded to a narrower float type (`"float16"`,
    `"bfloat16"`, `"float8_e4m3fn"`, ...) but kept in f32, as ONNX `Cast`
    to that type then back would give (`saturate` and, for the
    exponent-only `float8_e8m0fnu`, `round_mode` as in `Cast`). Gradients
    pass straight through, as if the cast were the identity."""
    target = _np_dtype(dtype)
    values = x.to_numpy().astype(np.float32)
    if saturate and dtype.startswith(("float8", "float4")) and dtype != "float8_e8m0fnu":
        import ml_dtypes

        info = ml_dtypes.finfo(target)
        # saturation maps out-of-range values, infinities included, to the largest finite one
        values = np.clip(values, float(info.min), float(info.max))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if dtype == "float8_e8m0fnu":
            rounded = _e8m0(values, round_mode, saturate)
        else:
            rounded = values.astype(target).astype(np.float32)
        finite = np.isfinite(rounded) & np.isfinite(x.to_numpy())
        # straight through: the forward value is exactly `rounded` (x - x is
        # 0; NaN where x is not finite, replaced below), the gradient that of
        # the identity
        out = type(x).from_data(np.where(finite, rounded, 0.0), x.device()) + (x - x.detach())
    if not finite.all():  # overflow to inf, or NaN: those values are constants
        mask = Tensor[x.backend, x.ndim, Bool].from_data(~finite, x.device())
        out = out.mask_where(mask, type(x).from_data(np.where(finite, 0.0, rounded), x.device()))
    return out


def _e8m0(values: np.ndarray, round_mode: str, saturate: bool) -> np.ndarray:
    """float8_e8m0fnu, an exponent without sign or mantissa: 2**e for e in
    -127..127, NaN for negatives and NaN. Worked out on exponents rather than
    through ml_dtypes, whose conversion of 0 (to 2**-127, a float32
    denormal) goes wrong once a library turns on flush-to-zero (Taichi)."""
    mantissa, exponent = np.frexp(values)  # values = mantissa * 2**exponent, mantissa in [0.5, 1)
    exponent = exponent.astype(np.float64) - 1.0  # now values = (2 * mantissa) * 2**exponent, 2m in [1, 2)
    if round_mode == "up":
        exponent += (mantissa != 0.5)
    elif round_mode == "nearest":
        exponent += (mantissa >= 0.75)
    exponent = np.where(values == 0, -127.0, exponent)
    exponent = np.where(np.isposinf(values), np.inf, exponent)
    if saturate:  # out of range: the largest value, 2**127
        exponent = np.minimum(exponent, 127.0)
    out = np.ldexp(1.0, np.clip(np.nan_to_num(exponent), -127, 127).astype(np.int64))
    # e8m0 has no infinity and no sign: overflow, negatives and NaN are NaN
    out = np.where((exponent > 127) | np.isnan(values) | (values < 0), np.nan, out)
    return out.astype(np.float32)


def _np_dtype(name: str) -> np.dtype:
    """A NumPy dtype by name, looking in ml_dtypes for the narrow ones."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def wrap_int(x: Any, dtype: str) -> Any:
    """Int values converted to a narrower integer type the way ONNX `Cast`
    does (wrapping modulo 2**bits), kept in i64."""
    target = _np_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return type(x).from_data(x.to_numpy().astype(target).astype(np.int64), x.device())
