"""Recurrent layers (LSTM, GRU, RNN) and control flow (If): emitters of the operator table (see `ops`).

An LSTM or GRU whose weights are constants becomes burnbook's own layers,
one `nn.Lstm`/`nn.Gru` field per direction, with ONNX's stacked W/R/B cut
into their gates at import (ONNX stacks LSTM gates i, o, f, c and GRU gates
z, r, h; each burnbook gate is a `GateController` of two `Linear`s in
`[d_in, d_out]` layout). Everything else (RNN, weights computed at run time,
sequence_lens, peepholes, clip, other activations) runs through the general
step-by-step recurrence `runtime.recurrent`.

An If with a constant condition becomes the branch it takes. Otherwise both
branches are computed and each output is `then if cond else other`: the
generated forward is straight-line code (see `guard`), so Loop and Scan,
whose bodies run a number of times known only when the model runs, are not
translated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .codegen import Lowering, identifier, literal
from .graph import Graph
from .ops import inp, op
from .runtime_recurrent import ACTIVATIONS, DEFAULT_ACTIVATIONS, GATES

_DIRECTIONS = ("forward", "reverse", "bidirectional")
# burnbook's gate fields, in ONNX's stacking order
_LAYER_GATES = {"LSTM": ("input_gate", "output_gate", "forget_gate", "cell_gate"),
                "GRU": ("update_gate", "reset_gate", "new_gate")}


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _direction(a: dict) -> str:
    return _text(a.get("direction", b"forward"))


def _activations(a: dict) -> list[str]:
    return [_text(v) for v in a.get("activations", [])]


def _check_recurrent(graph: Graph, node: Any, a: dict) -> list[str]:
    kind = node.op_type
    problems = []
    direction = _direction(a)
    if direction not in _DIRECTIONS:
        problems.append(f"{kind} direction={direction!r} (ONNX defines {', '.join(_DIRECTIONS)})")
    layout = int(a.get("layout", 0))
    if layout not in (0, 1):
        problems.append(f"{kind} layout={layout} (ONNX defines 0 and 1)")
    names = _activations(a)
    per_dir = len(DEFAULT_ACTIVATIONS[kind])
    dirs = 2 if direction == "bidirectional" else 1
    if names and len(names) != per_dir * dirs:
        problems.append(f"{kind} lists {len(names)} activations; {direction} needs {per_dir * dirs}")
    unknown = sorted({n for n in names if n not in ACTIVATIONS})
    if unknown:
        problems.append(f"{kind} activations {unknown} (burnbook translates {', '.join(sorted(ACTIVATIONS))})")
    for key in ("activation_alpha", "activation_beta"):
        if key in a:
            problems.append(f"{kind} attribute {key!r} (the activations burnbook translates take no parameters)")
    if kind == "LSTM" and int(a.get("input_forget", 0)) != 0:
        problems.append("LSTM input_forget=1 (coupled input and forget gates) is not supported")
    x = graph.values.get(node.input[0])
    if x is not None and x.kind is not None and x.kind != "Float":
        problems.append(f"{kind} input X has {x.dtype} elements (a float tensor is needed)")
    return problems


def _uses_layers(low: Lowering, node: Any, a: dict) -> bool:
    """Whether burnbook's `nn.Lstm`/`nn.Gru` compute this node exactly:
    constant float weights, default activations, no clip, peepholes or
    sequence lengths."""
    kind = node.op_type
    if kind not in _LAYER_GATES or "clip" in a or inp(node, 4) or inp(node, 7):
        return False
    names = _activations(a)
    dirs = 2 if _direction(a) == "bidirectional" else 1
    if names and names != list(DEFAULT_ACTIVATIONS[kind]) * dirs:
        return False
    consts = [low.const(inp(node, i)) for i in (1, 2)]
    bias = inp(node, 3)
    consts.append(low.const(bias) if bias else np.zeros(1, np.float32))
    return all(c is not None and c.dtype.kind == "f" for c in consts)


def _layer_params(kind: str, w: np.ndarray, r: np.ndarray, b: np.ndarray | None, d: int) -> dict:
    """One direction's ONNX weights as the parameters of an `nn.Lstm`/`nn.Gru`."""
    hidden = r.shape[-1]
    gates = GATES[kind]
    params = {}
    for k, gate in enumerate(_LAYER_GATES[kind]):
        rows = slice(k * hidden, (k + 1) * hidden)
        params[f"{gate}.input_transform.weight"] = w[d, rows].T
        params[f"{gate}.hidden_transform.weight"] = r[d, rows].T
        if b is not None:
            params[f"{gate}.input_transform.bias"] = b[d, rows]
            params[f"{gate}.hidden_transform.bias"] = b[d, gates * hidden + k * hidden:gates * hidden + (k + 1) * hidden]
    return params


def _emit_layers(low: Lowering, node: Any, a: dict) -> str:
    """Declare one layer per direction; the `runtime.recurrent_layers` call."""
    kind = node.op_type
    w, r = low.const(node.input[1]), low.const(node.input[2])
    b = low.const(inp(node, 3)) if inp(node, 3) else None
    direction = _direction(a)
    d_input, hidden = w.shape[2], r.shape[2]
    cls = "Lstm" if kind == "LSTM" else "Gru"
    cfg = f"nn.{cls}Config({d_input}, {hidden}"
    if b is None:
        cfg += ", bias=False"
    if kind == "GRU" and not int(a.get("linear_before_reset", 0)):
        cfg += ", reset_after=False"  # ONNX's default: the reset gate scales the state before R
    init = f"{cfg}).init(device, backend=B)"
    base = identifier(kind, "rnn")
    fields = []
    for d in range(w.shape[0]):
        params = _layer_params(kind, w, r, b, d)
        if d == 0:
            name = low.layer(base, f"nn.{cls}", init, params)
        else:
            name = low.add_field(low.new_name(f"{fields[0]}_reverse"), f"nn.{cls}", init, params)
        fields.append(name)
    layers = "[" + ", ".join(f"self.{f}" for f in fields) + "]"
    states = f"{_state(low, node, 5)}" + (f", {_state(low, node, 6)}" if kind == "LSTM" else "")
    return (f"onnx_ops.recurrent_layers({kind!r}, {layers}, {low.var(node.input[0])}, {states}, "
            f"direction={direction!r}, layout={int(a.get('layout', 0))})")


def _state(low: Lowering, node: Any, i: int) -> str:
    name = inp(node, i)
    return low.var(name) if name else "None"


def _emit_general(low: Lowering, node: Any, a: dict) -> str:
    """The `runtime.recurrent` call that runs the node step by step."""
    kind = node.op_type
    args = [low.var(node.input[0]), low.var(node.input[1]), low.var(node.input[2])]
    args += [_state(low, node, i) for i in (3, 4, 5)]
    if kind == "LSTM":
        args += [_state(low, node, 6), _state(low, node, 7)]
    else:
        args += ["None", "None"]
    keywords = [f"direction={_direction(a)!r}", f"layout={int(a.get('layout', 0))}"]
    if _activations(a):
        keywords.append(f"activations={_names(_activations(a))}")
    if "clip" in a:
        keywords.append(f"clip={literal(np.float32(a['clip']))}")
    if kind == "GRU" and int(a.get("linear_before_reset", 0)):
        keywords.append("linear_before_reset=1")
    return f"onnx_ops.recurrent({kind!r}, {', '.join(args + keywords)})"


def _names(names: list[str]) -> str:
    # each name was checked against ACTIVATIONS, so repr() writes one of our own literals
    return "[" + ", ".join(repr(n) for n in names) + "]"


@op("LSTM", "GRU", "RNN", check=_check_recurrent)
def _recurrent(low: Lowering, node: Any, a: dict) -> None:
    kind = node.op_type
    expr = _emit_layers(low, node, a) if _uses_layers(low, node, a) else _emit_general(low, node, a)
    low.bind_many(node, expr, 3 if kind == "LSTM" else 2, identifier(kind, "rnn"))


# -- control flow ---------------------------------------------------------------------------
def _branches(node: Any) -> list:
    return [attr.g for attr in node.attribute if attr.name in ("then_branch", "else_branch")]


def _register_subgraph(graph: Graph, body: Any, feeds: list | None = None) -> None:
    """Make a branch's values known to the lowering as the main graph's are
    (types from shape inference, initializers and Constant nodes as constants).
    `feeds` gives the body's inputs a type where the file leaves them untyped:
    (element type name, dims) or None, one per body input."""
    from .graph import Value, _array, _constant_value, _kind_of_array, _value_from_type, elem_info

    values = graph.values
    for vi in list(body.value_info) + list(body.input) + list(body.output) + _inferred(graph, body, feeds):
        values[vi.name] = _value_from_type(vi.name, vi.type)  # ONNX forbids shadowing an outer value
    for t in body.initializer:
        arr = _array(t)
        info = elem_info(t.data_type)
        kind, dtype = info if info else (None, f"element type {t.data_type}")
        values[t.name] = Value(t.name, kind, dtype, arr.ndim, list(arr.shape), arr)
    for node in body.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
            arr = _constant_value(node)
            if arr is not None:
                v = values.get(node.output[0])
                kind, dtype = (v.kind, v.dtype) if v and v.kind else _kind_of_array(arr)
                values[node.output[0]] = Value(node.output[0], kind, dtype, arr.ndim, list(arr.shape), arr)


def _inferred(graph: Graph, body: Any, feeds: list | None) -> list:
    """Types onnx's shape inference gives a subgraph's values when run on
    the subgraph alone, the outer values it reads declared as inputs (the
    inference of the whole model leaves subgraphs' inner values untyped)."""
    import onnx
    from onnx import helper, numpy_helper

    def declared(name: str, dtype: Any, shape: Any) -> Any:
        try:
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        except (TypeError, KeyError, ValueError):
            return None
        dims = None if shape is None else [d if isinstance(d, (int, str)) else None for d in shape]
        return helper.make_tensor_value_info(name, elem, dims)

    inputs = []
    for i, vi in enumerate(body.input):
        feed = feeds[i] if feeds and i < len(feeds) else None
        typed = vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape")
        made = declared(vi.name, *feed) if feed is not None and not typed else None
        inputs.append(made if made is not None else vi)
    inner = {vi.name for vi in body.input} | {t.name for t in body.initializer}
    inner |= {o for node in body.node for o in node.output}
    outer, known = [], list(body.initializer)
    for name in dict.fromkeys(i for node in body.node for i in node.input if i and i not in inner):
        v = graph.values.get(name)
        made = declared(name, v.dtype, v.shape) if v is not None and v.kind is not None and v.dtype else None
        if made is not None:
            outer.append(made)
            if v.const is not None:  # an outer constant (axes, shapes) lets inference find ranks
                known.append(numpy_helper.from_array(np.asarray(v.const), name))
    g = helper.make_graph(list(body.node), body.name or "body", inputs + outer, list(body.output), known)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", graph.opset)])
    try:
        return list(onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True).graph.value_info)
    except Exception:  # best effort, as for the whole model
        return []


def _check_if(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = []
    for body in _branches(node):
        problems += _check_body(graph, "If branch", body)
    return problems


def _check_body(graph: Graph, what: str, body: Any, feeds: list | None = None) -> list[str]:
    """Every reason a subgraph's nodes cannot be translated."""
    from .graph import attrs
    from .ops import TABLE, _attribute_type_problems

    problems = []
    _register_subgraph(graph, body, feeds)
    for inner in body.node:
        entry = TABLE.get(inner.op_type) if inner.domain in ("", "ai.onnx") else None
        if entry is None:
            problems.append(f"{what} {body.name!r} uses {inner.op_type!r}, which burnbook does not translate")
            continue
        checker = entry[1]
        for p in _attribute_type_problems(inner, graph.opset) or (
                checker(graph, inner, attrs(inner)) if checker is not None else []):
            problems.append(f"{what} {body.name!r}: {p}")
    for out in body.output:
        v = graph.values.get(out.name)
        if v is None or v.kind is None:
            kind = v.dtype if v is not None else "an unknown type"
            problems.append(f"{what} {body.name!r} output {out.name!r} has {kind}, which burnbook tensors "
                            "cannot hold")
    return problems


def _lower_branch(low: Lowering, body: Any) -> list[str]:
    """Emit a branch's nodes into the enclosing forward; its outputs' expressions."""
    from .graph import attrs
    from .ops import TABLE

    # the other branch may use the same names for its own values
    _register_subgraph(low.graph, body)
    local = {t.name for t in body.initializer} | {o for inner in body.node for o in inner.output}
    for name in local:
        low.names.pop(name, None)
    for inner in body.node:
        if id(inner) not in low.fused:
            TABLE[inner.op_type][0](low, inner, attrs(inner))
    return [low.var(out.name) for out in body.output]


@op("If", check=_check_if)
def _if(low: Lowering, node: Any, a: dict) -> None:
    """A constant condition inlines the branch it takes; otherwise both
    branches are computed and each output picks its branch's value when
    the forward runs (the generated code has expressions only)."""
    then_body, else_body = a["then_branch"], a["else_branch"]
    cond = low.const(node.input[0])
    if cond is not None:
        taken = then_body if bool(np.asarray(cond).reshape(-1)[0]) else else_body
        for out, expr in zip(node.output, _lower_branch(low, taken)):
            if out:
                low.names[out] = expr
        return
    then_exprs, else_exprs = _lower_branch(low, then_body), _lower_branch(low, else_body)
    flag = low.var(node.input[0])
    for out, yes, no in zip(node.output, then_exprs, else_exprs):
        if out:
            name = low.numbered("if_out")
            low.emit(f"{name} = {yes} if {flag} else {no}")
            low.names[out] = name


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
    problems = _check_body(graph, "Scan body", a["body"], _scan_feeds(graph, node, a))
    lengths = set()
    for name, axis, _ in _scan_inputs(graph, node, a):
        v = graph.values.get(name)
        shape = v.static_shape() if v is not None else None
        if shape is None or axis >= len(shape):
            problems.append(f"Scan input {name!r} has no fixed length: burnbook unrolls a Scan at import, "
                            "so the number of steps must be known then")
        else:
            lengths.add(shape[axis])
    if len(lengths) > 1:
        problems.append(f"Scan inputs of different lengths {sorted(lengths)}")
    elif lengths and max(lengths) > _MAX_UNROLL:
        problems.append(f"Scan over {max(lengths)} steps (burnbook unrolls up to {_MAX_UNROLL})")
    return problems


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
    _register_subgraph(low.graph, body, _scan_feeds(low.graph, node, a))
    # values a step computes; constants keep their one field across the steps
    local = {o for inner in body.node if inner.op_type != "Constant" for o in inner.output}
    for t in range(steps):
        for vi, expr in zip(body.input[:n_states], states):
            low.names[vi.name] = expr
        for vi, (name, axis, backwards), rank in zip(body.input[n_states:], scanned, ranks):
            i = steps - 1 - t if backwards else t
            part = f"{low.var(name)}.narrow({axis}, {i}, 1)"
            low.names[vi.name] = part if rank == 1 else f"{part}.squeeze({axis})"
        for name in local:
            low.names.pop(name, None)
        from .graph import attrs
        from .ops import TABLE

        for inner in body.node:
            if id(inner) not in low.fused:
                TABLE[inner.op_type][0](low, inner, attrs(inner))
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
