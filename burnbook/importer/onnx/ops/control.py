"""Control flow (If, Scan): emitters of the operator table (`table`); Loop,
built on the helpers here, is the `loop` family.

Subgraphs are lowered in place, into the enclosing forward: an If with a
constant condition becomes the branch it takes; otherwise it becomes a
Python `if` read on the host, so only the branch taken runs (the other may
be invalid for the inputs given, a Reshape or Gather meant for other shapes):

    if onnx_ops.if_taken(cond):
        ...                       # the then branch's nodes
        if_out1 = then_value
    else:
        ...                       # the else branch's nodes
        if_out1 = else_value

A Scan whose length is fixed at import is unrolled, the body's nodes once
per step; one whose length is known only when the model runs is refused.
Loop (`loop`) becomes a `while` block, its trip count and condition usually
known only at run time. These `if` and `while` shapes are the only control
flow `guard` admits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..emit import emit_node
from ..graph import Graph, Value, attrs
from ..graph.check import attribute_type_problems
from ..graph.subgraphs import register_subgraph
from ..lowering import Lowering
from ..table import TABLE, op


def _branches(node: Any) -> list:
    return [attr.g for attr in node.attribute if attr.name in ("then_branch", "else_branch")]


def _check_if(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = []
    for body in _branches(node):
        problems += check_body(graph, "If branch", body)
    return problems


def check_body(graph: Graph, what: str, body: Any, feeds: list | None = None) -> list[str]:
    """Every reason a subgraph's nodes cannot be translated."""
    problems = []
    register_subgraph(graph, body, feeds)
    for inner in body.node:
        entry = TABLE.get(inner.op_type) if inner.domain in ("", "ai.onnx") else None
        if entry is None:
            problems.append(f"{what} {body.name!r} uses {inner.op_type!r}, which burnbook does not translate")
            continue
        checker = entry[1]
        for p in attribute_type_problems(inner, graph.opset) or (
                checker(graph, inner, attrs(inner)) if checker is not None else []):
            problems.append(f"{what} {body.name!r}: {p}")
    for out in body.output:
        v = graph.values.get(out.name)
        if v is None or v.kind is None:
            kind = v.dtype if v is not None and v.dtype else "an unknown type"
            problems.append(f"{what} {body.name!r} output {out.name!r} has {kind}, which burnbook tensors "
                            "cannot hold")
    return problems


def _lower_branch(low: Lowering, body: Any) -> list[str]:
    """Emit a branch's nodes into the enclosing forward; its outputs' expressions."""
    # the other branch may use the same names for its own values
    register_subgraph(low.graph, body)
    emit_body(low, body, body_locals(low, body))
    return [low.var(out.name) for out in body.output]


def body_locals(low: Lowering, body: Any) -> set:
    """The values an If branch or a Loop body binds for itself: its
    initializers and node outputs, except those of a node an outer emitter
    already fused and emitted before the block, which keep their names."""
    return {t.name for t in body.initializer} | {o for inner in body.node for o in inner.output
                                                 if id(inner) not in low.fused or o not in low.names}


def emit_body(low: Lowering, body: Any, local: set) -> None:
    """Forget the names a previous emission of `body` (or the other branch)
    bound to its `local` values, then emit its nodes."""
    for name in local:
        low.names.pop(name, None)
        low.host.pop(name, None)
    for inner in body.node:
        if id(inner) not in low.fused:
            emit_node(low, inner)


@op("If", check=_check_if)
def _if(low: Lowering, node: Any, a: dict) -> None:
    """A constant condition inlines the branch it takes; otherwise an `if`
    block whose test reads the condition on the host when the forward runs,
    each branch's nodes inside it and every output assigned in both."""
    then_body, else_body = a["then_branch"], a["else_branch"]
    cond = low.const(node.input[0])
    if cond is not None:
        taken = then_body if bool(np.asarray(cond).reshape(-1)[0]) else else_body
        for out, expr in zip(node.output, _lower_branch(low, taken)):
            if out:
                low.names[out] = expr
        return
    used = [k for k, out in enumerate(node.output) if out]
    if not used:  # nothing reads it: neither branch has an effect
        return
    targets = {k: low.numbered("if_out") for k in used}
    flag = low.var(node.input[0])
    if not flag.isidentifier():  # the guard admits a bare name as the test's argument
        expr, flag = flag, low.numbered("if_cond")
        low.emit(f"{flag} = {expr}")
    names, host = dict(low.names), dict(low.host)
    low.emit(f"if onnx_ops.if_taken({flag}):")
    outer_indent = low.indent
    try:
        for k, body in enumerate((then_body, else_body)):
            if k:
                low.emit("else:")
            low.indent = outer_indent + "    "
            exprs = _lower_branch(low, body)
            for i in used:
                low.emit(f"{targets[i]} = {exprs[i]}")
            low.indent = outer_indent
            forget_branch(low, names, host)
    finally:
        low.indent = outer_indent
    for i in used:
        low.names[node.output[i]] = targets[i]


def forget_branch(low: Lowering, names: dict, host: dict) -> None:
    """Back to the names and host values bound before a branch: what a
    branch binds is unbound in the other branch and after the `if`
    (fields, `self.`..., stay)."""
    for key in list(low.names):
        if low.names[key] != names.get(key) and not low.names[key].startswith("self."):
            if key in names:
                low.names[key] = names[key]
            else:
                del low.names[key]
    low.host.clear()
    low.host.update(host)


_MAX_UNROLL = 1024


def _scan_inputs(graph: Graph, node: Any, a: dict) -> list[tuple[str, int, int]]:
    """(name, axis, reversed) of each scanned input."""
    m = int(a.get("num_scan_inputs", 0))
    names = list(node.input)[len(node.input) - m:]
    axes = list(a.get("scan_input_axes", [0] * m))
    dirs = list(a.get("scan_input_directions", [0] * m))
    found = []
    for name, axis, d in zip(names, axes, dirs):
        v = graph.values.get(name)
        rank = v.rank if v is not None and v.rank is not None else 1
        found.append((name, int(axis) + rank if axis < 0 else int(axis), int(d)))
    return found


def _scan_feeds(graph: Graph, node: Any, a: dict) -> list:
    """What each body input of a Scan receives: a state as it is, a scanned
    input without its scan axis."""
    scanned = {name: axis for name, axis, _ in _scan_inputs(graph, node, a)}
    feeds = []
    for i, name in enumerate(node.input):
        v = graph.values.get(name)
        if v is None or v.dtype is None:
            feeds.append(None)
            continue
        shape = v.shape
        if i >= len(node.input) - len(scanned) and shape is not None and scanned[name] < len(shape):
            shape = shape[:scanned[name]] + shape[scanned[name] + 1:]
        feeds.append((v.dtype, shape))
    return feeds


def _check_scan(graph: Graph, node: Any, a: dict) -> list[str]:
    body = a["body"]
    problems = check_body(graph, "Scan body", body, _scan_feeds(graph, node, a))
    lengths = set()
    for name, axis, _ in _scan_inputs(graph, node, a):
        v = graph.values.get(name)
        shape = v.shape if v is not None else None
        if shape is None or axis >= len(shape) or not isinstance(shape[axis], int):
            problems.append(f"Scan input {name!r} has no fixed length: burnbook unrolls a Scan at import, "
                            "so the number of steps must be known then")
        else:
            lengths.add(shape[axis])
    if len(lengths) > 1:
        problems.append(f"Scan inputs of different lengths {sorted(lengths)}")
    elif lengths and max(lengths) > _MAX_UNROLL:
        problems.append(f"Scan over {max(lengths)} steps (burnbook unrolls up to {_MAX_UNROLL})")
    elif not problems:
        _type_scan_outputs(graph, node, a, lengths.pop() if lengths else 0)
    return problems


def _type_scan_outputs(graph: Graph, node: Any, a: dict, steps: int) -> None:
    """Types for the Scan's outputs where the model's shape inference found
    none (it cannot see into an untyped body): a state as the body gives it,
    a scan output with the steps' axis added."""
    n_states = len(node.input) - int(a.get("num_scan_inputs", 0))
    axes = list(a.get("scan_output_axes", []))
    for k, (out, inner) in enumerate(zip(node.output, a["body"].output)):
        known, v = graph.values.get(out), graph.values.get(inner.name)
        if not out or (known is not None and known.rank is not None) or v is None or v.rank is None:
            continue
        shape = list(v.shape) if v.shape is not None else [None] * v.rank
        if k >= n_states:
            axis = int(axes[k - n_states]) if k - n_states < len(axes) else 0
            axis = axis + v.rank + 1 if axis < 0 else axis
            shape.insert(axis, steps)
        graph.values[out] = Value(out, v.kind, v.dtype, len(shape), shape)


@op("Scan", check=_check_scan)
def _scan(low: Lowering, node: Any, a: dict) -> None:
    """Unrolled: the body's nodes once per step, each step reading its
    slice of every scanned input; the scan outputs are the steps' values
    stacked. The forward stays straight-line code a reader can follow."""
    body = a["body"]
    scanned = _scan_inputs(low.graph, node, a)
    n_states = len(node.input) - len(scanned)
    states = [low.var(name) for name in node.input[:n_states]]
    steps = low.shape(scanned[0][0])[scanned[0][1]] if scanned else 0
    ranks = [low.rank(name) for name, _, _ in scanned]
    per_step: list[list[str]] = []
    register_subgraph(low.graph, body, _scan_feeds(low.graph, node, a))
    # values a step computes; constants keep their one field across the steps
    local = {o for inner in body.node if inner.op_type != "Constant" for o in inner.output}
    for t in range(steps):
        for vi, expr in zip(body.input[:n_states], states):
            low.names[vi.name] = expr
        for vi, (name, axis, backwards), rank in zip(body.input[n_states:], scanned, ranks):
            i = steps - 1 - t if backwards else t
            part = f"{low.var(name)}.narrow({axis}, {i}, 1)"
            low.names[vi.name] = part if rank == 1 else f"{part}.squeeze({axis})"
        emit_body(low, body, local)
        outs = [low.var(o.name) for o in body.output]
        states = outs[:n_states]
        per_step.append(outs[n_states:])
    for out, expr in zip(node.output[:n_states], states):
        if out:
            low.names[out] = expr
    out_axes = list(a.get("scan_output_axes", [0] * (len(body.output) - n_states)))
    out_dirs = list(a.get("scan_output_directions", [0] * (len(body.output) - n_states)))
    for k, out in enumerate(node.output[n_states:]):
        if not out:
            continue
        items = [step[k] for step in per_step]
        if out_dirs[k] if k < len(out_dirs) else 0:
            items.reverse()
        rank = low.rank(body.output[n_states + k].name)
        axis = int(out_axes[k]) if k < len(out_axes) else 0
        axis = axis + rank + 1 if axis < 0 else axis
        # an ONNX scalar is [1] in burnbook: joining the steps' [1]s gives the [steps] vector
        joined = f"Tensor.cat([{', '.join(items)}], 0)" if rank == 0 else f"Tensor.stack([{', '.join(items)}], {axis})"
        low.names[out] = low.numbered("scan_out")
        low.emit(f"{low.names[out]} = {joined}")
