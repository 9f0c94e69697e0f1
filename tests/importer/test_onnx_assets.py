"""The ONNX files chapter 19 imports (written by tools/make_mnist_onnx.py).

mnist_cnn.onnx must be a small, trained digit reader that burnbook imports
and runs as onnxruntime runs it; squeezenet1_1.onnx must be torchvision's
graph without its weights, small, and importable once weights are drawn.
onnxruntime is the independent reference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from onnx import numpy_helper  # noqa: E402

from burnbook import Tensor  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.data import DatasetNotFoundError, MnistDataset  # noqa: E402
from burnbook.importer.onnx import build_model  # noqa: E402

ASSETS = Path(__file__).resolve().parents[2] / "notebooks" / "assets"


def run_both(path: Path, images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The model's output for `images` from burnbook (NdArray) and from onnxruntime."""
    ours = build_model(str(path), backend=NdArray).forward(Tensor[NdArray, 4].from_data(images)).to_numpy()
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return ours, session.run(None, {session.get_inputs()[0].name: images})[0]


def test_mnist_cnn_is_small_and_trained_and_reads_held_out_digits_as_onnxruntime_does() -> None:
    path = ASSETS / "mnist_cnn.onnx"
    assert path.stat().st_size <= 2_000_000, f"{path.name} is {path.stat().st_size} bytes, over 2 MB"
    props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert float(props["test_accuracy"].split()[0]) >= 0.97, props
    try:
        test = MnistDataset.test(download=False)
    except DatasetNotFoundError:
        pytest.skip("MNIST is not under BURNBOOK_DATA")
    # The last 200 test digits: never trained on, whichever data folder is used.
    items = [test.get(i) for i in range(len(test) - 200, len(test))]
    pixels = np.stack([np.asarray(item.image, dtype=np.float32) for item in items])
    images = ((pixels / 255.0 - 0.1307) / 0.3081)[:, None].astype(np.float32)
    labels = np.array([int(item.label) for item in items])
    ours, reference = run_both(path, images)
    assert (ours.argmax(1) == reference.argmax(1)).all()
    np.testing.assert_allclose(ours, reference, atol=1e-4, rtol=0)
    assert (ours.argmax(1) == labels).mean() >= 0.95


def test_squeezenet_ships_its_graph_without_weights_and_imports_once_they_are_drawn(tmp_path) -> None:
    path = ASSETS / "squeezenet1_1.onnx"
    assert path.stat().st_size < 100_000, f"{path.name} is {path.stat().st_size} bytes: weights shipped?"
    model = onnx.load(str(path), load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("Conv") == 26 and ops.count("Concat") == 8  # squeezenet1_1's 8 fire modules
    rng = np.random.default_rng(0)
    for tensor in model.graph.initializer:
        dims = tuple(tensor.dims)
        bound = np.sqrt(6.0 / np.prod(dims[1:])) if len(dims) > 1 else 0.1
        tensor.CopyFrom(numpy_helper.from_array(rng.uniform(-bound, bound, dims).astype(np.float32),
                                                tensor.name))
    onnx.save(model, str(tmp_path / "squeezenet1_1.onnx"))
    images = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
    ours, reference = run_both(tmp_path / "squeezenet1_1.onnx", images)
    assert ours.shape == (1, 1000)
    np.testing.assert_allclose(ours, reference, atol=1e-5 * np.abs(reference).max(), rtol=0)
