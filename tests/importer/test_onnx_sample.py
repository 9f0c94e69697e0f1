"""The sample model of the "Import ONNX Model" chapter: the file kept in
notebooks/assets/ is what tools/make_sample_onnx.py writes, and PyTorch's
export of the same MLP generates the same code and weights, so the chapter
prints the same numbers with or without PyTorch."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from burnbook import Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.importer.onnx import build_model, generate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ASSET = ROOT / "notebooks" / "assets" / "mnist_mlp.onnx"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("make_sample_onnx", ROOT / "tools" / "make_sample_onnx.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_asset_is_what_the_tool_writes(tool):
    model = tool.build_model(tool.mlp_weights())
    onnx.checker.check_model(model)
    assert ASSET.read_bytes() == model.SerializeToString()


def test_asset_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(5).standard_normal((3, 1, 28, 28)).astype(np.float32)
    expected = ort.InferenceSession(str(ASSET), providers=["CPUExecutionProvider"]).run(None, {"images": x})[0]
    got = build_model(ASSET, backend=NdArray)(Tensor[NdArray, 4].from_data(x)).to_numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_pytorch_export_generates_the_same_model(tool, tmp_path):
    torch = pytest.importorskip("torch")

    class TorchMlp(torch.nn.Module):  # the chapter's model
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(784, 64)
            self.fc2 = torch.nn.Linear(64, 10)

        def forward(self, images):
            return self.fc2(torch.relu(self.fc1(torch.flatten(images, 1))))

    net = TorchMlp()
    net.load_state_dict({k: torch.from_numpy(v) for k, v in tool.mlp_weights().items()})
    net.eval()
    path = tmp_path / "mnist_mlp.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(1, 1, 28, 28),), str(path), dynamo=False,
                          input_names=["images"], output_names=["logits"],
                          dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17)
    exported, kept = generate(path, origin="mnist_mlp.onnx"), generate(ASSET, origin="mnist_mlp.onnx")
    assert exported.source == kept.source
    assert exported.weights.keys() == kept.weights.keys()
    for key in kept.weights:
        np.testing.assert_array_equal(exported.weights[key], kept.weights[key])
