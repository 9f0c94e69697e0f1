"""Reductions beyond ReduceSum/ReduceMean, arg-max/min, top-k, cumulative
sums and the gather/scatter family: emitters of the operator table (`table`).

Known axes and indices become Tensor calls (`x.max_dim(1)`, `x.argmax(0)`,
`x.gather(1, idx)`); the ONNX rules with no one-call equivalent (negative
indices, run-time axes, reductions of empty sets, scatter reductions, top-k)
go to the helpers of `runtime.index` and `runtime.reductions`.
"""

from __future__ import annotations

from typing import Any

from ..args import attr_text, axes_of, axes_source, literal_list, settle_reduced_rank
from ..emit import REDUCE_EXT, reduce_ext_call
from ..graph import Graph, OnnxImportError
from ..graph.check import node_label
from ..lowering import Lowering, literal, quote
from ..table import op


# -- reductions ------------------------------------------------------------------------
# reductions spelt as Tensor calls when the axes are known: (before, per dim, after, kinds)
_CHAINS = {
    "max": ("{x}", "max_dim", "", ("Float", "Int")),
    "min": ("{x}", "min_dim", "", ("Float", "Int")),
    "l1": ("{x}.abs()", "sum_dim", "", ("Float", "Int")),
    "sum_square": ("({x} * {x})", "sum_dim", "", ("Float", "Int")),
    "l2": ("({x} * {x})", "sum_dim", ".sqrt()", ("Float",)),
    "log_sum": ("{x}", "sum_dim", ".log()", ("Float",)),
}


def _set_rank(low: Lowering, node: Any, rank: int | None, output: int = 0) -> None:
    """Fill in an output's rank where shape inference left it open (it stops
    at shapes known only at run time); these operators fix it from their inputs."""
    out = low.graph.values.get(node.output[output]) if len(node.output) > output else None
    if out is not None and out.rank is None and rank is not None:
        out.rank = max(rank, 0)


def _rank_of(graph: Graph, name: str) -> int | None:
    v = graph.values.get(name)
    return None if v is None else v.rank


def _axis_problem(graph: Graph, node: Any, axis: int, extra: int = 0) -> list[str]:
    """An `axis` attribute outside the range of input 0's rank (+ `extra`
    for ops that add a dim)."""
    rank = _rank_of(graph, node.input[0]) if node.input else None
    if rank is None:
        return []
    span = max(rank + extra, 1)
    return [] if -span <= axis < span else [f"axis {axis} is out of range for an input of rank {rank}"]


def _bool_only_for_extremes(graph: Graph, node: Any, a: dict) -> list[str]:
    v = graph.values.get(node.input[0]) if node.input else None
    if v is not None and v.kind == "Bool" and REDUCE_EXT[node.op_type] not in ("max", "min"):
        return [f"{node.op_type} of a bool tensor (ONNX allows bool only in ReduceMax/ReduceMin)"]
    return []


@op(*REDUCE_EXT, check=_bool_only_for_extremes)
def _reduce(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    fn = REDUCE_EXT[node.op_type]
    keep = bool(a.get("keepdims", 1))
    noop = bool(a.get("noop_with_empty_axes", 0))
    axes = axes_source(axes_of(low, node, a))
    rank = low.rank(x)
    settle_reduced_rank(low, node, keep)
    if axes in ("None", "[]"):
        if noop and fn in ("max", "min", "prod"):  # the others still apply their element-wise part
            low.alias(node, low.var(x))
            return
        axes = "None"
    prefix = f"reduce_{fn}"
    chain = _CHAINS.get(fn)
    shape = low.shape(x)
    if axes.startswith("[") and chain is not None and low.value(x).kind in chain[3] and shape is not None:
        dims = sorted({v + rank if v < 0 else v for v in literal_list(axes)})
        # an empty dim reduces to the op's identity, which only the helper knows
        if all(0 <= d < rank and shape[d] > 0 for d in dims) and (keep or rank > len(dims)):
            expr = chain[0].format(x=low.var(x)) + "".join(f".{chain[1]}({d})" for d in dims) + chain[2]
            if not keep:
                expr += "".join(f".squeeze({d})" for d in reversed(dims))
            low.bind(node, expr, prefix)
            return
    low.bind(node, reduce_ext_call(low, node, low.var(x)), prefix)


# -- arg-max/min, top-k, hardmax, cumsum -------------------------------------------------
def _check_arg(graph: Graph, node: Any, a: dict) -> list[str]:
    return _axis_problem(graph, node, int(a.get("axis", 0)))


@op("ArgMax", "ArgMin", check=_check_arg)
def _arg(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    which = "max" if node.op_type == "ArgMax" else "min"
    axis, keep = int(a.get("axis", 0)), bool(a.get("keepdims", 1))
    last = bool(a.get("select_last_index", 0))
    rank = low.rank(x)
    _set_rank(low, node, rank if keep else rank - 1)
    if not last and rank >= 1 and low.value(x).kind != "Bool":
        d = axis + rank if axis < 0 else axis
        expr = f"{low.var(x)}.arg{which}({d})" + ("" if keep or rank == 1 else f".squeeze({d})")
    else:
        last_arg = ", select_last_index=True" if last else ""
        expr = f"onnx_ops.arg_extreme({low.var(x)}, {axis}, {quote(which)}, {keep}, {rank}{last_arg})"
    low.bind(node, expr, f"arg{which}")


def _check_topk(graph: Graph, node: Any, a: dict) -> list[str]:
    return _axis_problem(graph, node, int(a.get("axis", -1)))


@op("TopK", check=_check_topk)
def _topk(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    k = low.ints(node.input[1])
    axis, largest = int(a.get("axis", -1)), bool(a.get("largest", 1))
    _set_rank(low, node, low.rank(x))
    _set_rank(low, node, low.rank(x), 1)
    # `sorted=0` lets any order through; sorted is one such order
    low.bind_many(node, f"onnx_ops.topk({low.var(x)}, {k}, {axis}, {largest}, {low.rank(x)})", 2, "topk")


def _check_hardmax(graph: Graph, node: Any, a: dict) -> list[str]:
    v = graph.values.get(node.input[0])
    if v is not None and v.kind not in (None, "Float"):
        return [f"Hardmax of a {v.kind} tensor (ONNX defines it for floats)"]
    return _axis_problem(graph, node, int(a.get("axis", -1)))


@op("Hardmax", check=_check_hardmax)
def _hardmax(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    _set_rank(low, node, low.rank(x))
    low.bind(node, f"onnx_ops.hardmax({low.var(x)}, {int(a.get('axis', -1))}, {low.rank(x)})", "hardmax")


@op("CumSum")
def _cumsum(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    axis = low.ints(node.input[1])
    exclusive, reverse = bool(a.get("exclusive", 0)), bool(a.get("reverse", 0))
    _set_rank(low, node, low.rank(x))
    low.bind(node, f"onnx_ops.cumsum({low.var(x)}, {axis}, {exclusive}, {reverse}, {low.rank(x)})", "cumsum")


# -- gather and scatter ------------------------------------------------------------------
def _nonnegative_const(low: Lowering, name: str) -> bool:
    arr = low.const(name)
    return arr is not None and arr.size > 0 and bool((arr >= 0).all())


def _check_axis0(graph: Graph, node: Any, a: dict) -> list[str]:
    return _axis_problem(graph, node, int(a.get("axis", 0)))


@op("GatherElements", check=_check_axis0)
def _gather_elements(low: Lowering, node: Any, a: dict) -> None:
    x, idx = node.input[0], node.input[1]
    axis, rank = int(a.get("axis", 0)), low.rank(x)
    _set_rank(low, node, low.rank(idx))
    if rank >= 1 and _nonnegative_const(low, idx):
        expr = f"{low.var(x)}.gather({axis + rank if axis < 0 else axis}, {low.var(idx)})"
    else:
        expr = f"onnx_ops.gather_elements({low.var(x)}, {axis}, {low.var(idx)}, {rank})"
    low.bind(node, expr, "gather_elements")


def _check_gather_nd(graph: Graph, node: Any, a: dict) -> list[str]:
    b = int(a.get("batch_dims", 0))
    ranks = [_rank_of(graph, n) for n in node.input[:2]]
    if b < 0 or any(r is not None and b >= r for r in ranks):
        return [f"batch_dims={b} must be below the ranks of data and indices ({ranks})"]
    return []


@op("GatherND", check=_check_gather_nd)
def _gather_nd(low: Lowering, node: Any, a: dict) -> None:
    x, idx = node.input[0], node.input[1]
    b = int(a.get("batch_dims", 0))
    tuple_length = (low.shape(idx) or [None])[-1] if low.rank(idx) else None
    if tuple_length is not None:
        _set_rank(low, node, low.rank(x) + low.rank(idx) - tuple_length - 1 - b)
    low.bind(node, f"onnx_ops.gather_nd({low.var(x)}, {low.var(idx)}, {b}, {low.rank(x)}, {low.rank(idx)})",
             "gather_nd")


_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _check_scatter(graph: Graph, node: Any, a: dict) -> list[str]:
    reduction = attr_text(a, "reduction", "none")
    problems = [] if reduction in _REDUCTIONS else [
        f"reduction={reduction!r} (ONNX defines {', '.join(_REDUCTIONS)})"]
    if node.op_type != "ScatterND":
        problems += _axis_problem(graph, node, int(a.get("axis", 0)))
    return problems


@op("ScatterElements", "Scatter", check=_check_scatter)
def _scatter_elements(low: Lowering, node: Any, a: dict) -> None:
    x, idx, upd = node.input[:3]
    axis, rank = int(a.get("axis", 0)), low.rank(x)
    _set_rank(low, node, rank)
    reduction = attr_text(a, "reduction", "none")
    if reduction == "add" and rank >= 1 and _nonnegative_const(low, idx):
        # burnbook's scatter adds
        d = axis + rank if axis < 0 else axis
        expr = f"{low.var(x)}.scatter({d}, {low.var(idx)}, {low.var(upd)})"
    else:
        expr = (f"onnx_ops.scatter_elements({low.var(x)}, {axis}, {low.var(idx)}, {low.var(upd)}, "
                f"{quote(reduction)}, {rank})")
    low.bind(node, expr, "scatter_elements")


@op("ScatterND", check=_check_scatter)
def _scatter_nd(low: Lowering, node: Any, a: dict) -> None:
    x, idx, upd = node.input[:3]
    reduction = attr_text(a, "reduction", "none")
    _set_rank(low, node, low.rank(x))
    low.bind(node, f"onnx_ops.scatter_nd({low.var(x)}, {low.var(idx)}, {low.var(upd)}, {quote(reduction)}, "
                   f"{low.rank(x)}, {low.rank(idx)})", "scatter_nd")


# -- data-dependent shapes and one-hot ---------------------------------------------------
@op("NonZero")
def _nonzero(low: Lowering, node: Any, a: dict) -> None:
    x = node.input[0]
    _set_rank(low, node, 2)
    low.bind(node, f"onnx_ops.nonzero({low.var(x)}, {low.rank(x)})", "nonzero")


def _check_compress(graph: Graph, node: Any, a: dict) -> list[str]:
    return _axis_problem(graph, node, int(a["axis"])) if "axis" in a else []


@op("Compress", check=_check_compress)
def _compress(low: Lowering, node: Any, a: dict) -> None:
    x, cond = node.input[:2]
    axis = str(int(a["axis"])) if "axis" in a else "None"
    _set_rank(low, node, low.rank(x) if "axis" in a else 1)
    low.bind(node, f"onnx_ops.compress({low.var(x)}, {low.var(cond)}, {axis}, {low.rank(x)})", "compress")


def _check_one_hot(graph: Graph, node: Any, a: dict) -> list[str]:
    return _axis_problem(graph, node, int(a.get("axis", -1)), extra=1)


@op("OneHot", check=_check_one_hot)
def _one_hot(low: Lowering, node: Any, a: dict) -> None:
    idx, depth, values = node.input[:3]
    _set_rank(low, node, low.rank(idx) + 1)
    const = low.const(depth)
    if const is not None:
        if const.size != 1:
            raise OnnxImportError(f"node {node_label(node)} (OneHot): depth has {const.size} values, not one")
        depth_src = literal(int(float(const.reshape(-1)[0])))
    else:
        depth_src = low.var(depth)
    low.bind(node, f"onnx_ops.one_hot({low.var(idx)}, {depth_src}, {low.var(values)}, {int(a.get('axis', -1))}, "
                   f"{low.rank(idx)})", "one_hot")
