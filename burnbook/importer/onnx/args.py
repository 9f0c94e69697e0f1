"""Reading a node's inputs and attributes, for the emitters and checks of
every family: optional inputs, `axes` given as an attribute or an input,
string attributes, f32 literals, and the checks several families share.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .graph import Graph
from .lowering import Lowering, literal


def inp(node: Any, i: int) -> str:
    """The name of input `i`, or "" when it is absent."""
    return node.input[i] if len(node.input) > i else ""


def literal_list(text: str) -> list[int]:
    """The ints of a list literal written by `literal`."""
    return [int(v) for v in text.strip("[]").split(",") if v.strip()]


def axes_source(axes: list[int] | str | None) -> str:
    """`axes_of`'s answer as source text."""
    return literal(axes) if isinstance(axes, list) else ("None" if axes is None else axes)


def axes_of(low: Lowering, node: Any, a: dict) -> list[int] | str | None:
    """The `axes` of Squeeze/Unsqueeze/Reduce*, from the attribute (old
    opsets) or the input: a list when known now, the source of a run-time
    read-back otherwise, None when absent."""
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    name = inp(node, 1)
    if not name:
        return None
    const = low.const(name)
    return [int(v) for v in const.reshape(-1)] if const is not None else low.ints(name)


def settle_reduced_rank(low: Lowering, node: Any, keep: bool) -> None:
    """Give a reduction's output its rank where shape inference left it open
    (axes read at run time): the number of axes fixes it."""
    out = low.graph.values.get(node.output[0])
    if out is not None and out.rank is None:
        rank = low.rank(node.input[0])
        n_axes = (low.shape(inp(node, 1)) or [rank])[0] if inp(node, 1) else rank
        out.rank = rank if keep else rank - (n_axes or rank)


def attr_text(a: dict, key: str, default: str) -> str:
    """A string attribute (bytes in the file) as text, `default` when absent."""
    v = a.get(key, default)
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def f32(v: float) -> str:
    """A float attribute as an f32 literal (attributes are f32 in ONNX)."""
    return literal(np.float32(v))


def float_input(graph: Graph, node: Any, i: int = 0) -> list[str]:
    v = graph.values.get(inp(node, i))
    if v is not None and v.kind not in (None, "Float"):
        return [f"{node.op_type} of a {v.kind} tensor {inp(node, i)!r} (it is defined for floats)"]
    return []


def rank_at_least(graph: Graph, node: Any, rank: int) -> list[str]:
    v = graph.values.get(node.input[0])
    if v is not None and v.rank is not None and v.rank < rank:
        return [f"{node.op_type} of a rank-{v.rank} input (needs [N, C, ...], rank >= {rank})"]
    return []
