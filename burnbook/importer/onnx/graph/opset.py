"""Old models brought up to `MIN_OPSET` with onnx's version converter, and
what the converter loses on the way (the batch axis of Scan before opset 9)
given back.
"""

from __future__ import annotations

from typing import Any

from .check import check_einsum_equations
from .parsing import default_opset
from .values import OnnxImportError, require_onnx


MIN_OPSET = 13
"""Older models are upgraded to this opset with onnx's version converter
(opset 13 moved Squeeze/Unsqueeze/ReduceSum axes to inputs and fixed Softmax
to one axis; the generator reads both attribute and input forms)."""


def upgrade(model: Any) -> Any:
    """The model at opset >= MIN_OPSET: converted with onnx's version
    converter when older, or an error naming the minimum when that fails."""
    require_onnx()
    check_einsum_equations(model)
    opset = default_opset(model)
    if opset >= MIN_OPSET:
        return model
    try:
        from onnx import version_converter

        converted = version_converter.convert_version(model, MIN_OPSET)
    except Exception as err:
        raise OnnxImportError(
            f"the model uses opset {opset}; burnbook imports opset {MIN_OPSET} or newer, and onnx's "
            f"version converter could not upgrade it ({type(err).__name__}: {err}). Re-export it with "
            f"opset_version >= {MIN_OPSET}."
        ) from err
    if opset < 9:  # Scan's batch axis, which the converter drops
        converted = batched_scans(model, converted)
    return converted


def batched_scans(original: Any, converted: Any) -> Any:
    """Scan before opset 9 had a batch axis in front of every input and
    output, which onnx's version converter drops from the declared shapes
    only (the converted model expects unbatched tensors). Give it back: each
    such Scan becomes a Loop over the batch, its body gathering one batch
    row of every input and running the (converted) Scan on it, the rows'
    results stacked again. `original` is the model before conversion."""
    from onnx import TensorProto, helper

    old = [n for n in original.graph.node if n.op_type == "Scan" and n.domain in ("", "ai.onnx")]
    if not old:
        return converted
    declared = {vi.name: vi for vi in list(original.graph.input) + list(original.graph.output)
                + list(original.graph.value_info)}
    batched = set()
    nodes = []
    for node in converted.graph.node:
        if node.op_type != "Scan" or not any(list(node.output) == list(o.output) for o in old):
            nodes.append(node)
            continue
        tag = (node.output[0] or node.name or "scan").replace("/", "_") + "__batch"
        batched.update(n for n in list(node.input) + list(node.output) if n)
        first = next(n for n in node.input if n)
        nodes += [helper.make_node("Shape", [first], [f"{tag}_shape"]),
                  helper.make_node("Constant", [], [f"{tag}_zero"],
                                   value=helper.make_tensor(f"{tag}_zero", TensorProto.INT64, [], [0])),
                  helper.make_node("Gather", [f"{tag}_shape", f"{tag}_zero"], [f"{tag}_count"], axis=0)]
        body_nodes = [helper.make_node("Identity", [f"{tag}_cond_in"], [f"{tag}_cond_out"])]
        rows = []
        for k, name in enumerate(node.input):
            rows.append(f"{tag}_row{k}" if name else "")
            if name:
                body_nodes.append(helper.make_node("Gather", [name, f"{tag}_b"], [rows[-1]], axis=0))
        inner = helper.make_node("Scan", rows, [f"{tag}_out{k}" if o else "" for k, o in enumerate(node.output)],
                                 name=node.name)
        inner.attribute.extend(node.attribute)
        body_nodes.append(inner)
        elems = [o.type.tensor_type.elem_type for o in next(a.g for a in node.attribute if a.name == "body").output]
        outs = [helper.make_tensor_value_info(f"{tag}_cond_out", TensorProto.BOOL, [])]
        outs += [helper.make_tensor_value_info(f"{tag}_out{k}", elem, None) for k, elem in enumerate(elems)]
        body = helper.make_graph(body_nodes, f"{tag}_body",
                                 [helper.make_tensor_value_info(f"{tag}_b", TensorProto.INT64, []),
                                  helper.make_tensor_value_info(f"{tag}_cond_in", TensorProto.BOOL, [])], outs)
        nodes.append(helper.make_node("Loop", [f"{tag}_count", ""], list(node.output), name=node.name, body=body))
    del converted.graph.node[:]
    converted.graph.node.extend(nodes)
    # the declared shapes the converter cut: the original ones (with the batch axis), or none
    for field in (converted.graph.input, converted.graph.output):
        for vi in field:
            if vi.name in batched and vi.name in declared:
                vi.CopyFrom(declared[vi.name])
    kept = [vi for vi in converted.graph.value_info if vi.name not in batched]
    del converted.graph.value_info[:]
    converted.graph.value_info.extend(kept)
    return converted
