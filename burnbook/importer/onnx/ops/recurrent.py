"""Recurrent layers (LSTM, GRU, RNN): emitters of the operator table (`table`).

An LSTM or GRU whose weights are constants becomes burnbook's own layers,
one `nn.Lstm`/`nn.Gru` field per direction, with ONNX's stacked W/R/B cut
into their gates at import (ONNX stacks LSTM gates i, o, f, c and GRU gates
z, r, h; each burnbook gate is a `GateController` of two `Linear`s in
`[d_in, d_out]` layout). Everything else (RNN, weights computed at run time,
sequence_lens, peepholes, clip, other activations) runs through the general
step-by-step recurrence `runtime.recurrence`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import inp
from ..graph import Graph
from ..lowering import Lowering, identifier, literal
from ..runtime.recurrence import ACTIVATIONS, DEFAULT_ACTIVATIONS, GATES
from ..table import op


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


def _emit_layers(low: Lowering, node: Any, a: dict) -> tuple[str, str]:
    """Declare one layer per direction; the `runtime.recurrent_layers` call
    and the first layer's field name."""
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
            f"direction={direction!r}, layout={int(a.get('layout', 0))})"), fields[0]


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
    count = 3 if kind == "LSTM" else 2
    if not _uses_layers(low, node, a):
        low.bind_many(node, _emit_general(low, node, a), count, identifier(kind, "rnn"))
        return
    expr, layer = _emit_layers(low, node, a)
    names = []  # named after the layer, as a layer's output is (`lstm1_y`, `lstm1_y_h`, `lstm1_y_c`)
    for i, suffix in enumerate(("y", "y_h", "y_c")[:count]):
        out = node.output[i] if i < len(node.output) else ""
        names.append(low.new_name(f"{layer}_{suffix}") if out else "_")
        if out:
            low.names[out] = names[-1]
    low.emit(f"{', '.join(names)} = {expr}")
