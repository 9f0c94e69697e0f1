"""The walk over a graph: every node checked against the operator table
first, so that one error names every problem of a model, then every live
node emitted in order (`lower`).

Importing `ops` here fills the table with every family's emitters; nothing
below this module imports `ops`.
"""

from __future__ import annotations

from . import ops  # noqa: F401 - importing the families fills TABLE
from .emit import emit_node
from .graph import Graph, OnnxImportError, attrs
from .graph.check import attribute_type_problems, node_label, printable
from .graph.subgraphs import live_nodes
from .lowering import Lowering, identifier
from .passes.fold import reexport_hints
from .table import TABLE


def supported_ops() -> list[str]:
    """The ONNX operators the importer translates, sorted."""
    return sorted(TABLE)


def check_graph(graph: Graph, refused: list | None = None) -> list[str]:
    """Every reason the graph cannot be translated (empty when it can); the
    nodes at fault are appended to `refused` when given."""
    problems: list[str] = []
    missing: dict[str, list] = {}
    refused = [] if refused is None else refused
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx"):
            missing.setdefault(printable(f"{node.domain}.{node.op_type}"), []).append(node)
            refused.append(node)
            continue
        entry = TABLE.get(node.op_type)
        if entry is None:
            missing.setdefault(printable(node.op_type), []).append(node)
            refused.append(node)
            continue
        wrong_types = attribute_type_problems(node, graph.opset)
        checker = entry[1]
        found = wrong_types or (checker(graph, node, attrs(node)) if checker is not None else [])
        refused += [node] if found else []
        for p in found:
            problems.append(f"node {node_label(node)} ({printable(node.op_type)}): {p}")
    for name in graph.inputs + graph.outputs:
        v = graph.values.get(name)
        if v is None or v.kind is None:
            what = v.dtype if v is not None else "an unknown type"
            problems.append(f"graph value {name!r} has {what}, which burnbook tensors cannot hold")
    if missing:
        listed = ", ".join(f"{k} ({_node_names(nodes)})" for k, nodes in sorted(missing.items()))
        problems.insert(0, f"unsupported operators: {listed}")
    return problems


def _node_names(nodes: list, shown: int = 3) -> str:
    """`node 'a'` or `x3: nodes 'a', 'b', 'c'`, at most `shown` names then a count."""
    names = ", ".join(node_label(n) for n in nodes[:shown])
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    return f"node {names}" if len(nodes) == 1 else f"x{len(nodes)}: nodes {names}{more}"


def lower(graph: Graph, origin: str = "this ONNX model") -> Lowering:
    """Translate every node; raises OnnxImportError listing all problems,
    naming `origin` (the file) and the opset, with any re-export advice."""
    refused: list = []
    problems = check_graph(graph, refused)
    where = f"{printable(origin)} (opset {graph.opset})"
    if problems:
        hints = "".join(f"\nhint: {h}" for h in reexport_hints(graph, refused))
        raise OnnxImportError(f"cannot import {where}:\n  - " + "\n  - ".join(problems) + hints
                              + f"\nsupported operators: {', '.join(supported_ops())}")
    low = Lowering(graph)
    for name in graph.inputs:
        low.names[name] = low.new_name(identifier(name, "input"))
    live = live_nodes(graph)
    for node in graph.nodes:
        if id(node) in low.fused or id(node) not in live:
            continue
        try:
            emit_node(low, node)
        except Exception as err:
            why = err if isinstance(err, OnnxImportError) else f"cannot translate it: {err}"
            hints = "".join(f"\nhint: {h}" for h in reexport_hints(graph, [node]))
            raise OnnxImportError(
                f"cannot import {where}: node {node_label(node)} ({printable(node.op_type)}): {why}{hints}") from err
    for name in graph.outputs:
        if name not in low.names:
            low.var(name)
    return low
