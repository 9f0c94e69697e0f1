"""Add/Sub/Mul of shape arithmetic (run-time dims times constants) stay on the
host as Python lists in the generated forward: checked against onnxruntime,
and that no tensor is built for them."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from burnbook.backend import NdArray
from burnbook.importer.onnx import build_model
from burnbook.importer.onnx.modelgen import generate
from burnbook.tensor import Tensor

ort = pytest.importorskip("onnxruntime")


def _model():
    """x [b, 6] -> (x reshaped to [2b, 3], zeros [b + 1, 6 - 3], ones [b, 2b])."""
    init = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in
            (("zero", 0), ("two", 2), ("three", [3]), ("plus", [1, -3]), ("scale", [1, 2]), ("ax", [0]))]
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
        helper.make_node("Mul", ["b", "two"], ["b2"]),
        helper.make_node("Unsqueeze", ["b2", "ax"], ["b2v"]),
        helper.make_node("Concat", ["b2v", "three"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
        helper.make_node("Add", ["shape", "plus"], ["grown"]),
        helper.make_node("ConstantOfShape", ["grown"], ["z"],
                         value=numpy_helper.from_array(np.array([0.0], dtype=np.float32))),
        helper.make_node("Unsqueeze", ["b", "ax"], ["bv"]),
        helper.make_node("Mul", ["bv", "scale"], ["wide"]),
        helper.make_node("Sub", ["wide", "zero"], ["wide0"]),
        helper.make_node("ConstantOfShape", ["wide0"], ["o"],
                         value=numpy_helper.from_array(np.array([1.0], dtype=np.float32))),
    ]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z", "o")]
    graph = helper.make_graph(nodes, "host_arith",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 6])], outs, init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shape_arithmetic_runs_on_the_host_and_matches_onnxruntime():
    model = _model()
    source = generate(model).source
    forward = source[source.index("def forward"):]
    assert "tensor_like" not in forward and "onnx_ops.ints" not in forward, forward
    net = build_model(model, backend=NdArray)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.arange(batch * 6, dtype=np.float32).reshape(batch, 6)
        got = net(Tensor[NdArray, 2].from_data(x))
        want = session.run(None, {"x": x})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.to_numpy(), w)
