"""Element types shared by the `.pt` and safetensors readers.

NumPy has no bfloat16, so both readers read bf16 values as raw 16-bit words
and widen them here. A bf16 number is the upper half of the f32 number with
the same sign, exponent and leading mantissa bits, so shifting the word left
by 16 bits gives that f32 exactly: no rounding happens.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bf16_bits_to_f32", "describe"]


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 values stored as uint16 words (any shape) -> the equal float32 values."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def describe(array: np.ndarray) -> str:
    """`"f32 [2, 3]"`: Burn's short element-type name and the shape, for messages."""
    kind = array.dtype.kind
    name = "bool" if kind == "b" else f"{kind}{array.dtype.itemsize * 8}"
    return f"{name} {list(array.shape)}"
