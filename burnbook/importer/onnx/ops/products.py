"""Einsum, MatMulInteger and Attention, the products beyond MatMul and
Gemm: emitters of the operator table (`table`), each one call of its
`runtime.products` helper."""

from __future__ import annotations

import re
from typing import Any

from ..args import attr_text, f32, float_input, inp
from ..graph import Graph
from ..lowering import Lowering, literal, quote
from ..table import op


# -- Einsum and MatMulInteger -------------------------------------------------------------
# terms of letters with at most one ellipsis each, joined by commas, then an optional output term
_EQUATION = re.compile(r"^[A-Za-z ]*(\.\.\.[A-Za-z ]*)?(,[A-Za-z ]*(\.\.\.[A-Za-z ]*)?)*(->[A-Za-z ]*(\.\.\.[A-Za-z ]*)?)?$")


def _check_einsum(graph: Graph, node: Any, a: dict) -> list[str]:
    eq = attr_text(a, "equation", "")
    if not eq or not re.fullmatch(r"[A-Za-z,. ]*(->[A-Za-z. ]*)?", eq) or eq.replace("...", "").count(".") \
            or not _EQUATION.match(eq.replace(" ", "")):
        return [f"Einsum equation {eq!r} is not of the form 'ab,bc->ac' (letters, ',', '...', '->')"]
    lhs = eq.replace(" ", "").split("->")[0].split(",")
    if len(lhs) != len(node.input):
        return [f"Einsum equation {eq!r} names {len(lhs)} operands, the node has {len(node.input)}"]
    kinds = {graph.values[n].kind for n in node.input if n in graph.values}
    if len(kinds) > 1 or "Bool" in kinds:
        return [f"Einsum of element kinds {sorted(k for k in kinds if k)} (one numeric kind is needed)"]
    return []


@op("Einsum", check=_check_einsum)
def _einsum(low: Lowering, node: Any, a: dict) -> None:
    eq = attr_text(a, "equation", "").replace(" ", "")
    operands = ", ".join(low.var(n) for n in node.input)
    ranks = [low.rank(n) for n in node.input]
    low.bind(node, f"onnx_ops.einsum({quote(eq)}, {operands}, ranks={literal(ranks)})", "einsum")


@op("MatMulInteger")
def _matmul_integer(low: Lowering, node: Any, a: dict) -> None:
    args = [low.var(node.input[0]), low.var(node.input[1])]
    for i in (2, 3):
        args.append(low.var(inp(node, i)) if inp(node, i) else "None")
    low.bind(node, f"onnx_ops.matmul_integer({', '.join(args)})", "matmul_integer")


# -- Attention -------------------------------------------------------------------------------
def _check_attention(graph: Graph, node: Any, a: dict) -> list[str]:
    problems = float_input(graph, node)
    q = graph.values.get(node.input[0])
    if q is not None and q.rank == 3 and ("q_num_heads" not in a or "kv_num_heads" not in a):
        problems.append("Attention of 3-D inputs without q_num_heads and kv_num_heads")
    if q is not None and q.rank not in (None, 3, 4):
        problems.append(f"Attention of rank-{q.rank} inputs (ONNX defines 3-D and 4-D)")
    mode = int(a.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        problems.append(f"Attention qk_matmul_output_mode={mode} (ONNX defines 0 to 3)")
    if bool(inp(node, 4)) != bool(inp(node, 5)):
        problems.append("Attention with only one of past_key and past_value")
    return problems


@op("Attention", check=_check_attention)
def _attention(low: Lowering, node: Any, a: dict) -> None:
    args = [low.var(node.input[i]) for i in range(3)]
    for i in range(3, 7):
        args.append(low.var(inp(node, i)) if inp(node, i) else "None")
    while args[-1] == "None":
        args.pop()
    if "scale" in a:
        args.append(f"scale={f32(a['scale'])}")
    if int(a.get("is_causal", 0)):
        args.append("is_causal=True")
    for key in ("q_num_heads", "kv_num_heads"):
        if key in a:
            args.append(f"{key}={int(a[key])}")
    if float(a.get("softcap", 0.0)) > 0:
        args.append(f"softcap={f32(a['softcap'])}")
    if int(a.get("qk_matmul_output_mode", 0)):
        args.append(f"qk_matmul_output_mode={int(a['qk_matmul_output_mode'])}")
    for key in ("left_window_size", "right_window_size"):
        if int(a.get(key, -1)) != -1:
            args.append(f"{key}={int(a[key])}")
    count = max(i + 1 for i, o in enumerate(node.output) if o)
    if count < 4:
        args.append(f"outputs={count}")
    call = f"onnx_ops.attention({', '.join(args)})"
    if count == 1:
        low.bind(node, call, "attention")
    else:
        low.bind_many(node, call, count, "attention")
