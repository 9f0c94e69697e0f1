"""Subgraphs (the bodies of If, Loop and Scan) and liveness: walking nodes
with the nodes of their subgraphs, typing a body's values as the main
graph's are typed, and finding the nodes whose outputs something reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .parsing import record_constants, value_from_type
from .values import Graph


def with_subgraph_nodes(nodes: list) -> list:
    """`nodes` and, depth first, the nodes of their subgraphs (If branches),
    which may read the enclosing graph's values."""
    found = []
    for node in nodes:
        found.append(node)
        for attr in node.attribute:
            if attr.HasField("g"):
                found += with_subgraph_nodes(list(attr.g.node))
    return found


def register_subgraph(graph: Graph, body: Any, feeds: list | None = None) -> None:
    """Make a branch's values known to the lowering as the main graph's are
    (types from shape inference, initializers and Constant nodes as constants).
    `feeds` gives the body's inputs a type where the file leaves them untyped:
    (element type name, dims) or None, one per body input."""
    values = graph.values
    for vi in list(body.value_info) + list(body.input) + list(body.output) + _inferred(graph, body, feeds):
        v = value_from_type(vi.name, vi.type)
        known = values.get(vi.name)
        # an untyped entry (a subgraph may list outer values too) never hides a type found before
        if known is None or v.kind is not None or v.dtype is not None and known.dtype is None:
            values[vi.name] = v
    record_constants(body, values)


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
        found = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True).graph
    except Exception:  # best effort, as for the whole model
        return []
    return list(found.value_info) + [vi for vi in found.output if vi.type.HasField("tensor_type")]


def live_nodes(graph: Graph) -> set[int]:
    """Ids of the nodes whose outputs something reads: a graph output, a live
    node, or a subgraph (If/Loop/Scan body). The rest are not emitted: an
    exporter's `Shape` that folding left unused would otherwise run on every
    forward."""
    needed = set(graph.outputs)
    for node in graph.nodes:
        for attr in node.attribute:
            if attr.HasField("g") or len(attr.graphs):
                bodies = [attr.g] if attr.HasField("g") else list(attr.graphs)
                for body in bodies:
                    needed.update(n for inner in with_subgraph_nodes(list(body.node)) for n in inner.input)
    return live_ids(graph.nodes, needed)


def live_ids(nodes: list, needed: set) -> set[int]:
    """Ids of `nodes` (in order) whose outputs `needed` holds or a live node
    after them reads, with what their subgraphs read; `needed` grows."""
    live: set[int] = set()
    for node in reversed(nodes):
        if any(o and o in needed for o in node.output):
            live.add(id(node))
            needed.update(n for sub in with_subgraph_nodes([node]) for n in sub.input if n)
    return live
