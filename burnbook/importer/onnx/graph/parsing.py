"""Reading an ONNX model: the file, shape inference, and what the code
generator needs to know about every value (kind, rank, static shape, and the
constant it holds, if any); initializers and `Constant` nodes are constants.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .check import check_einsum_equations
from .values import Graph, OnnxImportError, Value, elem_info, kind_of_array, require_onnx


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


def value_from_type(name: str, type_proto: Any) -> Value:
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
                kind, dtype = (v.kind, v.dtype) if v and v.kind else kind_of_array(arr)
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
        values[vi.name] = value_from_type(vi.name, vi.type)
    inits = record_constants(g, values)
    init_set = set(inits)
    inputs = [vi.name for vi in g.input if vi.name not in init_set]
    return Graph(
        name=g.name or "model", opset=default_opset(inferred), nodes=list(g.node), inputs=inputs,
        outputs=[vi.name for vi in g.output], values=values, initializers=inits,
    )


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
