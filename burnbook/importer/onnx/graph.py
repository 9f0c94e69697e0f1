"""Reading an ONNX model: opset upgrade, shape inference, and what the code
generator needs to know about every value (kind, rank, static shape, and the
constant it holds, if any).

The `onnx` package is an optional extra (`pip install burnbook[onnx]`); it
is imported here, lazily, and only when a model is imported.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MIN_OPSET = 13
"""Older models are upgraded to this opset with onnx's version converter
(opset 13 moved Squeeze/Unsqueeze/ReduceSum axes to inputs and fixed Softmax
to one axis; the generator reads both attribute and input forms)."""


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


def load_model(source: Any) -> Any:
    """A `ModelProto` from a path or an already loaded model."""
    onnx = require_onnx()
    if isinstance(source, onnx.ModelProto):
        return source
    path = os.fspath(source)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no ONNX file {path}")
    try:
        return onnx.load(path)
    except Exception as err:  # onnx raises DecodeError and others
        raise OnnxImportError(f"{path} is not a readable ONNX model: {err}") from err


def default_opset(model: Any) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise OnnxImportError("the model imports no version of the default ONNX opset ('' / 'ai.onnx')")


# terms of letters with at most one ellipsis each, comma-joined, then an optional output term
_EINSUM = re.compile(r"[A-Za-z]*(\.\.\.[A-Za-z]*)?(,[A-Za-z]*(\.\.\.[A-Za-z]*)?)*(->[A-Za-z]*(\.\.\.[A-Za-z]*)?)?")


def _all_nodes(graph: Any) -> Any:
    """Every node of a GraphProto, those of subgraphs (If, Loop, Scan) included."""
    for node in graph.node:
        yield node
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _all_nodes(sub)


def check_einsum_equations(model: Any) -> None:
    """Refuse a malformed Einsum equation before onnx sees the model: onnx's
    shape inference never returns on some (`"i.j->ij"`), so a crafted file
    would hang the importer instead of being refused."""
    for node in _all_nodes(model.graph):
        if node.op_type != "Einsum" or node.domain not in ("", "ai.onnx"):
            continue
        eq = next((a.s for a in node.attribute if a.name == "equation"), b"")
        text = eq.decode("utf-8", errors="replace").replace(" ", "")
        if not _EINSUM.fullmatch(text):
            name = node.name or (node.output[0] if node.output else "<no output>")
            raise OnnxImportError(f"node {ascii(name)}: Einsum equation {ascii(text)} is not of the form "
                                  "'ab,bc->ac' (letters, ',', at most one '...' per term, '->')")


def upgrade(model: Any) -> Any:
    """The model at opset >= MIN_OPSET: converted with onnx's version
    converter when older, or an error naming the minimum when that fails."""
    require_onnx()
    check_einsum_equations(model)
    opset = default_opset(model)
    if opset >= MIN_OPSET:
        return model
    try:
        from onnx import version_converter

        converted = version_converter.convert_version(model, MIN_OPSET)
    except Exception as err:
        raise OnnxImportError(
            f"the model uses opset {opset}; burnbook imports opset {MIN_OPSET} or newer, and onnx's "
            f"version converter could not upgrade it ({type(err).__name__}: {err}). Re-export it with "
            f"opset_version >= {MIN_OPSET}."
        ) from err
    if opset < 9:  # Scan's batch axis, which the converter drops
        from .ops_control import batched_scans

        converted = batched_scans(model, converted)
    return converted


def _value_from_type(name: str, type_proto: Any) -> Value:
    which = type_proto.WhichOneof("value")
    if which != "tensor_type":
        return Value(name, None, which, None)
    tt = type_proto.tensor_type
    info = elem_info(tt.elem_type)
    kind, dtype = info if info else (None, f"element type {tt.elem_type}")
    if not tt.HasField("shape"):
        return Value(name, kind, dtype, None)
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
    return Value(name, kind, dtype, len(dims), dims)


def _array(tensor: Any) -> np.ndarray:
    from onnx import numpy_helper

    try:
        return np.asarray(numpy_helper.to_array(tensor))
    except Exception as err:  # data that does not fit its dims, an unknown element type, ...
        raise OnnxImportError(f"tensor {tensor.name!r} cannot be read: {type(err).__name__}: {err}") from err


def record_constants(g: Any, values: dict[str, Value]) -> list[str]:
    """Enter the initializers and Constant nodes of GraphProto `g` into
    `values` as constants (kinds from declared types where known); the
    initializers' names, in order."""
    inits = []
    for t in g.initializer:
        arr = _array(t)
        info = elem_info(t.data_type)
        kind, dtype = info if info else (None, f"element type {t.data_type}")
        values[t.name] = Value(t.name, kind, dtype, arr.ndim, list(arr.shape), arr)
        inits.append(t.name)
    for node in g.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
            arr = _constant_value(node)
            if arr is not None:
                v = values.get(node.output[0])
                kind, dtype = (v.kind, v.dtype) if v and v.kind else _kind_of_array(arr)
                values[node.output[0]] = Value(node.output[0], kind, dtype, arr.ndim, list(arr.shape), arr)
    return inits


def parse(model: Any) -> Graph:
    """The `Graph` of a model (after `upgrade`): shapes inferred where onnx
    can, initializers and Constant nodes recorded as constants."""
    onnx = require_onnx()
    check_einsum_equations(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # inference is best effort; missing ranks are reported later
        inferred = model
    g = inferred.graph
    values: dict[str, Value] = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        values[vi.name] = _value_from_type(vi.name, vi.type)
    inits = record_constants(g, values)
    init_set = set(inits)
    inputs = [vi.name for vi in g.input if vi.name not in init_set]
    return Graph(
        name=g.name or "model", opset=default_opset(inferred), nodes=list(g.node), inputs=inputs,
        outputs=[vi.name for vi in g.output], values=values, initializers=inits,
    )


def _kind_of_array(arr: np.ndarray) -> tuple[str | None, str]:
    if arr.dtype == np.bool_:
        return "Bool", "bool"
    if arr.dtype.kind in "iu" or arr.dtype.name.startswith(("int", "uint")):  # ml_dtypes' int4 is kind "V"
        return "Int", arr.dtype.name
    if arr.dtype.kind == "f" or arr.dtype.name.startswith(("float", "bfloat")):
        return "Float", arr.dtype.name
    return None, "string" if arr.dtype.kind in "OSU" else arr.dtype.name  # no burnbook kind


def _constant_value(node: Any) -> np.ndarray | None:
    for attr in node.attribute:
        if attr.name == "value":
            return _array(attr.t)
        if attr.name == "value_float":
            return np.asarray(attr.f, dtype=np.float32)
        if attr.name == "value_int":
            return np.asarray(attr.i, dtype=np.int64)
        if attr.name == "value_floats":
            return np.asarray(list(attr.floats), dtype=np.float32)
        if attr.name == "value_ints":
            return np.asarray(list(attr.ints), dtype=np.int64)
        if attr.name in ("sparse_value", "value_string", "value_strings"):
            return None
    return None


def attrs(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values."""
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}
