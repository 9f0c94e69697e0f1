"""Operators that make or re-arrange shapes: Expand, Tile, Pad, Split, Range,
Size, ConstantOfShape, EyeLike, Trilu, DepthToSpace, SpaceToDepth,
ReverseSequence, and the generators RandomNormal(Like), RandomUniform(Like)
and Bernoulli: emitters of the operator table (`table`).

A shape, pad or size input that is a constant becomes a literal (and an
output that depends on constants only is folded into a constant); one that
is a graph value is read at run time, so dynamic dims stay dynamic.
(`Upsample`, deprecated since opset 10, never reaches these emitters: the
upgrade to opset 13 turns it into `Resize`.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import inp
from ..graph import Graph, OnnxImportError, Value, elem_info
from ..lowering import Lowering, literal, quote
from ..table import op


# constants larger than this are built at run time rather than stored in the record
_FOLD_LIMIT = 1 << 16
_RANDOM = ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli")


def _fold(low: Lowering, node: Any, array: np.ndarray, kind: str) -> None:
    """Record the node's output as the constant `array`: nothing is emitted,
    and users read it as a literal or a `Param` field like any constant."""
    out = node.output[0]
    dtype = {"Float": "float32", "Int": "int64", "Bool": "bool"}[kind]
    array = np.asarray(array).astype(dtype)
    low.graph.values[out] = Value(out, kind, dtype, array.ndim, list(array.shape), array)


def _known(low: Lowering, name: str) -> Value | None:
    """What is known of a value, or None when not even its kind is."""
    v = low.graph.values.get(name) if name else None
    return v if v is not None and v.kind is not None else None


def _kind(low: Lowering, name: str) -> str | None:
    v = _known(low, name)
    return None if v is None else v.kind


def _rank(low: Lowering, name: str) -> int | None:
    v = _known(low, name)
    return None if v is None else v.rank


def _length(low: Lowering, name: str) -> int | None:
    """The number of entries of a 1-D shape/repeats input, when fixed."""
    v = _known(low, name)
    return v.shape[0] if v is not None and v.shape and isinstance(v.shape[0], int) else None


def _out_kind(graph: Graph, node: Any, a: dict, default: str | None) -> str | None:
    """The output's kind: as shape inference found it, else from a `dtype`
    attribute, else `default`."""
    v = graph.values.get(node.output[0])
    if v is not None and v.kind is not None:
        return v.kind
    info = elem_info(int(a["dtype"])) if "dtype" in a else None
    return info[0] if info else (None if "dtype" in a else default)


def _settle(low: Lowering, node: Any, kind: str | None, rank: int | None) -> None:
    """Record the output's kind and rank where shape inference left them
    unknown (it stops at shapes computed in the graph), so the nodes after
    this one can be translated."""
    out = node.output[0]
    v = low.graph.values.get(out)
    if kind is None or rank is None or (v is not None and v.kind is not None and v.rank is not None):
        return
    dtype = v.dtype if v is not None and v.kind == kind else {"Float": "float32", "Int": "int64", "Bool": "bool"}[kind]
    low.graph.values[out] = Value(out, kind, dtype, rank, [None] * rank)


def _scalar(low: Lowering, name: str) -> str:
    """A scalar input as source: a literal when constant, else the tensor."""
    const = low.const(name)
    if const is not None:
        value, kind = const.reshape(-1)[0], low.value(name).kind
        return literal(int(value) if kind == "Int" else (bool(value) if kind == "Bool" else np.float32(value)))
    return low.var(name)


def _anchor(low: Lowering) -> str:
    """A tensor the generated `forward` always has (the first graph input,
    else the first weight), whose backend and device new tensors take."""
    if low.graph.inputs:
        return low.names[low.graph.inputs[0]]
    return low.var(low.graph.initializers[0])


def _needs_anchor(graph: Graph, node: Any, a: dict) -> list[str]:
    if graph.inputs or graph.initializers:
        return []
    return [f"{node.op_type} makes a tensor from nothing, and the graph has no input or weight to take "
            "the backend and device from"]


# -- broadcasting and tiling ----------------------------------------------------------
@op("Expand")
def _expand(low: Lowering, node: Any, a: dict) -> None:
    x, shape = node.input[0], node.input[1]
    target, rank = low.const(shape), _rank(low, x)
    length = _length(low, shape) if target is None else target.size
    _settle(low, node, _kind(low, x),
            None if rank is None or length is None else max(rank, length))
    if target is None or rank is None:
        dims = low.ints(shape) if target is not None or shape in low.host else low.var(shape)
        low.bind(node, f"onnx_ops.expand({low.var(x)}, {dims})", "expand")
        return
    target = [int(v) for v in target.reshape(-1)]
    xs = low.shape(x)
    if xs is not None and np.broadcast_shapes(tuple(xs), tuple(target)) == tuple(xs):
        low.alias(node, low.var(x))
        return
    rank = max(rank, len(target), 1)
    # burnbook's expand keeps a size at -1; ONNX keeps it where the target says 1
    dims = [-1] * (rank - len(target)) + [-1 if v == 1 else v for v in target]
    low.bind(node, f"{low.aligned(x, rank)}.expand({literal(dims)})", "expand")


@op("Tile")
def _tile(low: Lowering, node: Any, a: dict) -> None:
    x, repeats = node.input[0], node.input[1]
    reps, rank = low.const(repeats), _rank(low, x)
    _settle(low, node, _kind(low, x), rank)
    if reps is None or rank is None:
        low.bind(node, f"onnx_ops.tile({low.var(x)}, {low.ints(repeats)})", "tile")
        return
    reps = [int(v) for v in reps.reshape(-1)]
    if len(reps) != rank or min(reps, default=1) < 0:
        raise OnnxImportError(f"Tile repeats {reps} do not fit an input of rank {rank}")
    expr = low.var(x)
    for d, r in enumerate(reps):
        if r != 1:
            expr += f".repeat({d}, {r})"
    if expr == low.var(x):
        low.alias(node, expr)
    else:
        low.bind(node, expr, "tile")


# -- padding --------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _check_pad(graph: Graph, node: Any, a: dict) -> list[str]:
    mode = _text(a.get("mode", "constant"))
    return [] if mode in _PAD_MODES else [f"Pad mode {mode!r} (burnbook pads with {', '.join(_PAD_MODES)})"]


@op("Pad", check=_check_pad)
def _pad(low: Lowering, node: Any, a: dict) -> None:
    x = low.var(node.input[0])
    mode = _text(a.get("mode", "constant"))
    # opset < 11 `pads`/`value` attributes arrive here as inputs: `graph.opset.upgrade` converted the model
    pads = low.ints(node.input[1])
    value = _scalar(low, inp(node, 2)) if inp(node, 2) else "0"
    axes = low.ints(inp(node, 3)) if inp(node, 3) else "None"
    known = _known(low, node.input[0])
    if known is not None and known.kind == "Float" and value == "0":
        value = "0.0"
    _settle(low, node, known.kind if known else None, known.rank if known else None)
    args = [x, pads, quote(mode)] + ([value] if mode == "constant" else []) + \
        ([f"axes={axes}"] if axes != "None" else [])
    low.bind(node, f"onnx_ops.pad_nd({', '.join(args)})", "pad")


# -- splitting ------------------------------------------------------------------------
def _check_split(graph: Graph, node: Any, a: dict) -> list[str]:
    if "num_outputs" in a and int(a["num_outputs"]) != len(node.output):
        return [f"Split num_outputs={a['num_outputs']} but the node has {len(node.output)} outputs"]
    return []


@op("Split", check=_check_split)
def _split(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    v = low.graph.values.get(x)
    # the rank may be unknown (split lengths computed in the graph): a negative axis is then resolved at run time
    rank = v.rank if v is not None and v.kind is not None else None
    axis = int(a.get("axis", 0))
    axis = axis + rank if axis < 0 and rank is not None else axis
    count = len(node.output)
    # the opset < 13 `split` attribute arrives here as an input: `graph.opset.upgrade` converted the model
    sizes = low.ints(node.input[1]) if inp(node, 1) else None
    xs = v.static_shape() if rank is not None else None
    n = xs[axis] if xs is not None else None
    if n is not None and sizes is None and n % count == 0 and n > 0:
        expr = f"{low.var(x)}.chunk({count}, {axis})"  # equal parts: Tensor's own call
    else:
        expr = f"onnx_ops.split({low.var(x)}, {axis}, {sizes or 'None'}, {count})"
    if count == 1:
        low.bind(node, f"{expr}[0]", "split")
    else:
        low.bind_many(node, expr, count, "split")
    if rank is not None:  # onnx infers nothing for the parts when the sizes are computed: they keep the rank
        for out in node.output:
            known = low.graph.values.get(out)
            if out and (known is None or known.rank is None):
                dims = [d if i != axis else None for i, d in enumerate(v.shape or [None] * rank)]
                low.graph.values[out] = Value(out, v.kind, v.dtype, rank, dims)


# -- values made from sizes -----------------------------------------------------------
@op("ConstantOfShape")
def _constant_of_shape(low: Lowering, node: Any, a: dict) -> None:
    shape = node.input[0]
    value = a.get("value")
    if value is not None:
        from onnx import numpy_helper

        array = np.asarray(numpy_helper.to_array(value)).reshape(-1)
        info = elem_info(value.data_type)
        if info is None:
            raise OnnxImportError(f"ConstantOfShape value of element type {value.data_type}, which burnbook "
                                  "tensors cannot hold")
        kind = info[0]
        fill = array[0].item()
    else:
        kind, fill = "Float", 0.0
    fill = bool(fill) if kind == "Bool" else (int(fill) if kind == "Int" else float(np.float32(fill)))
    dims = low.const(shape)
    _settle(low, node, kind, _length(low, shape))
    if dims is not None:
        dims = [int(v) for v in dims.reshape(-1)]
        if int(np.prod(dims, dtype=np.int64)) <= _FOLD_LIMIT or not (low.graph.inputs or low.graph.initializers):
            _fold(low, node, np.full(dims, fill), kind)
            return
        target, like = literal(dims), f", like={_anchor(low)}"
    elif shape in low.host:  # a shape read from x.dims(): no Int tensor in between
        target, like = low.host[shape][0], f", like={low.host[shape][1]}"
    else:
        target, like = low.var(shape), ""
    low.bind(node, f"onnx_ops.constant_of_shape({target}, {literal(fill)}, {quote(kind)}{like})",
             "constant_of_shape")


@op("Range")
def _range(low: Lowering, node: Any, a: dict) -> None:
    names = [node.input[i] for i in range(3)]
    kind = low.value(names[0]).kind
    _settle(low, node, kind, 1)
    consts = [low.const(n) for n in names]
    if all(c is not None for c in consts):
        s, lim, d = (c.reshape(-1)[0] for c in consts)
        if d == 0:
            raise OnnxImportError("Range delta is 0")
        count = max(int(np.ceil((float(lim) - float(s)) / float(d))), 0)
        if count <= _FOLD_LIMIT:
            _fold(low, node, s + np.arange(count) * d, kind)
            return
    args = ", ".join(_scalar(low, n) for n in names)
    if all(c is not None for c in consts):  # too long to store: from a tensor the model has
        args = ", ".join([low.var(names[0])] + [_scalar(low, n) for n in names[1:]])
    low.bind(node, f"onnx_ops.range_({args}, {quote(kind)})", "range")


@op("Size")
def _size(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    known = _known(low, x)
    shape = known.static_shape() if known is not None else None
    if shape is not None:
        _fold(low, node, np.asarray(int(np.prod(shape, dtype=np.int64))), "Int")
        return
    _settle(low, node, "Int", 0)
    low.bind(node, f"onnx_ops.size({low.var(x)})", "size")


@op("EyeLike")
def _eye_like(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    known = _known(low, x)
    kind = _out_kind(low.graph, node, a, known.kind if known else None)
    k = int(a.get("k", 0))
    shape = known.static_shape() if known is not None else None
    if known is not None and known.rank not in (None, 2):
        raise OnnxImportError(f"EyeLike needs a 2-D input, got rank {known.rank}")
    if kind is None:
        raise OnnxImportError(f"cannot tell the element type of value {x!r}; run onnx shape inference on the model")
    _settle(low, node, kind, 2)
    if shape is not None and shape[0] * shape[1] <= _FOLD_LIMIT:
        _fold(low, node, np.eye(shape[0], shape[1], k), kind)
        return
    low.bind(node, f"onnx_ops.eye_like({low.var(x)}, {k}, {quote(kind)})", "eye_like")


@op("Trilu")
def _trilu(low: Lowering, node: Any, a: dict) -> None:
    x, k = node.input[0], inp(node, 1)
    upper = bool(a.get("upper", 1))
    const = low.const(k) if k else np.zeros(1, dtype=np.int64)
    known = _known(low, x)
    if known is not None and known.rank is not None and known.rank < 2:
        raise OnnxImportError(f"Trilu needs rank >= 2, got rank {known.rank}")
    _settle(low, node, known.kind if known else None, known.rank if known else None)
    if const is None:
        low.bind(node, f"onnx_ops.trilu({low.var(x)}, {low.var(k)}, {literal(upper)})", "trilu")
        return
    diagonal = int(const.reshape(-1)[0])
    fn = "triu" if upper else "tril"
    low.bind(node, f"{low.var(x)}.{fn}({diagonal})" if diagonal else f"{low.var(x)}.{fn}()", fn)


# -- moving data between channels, space and time ------------------------------------
def _check_block_mode(graph: Graph, node: Any, a: dict) -> list[str]:
    mode = _text(a.get("mode", "DCR"))
    problems = [] if mode in ("DCR", "CRD") else [f"{node.op_type} mode {mode!r} (DCR or CRD)"]
    if int(a.get("blocksize", 0)) < 1:
        problems.append(f"{node.op_type} blocksize {a.get('blocksize')} (must be >= 1)")
    v = graph.values.get(node.input[0])
    if v is not None and v.rank is not None and v.rank != 4:
        problems.append(f"{node.op_type} of a rank-{v.rank} input (it takes [N, C, H, W])")
    return problems


@op("DepthToSpace", "SpaceToDepth", check=_check_block_mode)
def _depth_space(low: Lowering, node: Any, a: dict) -> None:
    fn = "depth_to_space" if node.op_type == "DepthToSpace" else "space_to_depth"
    mode = _text(a.get("mode", "DCR"))
    _settle(low, node, _kind(low, node.input[0]), 4)
    low.bind(node, f"onnx_ops.{fn}({low.var(node.input[0])}, {int(a['blocksize'])}, {quote(mode)})", fn)


@op("ReverseSequence")
def _reverse_sequence(low: Lowering, node: Any, a: dict) -> None:
    x, lens = node.input[0], node.input[1]
    known = _known(low, x)
    time_axis, batch_axis = int(a.get("time_axis", 0)), int(a.get("batch_axis", 1))
    if {time_axis, batch_axis} != {0, 1} or (known is not None and known.rank is not None and known.rank < 2):
        raise OnnxImportError(f"ReverseSequence takes time and batch axes 0 and 1 of a rank >= 2 input, got "
                              f"{time_axis} and {batch_axis} of rank {known.rank if known else '?'}")
    _settle(low, node, known.kind if known else None, known.rank if known else None)
    low.bind(node, f"onnx_ops.reverse_sequence({low.var(x)}, {low.ints(lens)}, {time_axis}, {batch_axis})",
             "reverse_sequence")


# -- generators -----------------------------------------------------------------------
def _check_random(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = _needs_anchor(graph, node, a) if not node.op_type.endswith("Like") and node.op_type != "Bernoulli" \
        else []
    kind = _out_kind(graph, node, a, "Float")
    if node.op_type != "Bernoulli" and kind != "Float":
        problems.append(f"{node.op_type} output of element type {a.get('dtype')} (burnbook draws Float values)")
    return problems


@op(*_RANDOM, check=_check_random)
def _random(low: Lowering, node: Any, a: dict) -> None:
    source = _known(low, node.input[0]) if node.input else None
    kind = _out_kind(low.graph, node, a, source.kind if source else "Float")
    if kind is None:
        raise OnnxImportError(f"cannot tell the element type of {node.op_type}'s output; run onnx shape "
                              "inference on the model")
    _settle(low, node, kind, len(a["shape"]) if "shape" in a else (source.rank if source else None))
    if node.op_type == "Bernoulli":
        low.bind(node, f"onnx_ops.bernoulli({low.var(node.input[0])}, {quote(kind)})", "bernoulli")
        return
    like, shape = (low.var(node.input[0]), "None") if node.op_type.endswith("Like") else \
        (_anchor(low), literal([int(v) for v in a["shape"]]))
    if node.op_type.startswith("RandomNormal"):
        args = f"{literal(np.float32(a.get('mean', 0.0)))}, {literal(np.float32(a.get('scale', 1.0)))}"
        low.bind(node, f"onnx_ops.random_normal({like}, {shape}, {args})", "random_normal")
    else:
        args = f"{literal(np.float32(a.get('low', 0.0)))}, {literal(np.float32(a.get('high', 1.0)))}"
        low.bind(node, f"onnx_ops.random_uniform({like}, {shape}, {args})", "random_uniform")
