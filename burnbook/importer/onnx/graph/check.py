"""Checks that refuse a model, or name its faults, before any code is
generated: Einsum equations onnx's shape inference would hang on,
attributes whose type is not the one the operator's schema declares, and
how messages name a node (its name, quoted, escaped when it is not plain
printable ASCII). The operator table's own checks run in `walk`.
"""

from __future__ import annotations

import re
from typing import Any

from .values import OnnxImportError


# terms of letters with at most one ellipsis each, comma-joined, then an optional output term
_EINSUM = re.compile(r"[A-Za-z]*(\.\.\.[A-Za-z]*)?(,[A-Za-z]*(\.\.\.[A-Za-z]*)?)*(->[A-Za-z]*(\.\.\.[A-Za-z]*)?)?")


def _all_nodes(graph: Any) -> Any:
    """Every node of a GraphProto, those of subgraphs (If, Loop, Scan) included."""
    for node in graph.node:
        yield node
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _all_nodes(sub)


def check_einsum_equations(model: Any) -> None:
    """Refuse a malformed Einsum equation before onnx sees the model: onnx's
    shape inference never returns on some (`"i.j->ij"`), so a crafted file
    would hang the importer instead of being refused."""
    for node in _all_nodes(model.graph):
        if node.op_type != "Einsum" or node.domain not in ("", "ai.onnx"):
            continue
        eq = next((a.s for a in node.attribute if a.name == "equation"), b"")
        text = eq.decode("utf-8", errors="replace").replace(" ", "")
        if not _EINSUM.fullmatch(text):
            name = node.name or (node.output[0] if node.output else "<no output>")
            raise OnnxImportError(f"node {ascii(name)}: Einsum equation {ascii(text)} is not of the form "
                                  "'ab,bc->ac' (letters, ',', at most one '...' per term, '->')")


def node_label(node: Any) -> str:
    """How messages name a node: its name, else its first output, quoted."""
    return repr(node.name or (node.output[0] if len(node.output) else f"<{node.op_type} without outputs>"))


def printable(text: str) -> str:
    """`text` as it is when it is plain printable ASCII, else escaped, so a
    name from the file cannot break up or recolour an error message."""
    return text if text.isascii() and text.isprintable() else ascii(text)


def attribute_type_problems(node: Any, opset: int) -> list[str]:
    """Attributes whose type is not the one the operator's ONNX schema
    declares (a string where an int belongs, say): the emitters read each
    attribute as its declared type and never see such a value."""
    from onnx import AttributeProto, defs

    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except Exception:  # no schema at this opset: the emitter's own checks decide
        return []
    problems = []
    for a in node.attribute:
        declared = schema.attributes.get(a.name)
        if declared is not None and int(a.type) != int(declared.type):
            got = AttributeProto.AttributeType.Name(a.type)
            problems.append(f"attribute {a.name!r} is {got}, the ONNX spec of {node.op_type} says "
                            f"{declared.type.name}")
    return problems
