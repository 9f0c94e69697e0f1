"""Shape and layout operators (Flatten, Reshape, Transpose, Concat, Gather,
Slice, Squeeze, Unsqueeze, Shape, Constant): emitters of the operator table
(`table`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..args import axes_of, axes_source, inp, literal_list
from ..lowering import Lowering, literal
from ..table import op


# -- layout --------------------------------------------------------------------------
@op("Flatten")
def _flatten(low: Lowering, node: Any, a: dict) -> None:
    axis = int(a.get("axis", 1))
    x = low.var(node.input[0])
    rank = low.rank(node.input[0])
    axis = axis + rank if axis < 0 else axis
    shape = low.shape(node.input[0])
    if 0 < axis == rank - 1 == 1:
        low.alias(node, x)
    elif axis == 1 and rank >= 2:
        low.bind(node, f"{x}.flatten(1, {rank - 1})", "flatten")
    elif shape is not None:
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        low.bind(node, f"{x}.reshape([{rows}, -1])" if shape else f"{x}.reshape([1, 1])", "flatten")
    else:
        low.bind(node, f"onnx_ops.flatten({x}, {axis})", "flatten")


@op("Reshape")
def _reshape(low: Lowering, node: Any, a: dict) -> None:
    x, target = node.input[0], node.input[1]
    allowzero = bool(a.get("allowzero", 0))
    t = low.const(target)
    xs = low.shape(x)
    if x in low.host and t is not None and t.size == 1 and low.rank(x) <= 1:  # a flat host list stays one
        low.host_alias(node, x)
        return
    if t is not None and xs is not None:
        out = [xs[i] if (int(s) == 0 and not allowzero) else int(s) for i, s in enumerate(t.reshape(-1))]
        low.bind(node, f"{low.var(x)}.reshape({literal(out or [1])})", "reshape")
    else:
        zero = ", allowzero=True" if allowzero else ""
        low.bind(node, f"onnx_ops.reshape({low.var(x)}, {low.ints(target)}{zero})", "reshape")


@op("Transpose")
def _transpose(low: Lowering, node: Any, a: dict) -> None:
    rank = low.rank(node.input[0])
    perm = list(a.get("perm", list(range(rank))[::-1]))
    x = low.var(node.input[0])
    if perm == list(range(rank)):
        low.alias(node, x)
    elif rank >= 2 and perm == list(range(rank - 2)) + [rank - 1, rank - 2]:
        low.bind(node, f"{x}.transpose()", "transpose")
    else:
        low.bind(node, f"{x}.permute({literal(perm)})", "transpose")


@op("Concat")
def _concat(low: Lowering, node: Any, a: dict) -> None:
    parts = [low.host_ints(n) for n in node.input if n]
    flat = all(low.const(n) is None or low.const(n).ndim == 1 for n in node.input if n)
    if any(n in low.host for n in node.input) and all(parts) and flat:
        merged: list = []  # adjacent constant lists become one literal
        for n, part in zip([n for n in node.input if n], parts):
            if n not in low.host and merged and isinstance(merged[-1], list):
                merged[-1] += literal_list(part)
            else:
                merged.append(literal_list(part) if n not in low.host else part)
        joined = " + ".join(literal(m) if isinstance(m, list) else m for m in merged)
        low.bind_host(node, joined, low.host[next(n for n in node.input if n in low.host)][1], "concat")
        return
    parts = ", ".join(low.var(n) for n in node.input if n)
    low.bind(node, f"Tensor.cat([{parts}], {int(a['axis'])})", "concat")


@op("Gather")
def _gather(low: Lowering, node: Any, a: dict) -> None:
    x, idx = node.input[0], node.input[1]
    axis = int(a.get("axis", 0))
    const = low.const(idx)
    qrank = low.rank(idx)
    if x in low.host and axis in (0, -1) and const is not None and const.ndim <= 1:
        h = low.host[x][0]
        low.bind_host(node, "[" + ", ".join(f"{h}[{int(i)}]" for i in const.reshape(-1)) + "]", low.host[x][1],
                      "gather")
        return
    if const is not None and const.ndim == 0 and low.rank(x) >= 2:
        i = int(const)
        size = (low.shape(x) or [None] * low.rank(x))[axis]
        if i < 0 and size is not None:
            i += size
        if i >= 0:
            r = low.rank(x)
            ranges = ", ".join(["slice(None)"] * (axis % r) + [f"slice({i}, {i + 1})"])
            low.bind(node, f"{low.var(x)}.slice([{ranges}]).squeeze({axis})", "gather")
            return
    index = literal(const.tolist()) if const is not None else low.var(idx)
    low.bind(node, f"onnx_ops.gather({low.var(x)}, {axis}, {index}, {qrank})", "gather")


@op("Slice")
def _slice(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    rank = low.brank(x)
    names = [inp(node, i) for i in range(1, 5)]  # starts, ends, axes, steps
    vals = [low.const(n).reshape(-1).tolist() if low.const(n) is not None else None for n in names]
    if x in low.host and _host_slice(low, node, vals, names):
        return
    if all(v is not None or not n for v, n in zip(vals, names)):
        starts, ends, axes, steps = vals
        axes = list(range(len(starts))) if axes is None else [int(v) + rank if v < 0 else int(v) for v in axes]
        steps = [1] * len(starts) if steps is None else steps
        parts = ["slice(None)"] * rank
        big = 2 ** 62
        for ax, s, e, st in zip(axes, starts, ends, steps):
            s, e, st = int(s), int(e), int(st)
            e_txt = "None" if e >= big or e <= -big else str(e)
            s_txt = "None" if (s >= big or s <= -big) else str(s)
            parts[ax] = f"slice({s_txt}, {e_txt}{', ' + str(st) if st != 1 else ''})"
        low.bind(node, f"{low.var(x)}.slice([{', '.join(parts)}])", "slice")
        return
    args = [low.ints(n) if n else "None" for n in names]
    low.bind(node, f"onnx_ops.slice_({low.var(x)}, {', '.join(args)})", "slice")


def _host_slice(low: Lowering, node: Any, vals: list, names: list) -> bool:
    """Slice a host int list (a 1-D shape value) with constant arguments and
    positive steps, where Python's slice clamps as ONNX's does; False when
    the tensor path must do it."""
    starts, ends, axes, steps = vals
    if starts is None or ends is None or (axes is None and names[2]) or (steps is None and names[3]):
        return False
    steps = steps or [1]
    if len(starts) != 1 or (axes or [0])[0] not in (0, -1) or steps[0] <= 0:
        return False
    h, like = low.host[node.input[0]]
    low.bind_host(node, f"{h}[slice({int(starts[0])}, {int(ends[0])}, {int(steps[0])})]", like, "slice")
    return True


@op("Squeeze")
def _squeeze(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    axes = axes_of(low, node, a)
    rank = low.rank(x)
    if x in low.host:  # a 1-D shape value of one element to a scalar: the same flat list
        low.host_alias(node, x)
        return
    if isinstance(axes, list) and rank - len(axes) >= 1:
        expr = low.var(x)
        for ax in sorted((v + rank if v < 0 else v for v in axes), reverse=True):
            expr += f".squeeze({ax})"
        low.bind(node, expr, "squeeze")
    else:  # all size-1 dims, run-time axes, or a scalar result
        low.bind(node, f"onnx_ops.squeeze({low.var(x)}, {axes_source(axes)})", "squeeze")


@op("Unsqueeze")
def _unsqueeze(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    axes = axes_of(low, node, a)
    rank = low.rank(x)
    if x in low.host and isinstance(axes, list) and rank + len(axes) <= 1:  # scalar to [1]: same flat list
        low.host_alias(node, x)
        return
    if isinstance(axes, list) and rank >= 1:
        out_rank = rank + len(axes)
        expr = low.var(x)
        for ax in sorted(v + out_rank if v < 0 else v for v in axes):
            expr += ".unsqueeze()" if ax == 0 else f".unsqueeze_dim({ax})"
        low.bind(node, expr, "unsqueeze")
    else:
        low.bind(node, f"onnx_ops.unsqueeze({low.var(x)}, {axes_source(axes)}, {rank})", "unsqueeze")


@op("Shape")
def _shape(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    start, end = int(a.get("start", 0)), a.get("end")
    end = None if end is None else int(end)
    if low.rank(x) >= 1:  # kept on the host: the dims are read at run time, no tensor is built
        part = "" if start == 0 and end is None else f"[slice({start}, {end})]"
        low.bind_host(node, f"{low.var(x)}.dims(){part}", low.var(x), "shape")
        return
    args = f"{low.var(x)}, {start}" + (f", {end}" if end is not None else "") + \
        (f", rank={low.rank(x)}" if low.rank(x) == 0 else "")
    low.bind(node, f"onnx_ops.shape({args})", "shape")


@op("Constant")
def _constant(low: Lowering, node: Any, a: dict) -> None:
    """Nothing to emit: the value was recorded while parsing, and becomes a
    literal or a `Param` field where it is used."""
