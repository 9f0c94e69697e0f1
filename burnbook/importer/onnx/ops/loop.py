"""ONNX Loop: an emitter of the operator table (`table`), built on the helpers of `control`.

A Loop's trip count and condition are usually known only when the model
runs, so it becomes a real loop in the generated forward:

    y_in = y                                   # the loop-carried values
    y_out_steps = []                           # one list per scan output
    loop1_i = 0
    while onnx_ops.loop_continues(loop1_i, loop1_count, loop1_cond):
        ...                                    # the body's nodes, as usual
        y_out_steps = y_out_steps + [scan_out]
        loop1_cond, y_in, loop1_i = cond_out, y_out, loop1_i + 1
    res_scan = onnx_ops.loop_stack(y_out_steps, ...)

`guard` admits exactly this shape of `while`. The body reads values of the
enclosing graph directly. Loop-carried sequences and optionals are refused:
burnbook tensors hold neither.
"""

from __future__ import annotations

from typing import Any

from ..args import inp
from ..graph import Graph, Value
from ..graph.subgraphs import live_ids, register_subgraph
from ..lowering import Lowering, identifier, literal, quote
from ..table import op
from .control import body_locals, check_body, emit_body, forget_branch


def _feeds(graph: Graph, node: Any) -> list:
    """What the body's inputs receive: the iteration number (int64 scalar),
    the condition (bool scalar), then each carried value's element type and
    rank (its dims may change from one iteration to the next)."""
    feeds: list = [("int64", []), ("bool", [])]
    for name in node.input[2:]:
        v = graph.values.get(name)
        feeds.append(None if v is None or v.dtype is None or v.rank is None else (v.dtype, [None] * v.rank))
    return feeds


def _type_body_inputs(graph: Graph, body: Any, feeds: list) -> None:
    """Types for body inputs the file leaves without a rank (shape inference
    of the body alone types only the values its nodes compute)."""
    for vi, feed in zip(body.input, feeds):
        v = graph.values.get(vi.name)
        if feed is None or (v is not None and v.rank is not None):
            continue
        dtype, shape = feed
        graph.values[vi.name] = Value(vi.name, _kind_of(dtype), dtype, len(shape), list(shape))


def _kind_of(dtype: str) -> str | None:
    if dtype == "bool":
        return "Bool"
    if dtype.startswith(("int", "uint")):
        return "Int"
    return "Float" if dtype.startswith(("float", "bfloat")) else None


def _check_loop(graph: Graph, node: Any, a: dict) -> list[str]:
    body = a["body"]
    n_carried = len(node.input) - 2
    problems = []
    if len(body.input) != n_carried + 2:
        problems.append(f"the body has {len(body.input)} inputs; a Loop with {n_carried} loop-carried values "
                        f"needs {n_carried + 2} (iteration number, condition, the carried values)")
    if len(body.output) < n_carried + 1:
        problems.append(f"the body has {len(body.output)} outputs; it needs the condition and "
                        f"{n_carried} loop-carried values first")
    for name, vi in zip(node.input[2:], body.input[2:]):
        v = graph.values.get(name)
        inner = vi.type.WhichOneof("value")
        if (v is not None and v.kind is None and v.dtype in ("sequence_type", "optional_type", "map_type")) \
                or inner in ("sequence_type", "optional_type", "map_type"):
            what = (v.dtype if v is not None and v.kind is None and v.dtype else inner).replace("_type", "")
            problems.append(f"loop-carried value {name!r} is of {what} type; burnbook carries only tensors "
                            "through a Loop (no sequence or optional types)")
    if not any(node.input):
        problems.append("a Loop with no trip count, no condition and no loop-carried values")
    if problems:
        return problems
    feeds = _feeds(graph, node)
    _type_body_inputs(graph, body, feeds)
    problems = check_body(graph, "Loop body", body, feeds)
    _type_body_inputs(graph, body, feeds)
    if not problems:
        _type_outputs(graph, node, body)
    return problems


def _type_outputs(graph: Graph, node: Any, body: Any) -> None:
    """Types for the Loop's outputs where the model's shape inference found
    none: a final carried value as the body gives it, a scan output with the
    iterations' axis (of unknown length) in front."""
    n_carried = len(node.input) - 2
    for k, (out, inner) in enumerate(zip(node.output, body.output[1:])):
        known, v = graph.values.get(out), graph.values.get(inner.name)
        if not out or (known is not None and known.rank is not None) or v is None or v.rank is None:
            continue
        shape = list(v.shape) if v.shape is not None else [None] * v.rank
        if k >= n_carried:
            shape.insert(0, None)
        graph.values[out] = Value(out, v.kind, v.dtype, len(shape), shape)


@op("Loop", check=_check_loop)
def _loop(low: Lowering, node: Any, a: dict) -> None:
    """A `while` block in the forward: the trip count and condition are
    checked on the host before each iteration, the body's nodes are emitted
    once inside it, and the scan outputs are stacked after it."""
    body = a["body"]
    n_carried = len(node.input) - 2
    trip, cond = inp(node, 0), inp(node, 1)
    feeds = _feeds(low.graph, node)
    register_subgraph(low.graph, body, feeds)
    _type_body_inputs(low.graph, body, feeds)
    tag = low.numbered("loop")
    like = low.var(next(n for n in list(node.input[2:]) + [trip, cond] if n))
    if not trip:
        count = "None"
    elif low.const(trip) is not None:
        count = literal(int(low.const(trip).reshape(-1)[0]))
    else:
        count = f"{tag}_count"
        low.emit(f"{count} = onnx_ops.loop_trip_count({low.var(trip)})")
    it_name, cond_name = body.input[0].name, body.input[1].name
    cond_var = f"{tag}_cond" if cond else None
    if cond:
        low.emit(f"{cond_var} = {low.var(cond)}")
    carried = []
    for vi, name in zip(body.input[2:], node.input[2:]):
        var = low.new_name(identifier(vi.name, "carried"))
        low.emit(f"{var} = {low.var(name)}")
        carried.append(var)
    scans = []
    for out in body.output[1 + n_carried:]:
        acc = low.new_name(identifier(out.name, "scan") + "_steps")
        low.emit(f"{acc} = []")
        scans.append(acc)
    counter = f"{tag}_i"
    low.emit(f"{counter} = 0")

    names, host = dict(low.names), dict(low.host)
    low.emit(f"while onnx_ops.loop_continues({counter}, {count}, {cond_var or 'None'}):")
    outer_indent = low.indent
    low.indent += "    "
    used = {o.name for o in body.output[0 if cond else 1:]}
    # without a `cond` input the body's condition output is ignored: what only it needs is not
    # emitted; `used` grows with what the live nodes read (the iteration number, the condition)
    live = live_ids(list(body.node), used)
    dead = {id(inner) for inner in body.node} - live
    low.fused.update(dead)
    try:
        if it_name in used:
            low.names[it_name] = low.new_name(identifier(it_name, "iteration"))
            low.emit(f"{low.names[it_name]} = onnx_ops.loop_iteration({counter}, {like})")
        if cond:
            low.names[cond_name] = cond_var
        elif cond_name in used:
            low.names[cond_name] = f"{tag}_true"
            low.emit(f"{tag}_true = onnx_ops.loop_true({like})")
        for vi, var in zip(body.input[2:], carried):
            low.names[vi.name] = var
        emit_body(low, body, body_locals(low, body))
        outs = [low.var(o.name) if k or cond else "" for k, o in enumerate(body.output)]
        # scan outputs first: one may be a carried input itself, which the update below replaces
        for acc, expr in zip(scans, outs[1 + n_carried:]):
            low.emit(f"{acc} = {acc} + [{expr}]")
        targets = ([cond_var] if cond else []) + carried + [counter]
        values = ([outs[0]] if cond else []) + outs[1:1 + n_carried] + [f"{counter} + 1"]
        low.emit(f"{', '.join(targets)} = {', '.join(values)}")
    finally:
        low.indent = outer_indent
        low.fused.difference_update(dead)
    # names bound inside the loop are not bound after it (it may run no iteration); fields are
    forget_branch(low, names, host)

    for out, var in zip(node.output[:n_carried], carried):
        if out:
            low.names[out] = var
    for out, acc, inner in zip(node.output[n_carried:], scans, body.output[1 + n_carried:]):
        if not out:
            continue
        v = low.value(inner.name)
        empty = v.static_shape()
        low.names[out] = low.numbered(identifier(out, "loop_out"))
        low.emit(f"{low.names[out]} = onnx_ops.loop_stack({acc}, {v.rank == 0}, "
                 f"{'None' if empty is None else literal(empty)}, {like}, {quote(v.kind)}, "
                 f"{quote(node.name or node.output[0])})")
