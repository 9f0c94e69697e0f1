"""ONNX import end to end: a CNN exported from PyTorch, imported with
`ModelGen`, checked against onnxruntime on NdArray and Taichi, trained one
step under Autodiff; plus the refusals (unsupported operators, old opsets)."""

from __future__ import annotations

import importlib.util
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from burnbook import Int, Tensor  # noqa: E402
from burnbook.autodiff import Autodiff  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer import ModelGen  # noqa: E402
from burnbook.importer.onnx import MIN_OPSET, OnnxImportError, build_model, generate  # noqa: E402

BATCH = 4


def _export_cnn(path) -> None:
    """A small CNN touching Conv, BatchNormalization, MaxPool, Flatten, Gemm,
    Gelu (exported as Erf arithmetic) and LogSoftmax; the eval-mode export
    leaves its Dropout out of the graph."""
    torch = pytest.importorskip("torch")
    from torch import nn

    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(6)
            self.conv2 = nn.Conv2d(6, 8, 3, stride=2)
            self.pool = nn.MaxPool2d(2)
            self.drop = nn.Dropout(0.25)
            self.fc1 = nn.Linear(8 * 3 * 3, 24)
            self.fc2 = nn.Linear(24, 10)

        def forward(self, x):
            x = torch.relu(self.bn1(self.conv1(x)))
            x = self.pool(torch.relu(self.conv2(x)))
            x = self.drop(nn.functional.gelu(self.fc1(torch.flatten(x, 1))))
            return torch.log_softmax(self.fc2(x), dim=1)

    net = Net()
    with torch.no_grad():  # non-trivial running statistics
        net.bn1.running_mean.uniform_(-0.5, 0.5)
        net.bn1.running_var.uniform_(0.5, 1.5)
    net.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(BATCH, 1, 14, 14),), str(path), dynamo=False,
                          do_constant_folding=False, input_names=["images"], output_names=["log_probs"],
                          opset_version=17)


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("onnx") / "cnn.onnx"
    _export_cnn(path)
    return path


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(3).standard_normal((BATCH, 1, 14, 14)).astype(np.float32)


@pytest.fixture(scope="module")
def reference(cnn_path, images):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(cnn_path), providers=["CPUExecutionProvider"])
    return session.run(None, {"images": images})[0]


@pytest.fixture(scope="module")
def generated(cnn_path, tmp_path_factory):
    """ModelGen's output folder, imported as a Python module."""
    out = tmp_path_factory.mktemp("model")
    result = ModelGen().input(cnn_path).out_dir(out).run()
    spec = importlib.util.spec_from_file_location("generated_cnn", result.source_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["generated_cnn"] = module
    spec.loader.exec_module(module)
    yield result, module
    sys.modules.pop("generated_cnn", None)


def test_modelgen_writes_a_readable_module_and_a_record(generated):
    result, module = generated
    assert result.source_path.name == "cnn.py" and result.source_path.exists()
    assert result.record_path.name == "cnn.mpk" and result.record_path.exists()
    source = result.source_path.read_text()
    # layers a person would declare, and a forward written with the Tensor API
    for text in ("class Model(Module):", "conv1: nn.Conv2d", "norm1: nn.BatchNorm", "linear2: nn.Linear",
                 "def forward(self, images: Tensor) -> Tensor:",
                 "activation.log_softmax(", "def from_file(", "def default("):
        assert text in source, text
    assert "onnx_ops" not in source  # nothing here needs an ONNX-specific helper
    model = module.Model.default(backend=NdArray)
    assert model.num_params() == sum(a.size for k, a in result.weights.items() if "running" not in k)


def test_generated_model_matches_onnxruntime_on_ndarray(generated, images, reference):
    _, module = generated
    model = module.Model.default(backend=NdArray)
    out = model(Tensor[NdArray, 4].from_data(images)).to_numpy()
    assert out.shape == reference.shape
    np.testing.assert_allclose(out, reference, atol=1e-4, rtol=1e-4)


def test_in_memory_build_matches_the_written_files(cnn_path, generated, images):
    _, module = generated
    from_files = module.Model.from_file(generated[0].record_path, backend=NdArray)
    in_memory = build_model(cnn_path, backend=NdArray)
    x = Tensor[NdArray, 4].from_data(images)
    np.testing.assert_array_equal(from_files(x).to_numpy(), in_memory(x).to_numpy())


def test_generated_model_runs_and_trains_on_taichi(generated, images, reference):
    pytest.importorskip("taichi")
    from burnbook.backend import Taichi

    _, module = generated
    model = module.Model.default(backend=Taichi)
    out = model(Tensor[Taichi, 4].from_data(images)).to_numpy()
    np.testing.assert_allclose(out, reference, atol=1e-4, rtol=1e-4)

    # and trainable there: Autodiff[Taichi] gives Autodiff[NdArray]'s gradients
    def weight_grads(B):
        m = module.Model.default(backend=B)
        grads = m(Tensor[B, 4].from_data(images)).sum().backward()
        return {p: m_p.val().grad(grads).to_numpy() for p, m_p in m.named_params() if "running" not in p}

    on_taichi, on_ndarray = weight_grads(Autodiff[Taichi]), weight_grads(Autodiff[NdArray])
    assert on_taichi.keys() == on_ndarray.keys()
    for path in on_ndarray:
        np.testing.assert_allclose(on_taichi[path], on_ndarray[path], atol=1e-4, rtol=1e-4, err_msg=path)


def test_imported_model_trains_under_autodiff(generated, images):
    from burnbook.optim import GradientsParams, SgdConfig

    _, module = generated
    B = Autodiff[NdArray]
    targets = np.array([0, 1, 2, 3])

    def nll(model, backend):
        """Mean negative log-likelihood: the model returns log-probabilities."""
        x = Tensor[backend, 4].from_data(images)
        index = Tensor[backend, 2, Int].from_data(targets.reshape(-1, 1))
        return model(x).gather(1, index).mean().neg()

    model = module.Model.default(backend=B)
    B.seed(1)
    grads = nll(model, B).backward()
    named = dict(model.named_params())
    for path in ("conv1.weight", "norm1.gamma", "linear1.weight", "linear2.bias"):
        g = named[path].val().grad(grads)
        assert g is not None and np.abs(g.to_numpy()).sum() > 0, path
    trained = SgdConfig().init().step(0.05, model, GradientsParams.from_grads(grads, model))
    before = nll(module.Model.default(backend=NdArray), NdArray).into_scalar()
    after = nll(trained.valid(), NdArray).into_scalar()
    assert after < before


def _single_op_model(nodes, inputs, outputs, opset=MIN_OPSET, initializers=()):
    return helper.make_model(
        helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers)),
        opset_imports=[helper.make_opsetid("", opset)],
    )


def test_unsupported_operators_are_listed_together_before_anything_is_written(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Custom", ["a"], ["b"], domain="com.example"),
        helper.make_node("TfIdfVectorizer", ["b"], ["c"]),
        helper.make_node("Custom", ["c"], ["d"], domain="com.example"),
        helper.make_node("Conv", ["d", "d"], ["y"], kernel_shape=[2, 2, 2]),
    ]
    path = tmp_path / "bad.onnx"
    onnx.save(_single_op_model(nodes, [x], [y]), str(path))
    out = tmp_path / "out"
    with pytest.raises(OnnxImportError) as err:
        ModelGen().input(path).out_dir(out).run()
    text = str(err.value)
    assert "unsupported operators: TfIdfVectorizer" in text and "com.example.Custom (x2" in text
    assert "Conv with 3 spatial dims" in text
    assert "\nsupported operators: " in text and " Add, " in text
    assert not out.exists()


def test_old_opset_is_upgraded_and_runs():
    ort = pytest.importorskip("onnxruntime")
    # opset 9: Unsqueeze takes `axes` as an attribute, Softmax flattens from `axis`
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=2),
             helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0])]
    model = _single_op_model(nodes, [x], [y], opset=9)
    model.ir_version = 8  # what onnxruntime reads; helper writes the newest
    gen = generate(model)
    assert gen.opset == MIN_OPSET
    data = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": data})[0]
    got = build_model(model, backend=NdArray)(Tensor[NdArray, 3].from_data(data)).to_numpy()
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_opset_that_cannot_be_upgraded_is_refused_naming_the_minimum():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = _single_op_model([helper.make_node("Shrink", ["x"], ["y"])], [x], [y], opset=8)
    with pytest.raises(OnnxImportError, match=rf"opset 8; burnbook imports opset {MIN_OPSET} or newer"):
        generate(model)


def test_missing_and_unreadable_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no ONNX file"):
        ModelGen().input(tmp_path / "nope.onnx").out_dir(tmp_path).run()
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\x01 not a protobuf")
    with pytest.raises(OnnxImportError, match="junk.onnx is not a readable ONNX model"):
        generate(junk)
    with pytest.raises(ValueError, match=r"call .out_dir"):
        ModelGen().input(junk).run()


def test_constant_operands_become_recorded_params():
    """A float initializer that no layer absorbs is a `Param` field: saved in
    the record and trained like any weight."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    scale = onnx.numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "scale")
    model = _single_op_model([helper.make_node("Mul", ["x", "scale"], ["y"])], [x], [y], initializers=[scale])
    gen = generate(model)
    assert "scale: Param" in gen.source and "self.scale.val().unsqueeze()" in gen.source
    m = build_model(model, backend=NdArray)
    out = m(Tensor[NdArray, 2].from_data(np.ones((2, 3), np.float32))).to_numpy()
    np.testing.assert_array_equal(out, [[1, 2, 3], [1, 2, 3]])


class _Zoo:
    """A second exported model: dynamic batch (`view(size(0), ...)` becomes
    Shape/Gather/Concat/Reshape), ConvTranspose2d, AvgPool2d, a dilated
    padded Conv1d, Transpose, LayerNorm, Slice, Concat, MatMul + Add (a
    Linear on rank 3), Softmax, ReduceMean/ReduceSum and Clip."""

    @staticmethod
    def export(path) -> object:
        torch = pytest.importorskip("torch")
        from torch import nn

        torch.manual_seed(1)

        class Zoo(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.up = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
                self.pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
                self.conv1d = nn.Conv1d(4, 6, 3, padding=2, dilation=2)
                self.norm = nn.LayerNorm(6)
                self.head = nn.Linear(16, 5)

            def forward(self, x, extra):
                y = torch.tanh(self.pool(self.up(x)))                 # [b, 4, 4, 4]
                y = y.view(y.size(0), y.size(1), -1)                  # [b, 4, 16]
                y = torch.sigmoid(self.conv1d(y))                     # [b, 6, 16]
                y = self.norm(y.transpose(1, 2) * 2.0 - extra)        # [b, 16, 6]
                y = torch.cat([y, y[:, :, :2]], dim=2).transpose(1, 2)  # [b, 8, 16]
                y = torch.softmax(self.head(y), dim=-1)               # [b, 8, 5]
                return y.mean(dim=1) + torch.clamp(extra.sum(dim=1), -1.0, 1.0)

        net = Zoo().eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, (torch.zeros(2, 3, 4, 4), torch.zeros(2, 16, 1)), str(path), dynamo=False,
                              input_names=["x", "extra"], output_names=["y"], opset_version=17,
                              dynamic_axes={"x": {0: "b"}, "extra": {0: "b"}, "y": {0: "b"}})
        return net


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    path = tmp_path_factory.mktemp("zoo") / "zoo.onnx"
    net = _Zoo.export(path)
    rng = np.random.default_rng(4)
    # batch 3, not the export's 2: the batch dim is dynamic
    inputs = (rng.standard_normal((3, 3, 4, 4)).astype(np.float32), rng.standard_normal((3, 16, 1)).astype(np.float32))
    return path, net, inputs


def test_dynamic_shapes_and_many_layers_match_onnxruntime(zoo):
    ort = pytest.importorskip("onnxruntime")
    path, _, (x, extra) = zoo
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "extra": extra})[0]
    source = generate(path).source
    assert "linear1: nn.Linear" in source and "self.linear1(" in source  # MatMul + Add folded into a layer
    assert "conv_transpose1: nn.ConvTranspose2d" in source and "layer_norm1: nn.LayerNorm" in source
    model = build_model(path, backend=NdArray)
    got = model(Tensor[NdArray, 4].from_data(x), Tensor[NdArray, 3].from_data(extra)).to_numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)


def test_input_gradients_match_torch_autograd(zoo):
    """Backward through every translated op, checked against PyTorch."""
    torch = pytest.importorskip("torch")
    path, net, (x, extra) = zoo
    weights = np.random.default_rng(9).standard_normal((3, 5)).astype(np.float32)
    tx, te = torch.from_numpy(x).requires_grad_(), torch.from_numpy(extra).requires_grad_()
    (net(tx, te) * torch.from_numpy(weights)).sum().backward()

    B = Autodiff[NdArray]
    model = build_model(path, backend=B)
    bx = Tensor[B, 4].from_data(x).require_grad()
    be = Tensor[B, 3].from_data(extra).require_grad()
    grads = (model(bx, be) * Tensor[B, 2].from_data(weights)).sum().backward()
    np.testing.assert_allclose(bx.grad(grads).to_numpy(), tx.grad.numpy(), atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(be.grad(grads).to_numpy(), te.grad.numpy(), atol=1e-5, rtol=1e-4)


def test_dynamic_model_on_taichi(zoo):
    pytest.importorskip("taichi")
    from burnbook.backend import Taichi

    path, _, (x, extra) = zoo
    on_nd = build_model(path, backend=NdArray)(Tensor[NdArray, 4].from_data(x), Tensor[NdArray, 3].from_data(extra))
    on_ti = build_model(path, backend=Taichi)(Tensor[Taichi, 4].from_data(x), Tensor[Taichi, 3].from_data(extra))
    np.testing.assert_allclose(on_ti.to_numpy(), on_nd.to_numpy(), atol=1e-5)
