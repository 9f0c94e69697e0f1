"""Equal and Where on shape values stay on the host: the TorchScript
exporter's `token.expand(n, -1, -1)` (a ViT's class token) becomes
Concat([n], [-1, -1]) -> Reshape([-1]) -> Equal(., -1) -> Where(., 1, .) ->
Expand, and with a dynamic batch the generated forward computes that target
as Python lists (`onnx_ops.host_equal` / `host_where`), no tensor built.
Checked against onnxruntime at two batch sizes; a Bool host value that a
tensor consumer reads is built as a Bool tensor."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from burnbook.backend import NdArray
from burnbook.importer.onnx import build_model, runtime
from burnbook.importer.onnx.modelgen import generate
from burnbook.tensor import Tensor

ort = pytest.importorskip("onnxruntime")


def _model(extra_outputs: bool) -> object:
    """x [b, 3, 4] -> (cat(token expanded to [b, 1, 4], x) [b, 4, 4]; with
    `extra_outputs` also the Equal mask and its Cast to int64)."""
    arrays = {"zero": np.array(0), "minus": np.array([-1, -1]), "flat": np.array([-1]),
              "neg3": np.array([-1, -1, -1]), "ones3": np.array([1, 1, 1])}
    init = [numpy_helper.from_array(v.astype(np.int64), k) for k, v in arrays.items()]
    init.append(numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 1, 4) - 1.5, "token"))
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "zero_axes"], ["bv"]),
        helper.make_node("Concat", ["bv", "minus"], ["want"], axis=0),
        helper.make_node("Reshape", ["want", "flat"], ["want_flat"]),
        helper.make_node("Equal", ["want_flat", "neg3"], ["keep"]),
        helper.make_node("Where", ["keep", "ones3", "want_flat"], ["target"]),
        helper.make_node("Expand", ["token", "target"], ["tokens"]),
        helper.make_node("Concat", ["tokens", "x"], ["y"], axis=1),
    ]
    init.append(numpy_helper.from_array(np.array([0], dtype=np.int64), "zero_axes"))
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_outputs:
        nodes.append(helper.make_node("Cast", ["keep"], ["keep_int"], to=TensorProto.INT64))
        outs += [helper.make_tensor_value_info("keep", TensorProto.BOOL, None),
                 helper.make_tensor_value_info("keep_int", TensorProto.INT64, None)]
    graph = helper.make_graph(nodes, "class_token",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, 4])], outs, init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("extra_outputs", [False, True])
def test_expand_target_from_equal_and_where_stays_on_the_host(extra_outputs: bool) -> None:
    model = _model(extra_outputs)
    forward = generate(model).source.split("def forward")[1]
    assert "onnx_ops.host_equal(" in forward and "onnx_ops.host_where(" in forward, forward
    assert ".equal(" not in forward and "mask_where" not in forward, forward
    if extra_outputs:  # the mask is also an output: a Bool tensor is built from the host list
        assert "onnx_ops.tensor_like(" in forward and ", Bool)" in forward, forward
    else:
        assert "tensor_like" not in forward, forward
    net = build_model(model, backend=NdArray)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 4)).astype(np.float32)
        got = net(Tensor[NdArray, 3].from_data(x))
        got = got if isinstance(got, tuple) else (got,)
        want = session.run(None, {"x": x})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.to_numpy().dtype.kind == w.dtype.kind
            np.testing.assert_array_equal(g.to_numpy(), w)


def test_host_helpers_broadcast_one_element_and_name_a_mismatch() -> None:
    assert runtime.host_equal([4, -1, -1], [-1]) == [False, True, True]
    assert runtime.host_where([False, True, True], [1, 1, 1], [4, -1, -1]) == [4, 1, 1]
    assert runtime.host_where([True], [7], [1, 2]) == [7, 7]
    with pytest.raises(ValueError, match=r"Equal: host values of lengths \[2, 3\]"):
        runtime.host_equal([1, 2], [1, 2, 3])
