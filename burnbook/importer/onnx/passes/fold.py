"""Constant folding at import: every node whose inputs are all known before
the model runs is evaluated now and becomes a constant.

Exporters write shape arithmetic into the graph (`Shape` of a tensor, then
`Gather`, `Concat`, `ConstantOfShape`, `Equal`, `Where`, `Expand` ... to
build a `Reshape` target or an attention mask). When the shapes involved
are static, all of it is a constant, and folding it here means the
generated code holds the answer instead of the plumbing, and operators that
need a constant argument (a `Reshape` target, `Pad` widths) get one.

Known before run time means: an initializer, a `Constant`, a dim that shape
inference fixed to a number, or the output of a folded node. A dim with a
symbolic name (a dynamic batch or sequence length) is never known, so a
`Shape` that reads it stays in the graph and dynamic models stay dynamic;
dims of such a shape that are fixed still fold when a `Shape(start, end)`,
`Gather` or `Slice` picks only them.

Nodes are evaluated with onnx's reference evaluator
(`onnx.reference.ReferenceEvaluator`), one node at a time.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..emit import PAST_I64, SATURATING
from ..graph import Graph, Value, attrs, parse
from ..graph.subgraphs import with_subgraph_nodes
from ..graph.values import kind_of_array
from ..runtime.reductions import SATURATED_ABOVE
from ..table import TABLE

__all__ = ["fold_constants", "fold_model", "reexport_hints", "MAX_FOLDED_ELEMENTS"]

MAX_FOLDED_ELEMENTS = 1 << 20
"""A folded result larger than this stays a node: the generated model would
carry it as a weight, and an exporter's `Expand` to a big mask is cheaper to
compute than to store."""

# their results change from run to run, or they hold subgraphs: never folded
_NEVER = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
          "Bernoulli", "If", "Loop", "Scan", "SequenceMap", "Constant"}


def fold_constants(graph: Graph) -> Graph:
    """`graph` with every foldable node evaluated and removed (in place; also
    returned). The removed nodes' outputs become constants in `graph.values`."""
    partial: dict[str, list[int | None]] = {}  # 1-D int vectors with some dims known
    kept = []
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx") or node.op_type in _NEVER:
            kept.append(node)
            continue
        results = _fold_shape(graph, node, partial) if node.op_type in ("Shape", "Size") else None
        if results is None and node.op_type in ("Gather", "Slice") and node.input[0] in partial:
            results = _fold_partial(graph, node, partial)
        if results is None:
            results = _evaluate(graph, node)
        if results is None or not _record(graph, node, results):
            kept.append(node)
    graph.nodes = kept
    return graph


def fold_model(model: Any, rounds: int = 3) -> Graph:
    """The parsed, folded `Graph` of a `ModelProto`. When something folds,
    the folded values go back into the model as initializers and shape
    inference runs again: a `Reshape` whose target was exporter arithmetic
    gets a known rank only once that target is a constant, and the new
    static shapes may let more fold (up to `rounds` passes)."""
    from onnx import numpy_helper

    graph = fold_constants(parse(model))
    for _ in range(rounds - 1):
        before = len(model.graph.node)
        if len(graph.nodes) == before:
            break
        made = {out for n in graph.nodes for out in n.output}
        inits = {t.name for t in model.graph.initializer}
        # a subgraph (If branch, Scan body) may read an outer value no outer node reads
        needed = {i for n in with_subgraph_nodes(graph.nodes) for i in n.input} | set(graph.outputs)
        folded = [out for n in model.graph.node for out in n.output if out not in made]
        refolded = type(model)()
        refolded.CopyFrom(model)
        del refolded.graph.node[:]
        refolded.graph.node.extend(graph.nodes)
        for name in folded:
            if name and name in needed and name not in inits and graph.values[name].const is not None:
                refolded.graph.initializer.append(numpy_helper.from_array(graph.values[name].const, name))
        model = refolded
        graph = fold_constants(parse(model))
    return graph


def _const(graph: Graph, name: str) -> np.ndarray | None:
    v = graph.values.get(name)
    return None if v is None else v.const


def _evaluate(graph: Graph, node: Any) -> list[np.ndarray] | None:
    """The node's outputs when every present input is a constant, else None
    (also when the reference evaluator cannot run it)."""
    feeds = {}
    for name in node.input:
        if not name:
            continue
        arr = _const(graph, name)
        if arr is None:
            return None
        feeds[name] = arr
    if not feeds:
        return None
    narrow = _saturating_narrow_int(node, feeds)
    if narrow is not None:  # evaluated in i64, then clamped below
        feeds = {k: v.astype(np.int64) if v.dtype == narrow else v for k, v in feeds.items()}
    from onnx.reference import ReferenceEvaluator

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ReferenceEvaluator(node, opsets={"": graph.opset})
            outs = ref.run(None, feeds)
    except Exception:  # an op the evaluator lacks, or one it rejects: lower it as a node
        return None
    outs = [None if o is None else np.asarray(o) for o in outs]
    if narrow is not None:
        info = np.iinfo(narrow)
        clipped = [np.clip(o, info.min, info.max) for o in outs]
        if node.op_type in PAST_I64:  # floats give the sign and size, as `saturate_reduction` does
            floats = {k: v.astype(np.float64) if v.dtype == np.int64 and k == node.input[0] else v
                      for k, v in feeds.items()}
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                approx = np.asarray(ReferenceEvaluator(node, opsets={"": graph.opset}).run(None, floats)[0])
            big = np.abs(approx) > SATURATED_ABOVE
            clipped[0] = np.where(big & (approx > 0), info.max, np.where(big & (approx < 0), info.min, clipped[0]))
        outs = [o.astype(narrow) for o in clipped]
    return outs


def _saturating_narrow_int(node: Any, feeds: dict) -> np.dtype | None:
    """The narrow int dtype (int8 to uint32) of a reduction that onnxruntime
    computes exactly and saturates (`emit.SATURATING`), else None. The
    reference evaluator wraps there instead: ReduceSum of int32 [2**31 - 1, 1]
    would fold to -2**31 where the model computes 2**31 - 1."""
    if node.op_type not in SATURATING or not node.input or node.input[0] not in feeds:
        return None
    dtype = feeds[node.input[0]].dtype
    return dtype if dtype.kind in "iu" and dtype.itemsize < 8 else None


def _fold_shape(graph: Graph, node: Any, partial: dict) -> list[np.ndarray] | None:
    """`Shape` / `Size` of a value whose selected dims shape inference fixed."""
    v = graph.values.get(node.input[0])
    if v is None or v.shape is None:
        return None
    dims = [d if isinstance(d, int) else None for d in v.shape]
    if node.op_type == "Size":
        return None if None in dims else [np.asarray(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)]
    a = attrs(node)
    rank = len(dims)
    start, end = a.get("start", 0), a.get("end", rank)
    start, end = (min(max(i + rank if i < 0 else i, 0), rank) for i in (start, end))
    picked = dims[start:end]
    if None in picked:
        if node.output[0]:
            partial[node.output[0]] = picked
        return None
    return [np.asarray(picked, dtype=np.int64)]


def _fold_partial(graph: Graph, node: Any, partial: dict) -> list[np.ndarray] | None:
    """`Gather` or `Slice` (on axis 0, with constant indices) of a shape
    vector with unknown dims: folds when it picks only known ones."""
    dims = partial[node.input[0]]
    a = attrs(node)

    def arg(i: int, default: int) -> int | None:
        name = node.input[i] if len(node.input) > i else ""
        if not name:
            return default
        arr = _const(graph, name)
        return None if arr is None or arr.size != 1 else int(arr.reshape(-1)[0])

    try:
        if node.op_type == "Gather":
            idx = _const(graph, node.input[1])
            if idx is None or a.get("axis", 0) != 0:
                return None
            flat = [dims[int(i)] for i in idx.reshape(-1)]
            if None in flat:
                return None
            return [np.asarray(flat, dtype=np.int64).reshape(idx.shape)]
        start, end, axis, step = arg(1, 0), arg(2, 0), arg(3, 0), arg(4, 1)
        if None in (start, end, axis, step) or axis not in (0, -1) or step == 0:
            return None
        picked = dims[slice(start, end, step)]
    except IndexError:  # out-of-range indices: leave the error to run time
        return None
    if None in picked:
        if node.output[0]:
            partial[node.output[0]] = picked
        return None
    return [np.asarray(picked, dtype=np.int64)]


def _record(graph: Graph, node: Any, results: list) -> bool:
    """Store the node's results as constants; False (nothing stored) when
    one is missing, too large, or of a type burnbook tensors cannot hold."""
    if len(results) < sum(1 for o in node.output if o):
        return False
    for name, arr in zip(node.output, results):
        if not name:
            continue
        if arr is None or arr.size > MAX_FOLDED_ELEMENTS or kind_of_array(arr)[0] is None:
            return False
    for name, arr in zip(node.output, results):
        if name:
            kind, dtype = kind_of_array(arr)
            graph.values[name] = Value(name, kind, dtype, arr.ndim, list(arr.shape), arr)
    return True


# -- advice in refusals ----------------------------------------------------------------
def _dynamic_shape_values(graph: Graph) -> dict[str, set[str]]:
    """Values computed from the shape of a value with dynamic dims (what
    folding had to leave), each with the names of the dims it depends on."""
    derived: dict[str, set[str]] = {}
    for node in graph.nodes:
        if node.op_type in ("Shape", "Size") and node.input:
            v = graph.values.get(node.input[0])
            dims = [] if v is None or v.shape is None else [d for d in v.shape if not isinstance(d, int)]
            found = {str(d) if d else "?" for d in dims} if v is not None and v.shape is not None else {"?"}
            for out in node.output:
                derived[out] = found
            continue
        present = [i for i in node.input if i]
        if present and any(i in derived for i in present) and all(
                i in derived or _const(graph, i) is not None for i in present):
            found = set().union(*(derived.get(i, set()) for i in present))
            for out in node.output:
                derived[out] = found
    return derived


def _label(nodes: list, shown: int = 3) -> str:
    names = ", ".join(f"{n.op_type} {n.name or n.output[0]!r}" for n in nodes[:shown])
    return names + (f" and {len(nodes) - shown} more" if len(nodes) > shown else "")


def reexport_hints(graph: Graph, refused: list) -> list[str]:
    """What a re-export could change about the `refused` nodes: static
    shapes when they compute on a dynamic shape (folding then removes that
    arithmetic), the dynamo exporter for ATen fallbacks and old-opset graphs."""
    hints = []
    derived = _dynamic_shape_values(graph)
    plumbing = [n for n in refused if any(i in derived for i in n.input)]
    if plumbing:
        dims = sorted(set().union(*(derived[i] for n in plumbing for i in n.input if i in derived)))
        hints.append(
            f"{_label(plumbing)} compute{'s' if len(plumbing) == 1 else ''} on the shape of a value with "
            f"dynamic dims ({', '.join(repr(d) for d in dims)}); exported with static shapes (torch.onnx.export "
            "without dynamic_axes / dynamic_shapes), that shape arithmetic is folded to constants at import")
    aten = [n for n in refused if n.domain.startswith("org.pytorch")]
    # operators with no translation at all (not ones refused for an attribute)
    others = [n for n in refused if n not in plumbing and n not in aten
              and (n.domain not in ("", "ai.onnx") or n.op_type not in TABLE)]
    if aten:
        hints.append(f"{_label(aten)} {'is an ATen fallback' if len(aten) == 1 else 'are ATen fallbacks'} of "
                     "PyTorch's TorchScript exporter; re-export with torch.onnx.export(..., dynamo=True), "
                     "which writes standard ONNX operators")
    if others and graph.opset < 18:
        hints.append(f"the model is at opset {graph.opset}: if it comes from PyTorch's TorchScript exporter "
                     "(dynamo=False), re-exporting with torch.onnx.export(..., dynamo=True) writes an opset 18 "
                     "graph built from other operators, which may avoid these")
    return hints
