"""What the importer knows of an ONNX model before it runs: `Graph` (the
nodes in order, every value) and `Value` (kind, rank, static shape, the
constant it holds), the element types burnbook tensors can hold, and
`OnnxImportError`, the one error every stage raises.

The `onnx` package is an optional extra (`pip install burnbook[onnx]`); it
is imported lazily, and only when a model is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


class OnnxImportError(ValueError):
    """A model the importer cannot translate; the message names every reason."""


def require_onnx() -> Any:
    """The `onnx` module, or an ImportError saying how to install it."""
    try:
        import onnx
    except ImportError as err:
        raise ImportError("ONNX import needs the onnx package: pip install 'burnbook[onnx]'") from err
    return onnx


# ONNX TensorProto element types -> (burnbook kind name, NumPy/ml_dtypes name)
_ELEM: dict[int, tuple[str, str]] = {
    1: ("Float", "float32"), 2: ("Int", "uint8"), 3: ("Int", "int8"), 4: ("Int", "uint16"),
    5: ("Int", "int16"), 6: ("Int", "int32"), 7: ("Int", "int64"), 9: ("Bool", "bool"),
    10: ("Float", "float16"), 11: ("Float", "float64"), 12: ("Int", "uint32"), 13: ("Int", "uint64"),
    16: ("Float", "bfloat16"), 17: ("Float", "float8_e4m3fn"), 18: ("Float", "float8_e4m3fnuz"),
    19: ("Float", "float8_e5m2"), 20: ("Float", "float8_e5m2fnuz"), 21: ("Int", "uint4"), 22: ("Int", "int4"),
    23: ("Float", "float4_e2m1fn"), 24: ("Float", "float8_e8m0fnu"), 25: ("Int", "uint2"), 26: ("Int", "int2"),
}


def elem_info(elem_type: int) -> tuple[str, str] | None:
    """(kind, dtype name) of an ONNX element type, or None when burnbook has
    no kind for it (strings, complex numbers)."""
    return _ELEM.get(elem_type)


def kind_of_array(arr: np.ndarray) -> tuple[str | None, str]:
    if arr.dtype == np.bool_:
        return "Bool", "bool"
    if arr.dtype.kind in "iu" or arr.dtype.name.startswith(("int", "uint")):  # ml_dtypes' int4 is kind "V"
        return "Int", arr.dtype.name
    if arr.dtype.kind == "f" or arr.dtype.name.startswith(("float", "bfloat")):
        return "Float", arr.dtype.name
    return None, "string" if arr.dtype.kind in "OSU" else arr.dtype.name  # no burnbook kind


@dataclass
class Value:
    """What is known of one ONNX value before the model runs."""

    name: str
    kind: str | None                 # "Float", "Int", "Bool"; None when unsupported
    dtype: str | None                # the ONNX element type as a NumPy name
    rank: int | None                 # ONNX rank (0 for scalars)
    shape: list | None = None        # dims, None where unknown
    const: np.ndarray | None = None  # the value, for initializers and Constant nodes

    def static_shape(self) -> list[int] | None:
        if self.shape is None or any(not isinstance(d, int) for d in self.shape):
            return None
        return list(self.shape)


@dataclass
class Graph:
    """A model ready for code generation: nodes in order and every value."""

    name: str
    opset: int
    nodes: list
    inputs: list[str]
    outputs: list[str]
    values: dict[str, Value] = field(default_factory=dict)
    initializers: list[str] = field(default_factory=list)


def attrs(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values."""
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}
