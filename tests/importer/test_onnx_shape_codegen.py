"""Shape arithmetic of dynamic-shape exports stays on the host: a `Shape`
read through Gather/Unsqueeze/Concat/Slice/Cast into a Reshape target
becomes Python ints from `x.dims()`, not tensors built and read back each
forward; nodes nothing reads are not emitted. Checked on the generated
source and against onnxruntime at several batch sizes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from burnbook import Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import build_model, generate  # noqa: E402


def _ints(name: str, values: list[int]):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _check(model, shapes: list[tuple]) -> str:
    """The generated source, after matching onnxruntime at every input shape."""
    gen = generate(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    net = build_model(model, backend=NdArray)
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        want = session.run(None, {"x": x})[0]
        got = net(Tensor[NdArray, len(shape)].from_data(x)).to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return gen.source


def test_channel_shuffle_export_reads_the_batch_from_dims():
    torch = pytest.importorskip("torch")

    class Shuffle(torch.nn.Module):
        def forward(self, x):
            b, c, h, w = x.size()
            y = x.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)
            return torch.relu(y[:, : c // 2]) + y[:, c // 2:]

    import io

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Shuffle(), (torch.zeros(2, 8, 3, 5),), buf, dynamo=False, input_names=["x"],
                          output_names=["y"], opset_version=17, dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    model = onnx.load_from_string(buf.getvalue())
    assert sum(n.op_type == "Shape" for n in model.graph.node) >= 1  # the export does read the shape
    source = _check(model, [(1, 8, 3, 5), (5, 8, 3, 5)])
    forward = source[source.index("def forward"):]
    assert ".dims()" in forward
    for round_trip in ("onnx_ops.shape(", "onnx_ops.ints(", "onnx_ops.gather(", "onnx_ops.unsqueeze(",
                       "tensor_like(", "Tensor.cat("):
        assert round_trip not in forward, round_trip


def test_shape_slice_cast_squeeze_on_the_host_and_unused_nodes_dropped():
    # y = reshape(x, shape(x)[0:1] ++ [-1]) after a Cast and a Squeeze/Unsqueeze round,
    # plus a Shape and a Relu nothing reads
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "zero", "one"], ["s01"]),
        helper.make_node("Cast", ["s01"], ["s01i"], to=TensorProto.INT32),
        helper.make_node("Cast", ["s01i"], ["s01l"], to=TensorProto.INT64),
        helper.make_node("Squeeze", ["s01l", "zero"], ["b0"]),
        helper.make_node("Unsqueeze", ["b0", "zero"], ["b1"]),
        helper.make_node("Concat", ["b1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
        helper.make_node("Shape", ["x"], ["unused_shape"], start=1),
        helper.make_node("Relu", ["x"], ["unused_relu"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[
        _ints("zero", [0]), _ints("one", [1]), _ints("minus_one", [-1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    source = _check(model, [(2, 3, 4), (7, 3, 4)])
    forward = source[source.index("def forward"):]
    assert "onnx_ops.shape(" not in forward and "onnx_ops.ints(" not in forward
    assert "relu" not in forward and forward.count(".dims()") == 1


def test_a_shape_value_a_tensor_op_reads_is_built_as_a_tensor():
    # the batch size enters arithmetic (Mul): that consumer gets an Int tensor
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b0"], axis=0),
        helper.make_node("Cast", ["b0"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "bf"], ["y"]),
    ]
    zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    source = _check(model, [(2, 3), (6, 3)])
    assert "onnx_ops.tensor_like(" in source


def test_constant_of_shape_and_expand_take_the_host_dims():
    # zeros of [2, b, 4] (an LSTM export's initial state) and x broadcast to [b, 3] via Expand
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b0"], axis=0),
        helper.make_node("Concat", ["two", "b0", "four"], ["zshape"], axis=0),
        helper.make_node("ConstantOfShape", ["zshape"], ["z"]),
        helper.make_node("Concat", ["b0", "three"], ["eshape"], axis=0),
        helper.make_node("Expand", ["x", "eshape"], ["e"]),
        helper.make_node("ReduceSum", ["z", "zero"], ["zs"], keepdims=0),
        helper.make_node("Concat", ["zs", "e"], ["y"], axis=1),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[
        _ints("zero", [0]), _ints("two", [2]), _ints("three", [3]), _ints("four", [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    source = _check(model, [(1, 1), (5, 1)])
    forward = source[source.index("def forward"):]
    assert "tensor_like(" not in forward and "onnx_ops.shape(" not in forward
