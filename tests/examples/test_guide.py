"""The guide example (`burnbook.examples.guide`): model shapes, a short
training run that learns, inference from the saved artifacts, and the
command line. Runs on the offline MNIST split (`$BURNBOOK_DATA`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from burnbook import Int, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.examples.guide import (
    MnistBatch, MnistBatcher, Model, ModelConfig, TrainingConfig, evaluate, infer, load_model, train,
)
from burnbook.optim import AdamConfig
from burnbook.train import ClassificationOutput, MetricsRendererBase, TrainOutput

ROOT = Path(__file__).resolve().parents[2]
B = Autodiff[NdArray]


def _shared_data() -> Path | None:
    for candidate in (os.environ.get("BURNBOOK_DATA"), ROOT.parent / "shared" / "data"):
        if candidate and (Path(candidate) / "mnist-offline").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="module")
def data_root() -> Path:
    path = _shared_data()
    if path is None:
        pytest.skip("no offline MNIST data (set BURNBOOK_DATA to ../shared/data)")
    return path


@pytest.fixture(scope="module")
def mnist(data_root: Path):
    from burnbook.data import MnistDataset, PartialDataset

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BURNBOOK_DATA", str(data_root))
        train_set, test_set = MnistDataset.train(download=False), MnistDataset.test(download=False)
    return PartialDataset(train_set, 0, 512), PartialDataset(test_set, 0, 500)


@pytest.fixture(scope="module")
def trained(mnist, tmp_path_factory):
    """One epoch on 512 training digits; (artifact_dir, config, model)."""
    train_set, test_set = mnist
    artifact_dir = tmp_path_factory.mktemp("guide")
    config = TrainingConfig(ModelConfig(10, 64), AdamConfig(), num_epochs=1, batch_size=32, num_workers=0,
                            seed=3, learning_rate=2e-3)
    model = train(artifact_dir, config, B.default_device(), dataset_train=train_set, dataset_valid=test_set,
                  renderer=MetricsRendererBase())
    return artifact_dir, config, model


def test_forward_shapes():
    B.seed(0)
    model = ModelConfig(num_classes=10, hidden_size=32).init()
    assert isinstance(model, Model)
    images = Tensor[B, 3].random([4, 28, 28])
    assert model.forward(images).dims() == [4, 10]
    assert model.valid().forward(images.inner()).dims() == [4, 10]
    assert model.linear1.weight.val().dims() == [16 * 8 * 8, 32]
    # 80 + 1168 weights and biases in the convolutions, 1024*32+32, 32*10+10
    assert model.num_params() == 80 + 1168 + (1024 * 32 + 32) + (32 * 10 + 10)


def test_steps_and_config():
    model = ModelConfig(10, 16, dropout=0.2).init()
    assert model.dropout.prob == 0.2
    targets = Tensor[B, 1, Int].from_data(np.array([1, 2, 3], dtype=np.int64))
    batch = MnistBatch(Tensor[B, 3].zeros([3, 28, 28]), targets)
    out = model.train_step(batch)
    assert isinstance(out, TrainOutput) and isinstance(out.item, ClassificationOutput)
    assert len(out.grads) == 8                           # weight and bias of 4 layers
    item = model.valid().valid_step(MnistBatch(batch.images.inner(), targets.inner()))
    assert item.output.dims() == [3, 10] and item.loss.dims() == [1]
    assert item.output.backend is NdArray


def test_batcher_normalises_as_the_book():
    class Item:
        def __init__(self, value: float, label: int) -> None:
            self.image, self.label = np.full((28, 28), value, dtype=np.float32), label

    batch = MnistBatcher(None, NdArray).batch([Item(0.0, 3), Item(255.0, 7)])
    images = batch.images.to_numpy()
    assert batch.images.dims() == [2, 28, 28] and batch.targets.dims() == [2]
    assert batch.targets.kind is Int and batch.targets.to_numpy().tolist() == [3, 7]
    np.testing.assert_allclose(images[0], (0.0 - 0.1307) / 0.3081, rtol=1e-6)
    np.testing.assert_allclose(images[1], (1.0 - 0.1307) / 0.3081, rtol=1e-6)
    assert MnistBatcher().backend is B


def test_one_epoch_learns(trained, mnist):
    _, _, model = trained
    result = evaluate(model, mnist[1])
    assert result.total == 500
    assert result.accuracy > 30.0, result          # chance is 10 %


def test_artifacts_and_inference(trained, mnist, capsys):
    artifact_dir, config, model = trained
    for name in ("config.json", "model.mpk", "experiment.log", "checkpoint/model-1.mpk",
                 "train/epoch-1/Accuracy.log", "valid/epoch-1/Loss.log"):
        assert (artifact_dir / name).is_file(), name
    assert TrainingConfig.load(artifact_dir / "config.json") == config

    loaded = load_model(artifact_dir)
    assert loaded.linear2.weight.val().backend is NdArray
    batch = MnistBatcher(None, NdArray).batch([mnist[1].get(i) for i in range(64)])
    ours = loaded.forward(batch.images).to_numpy()
    theirs = model.valid().forward(batch.images).to_numpy()
    np.testing.assert_allclose(ours, theirs, atol=0.05)     # saved in half precision
    assert (ours.argmax(1) == theirs.argmax(1)).mean() > 0.95

    item = mnist[1].get(0)
    predicted = infer(artifact_dir, None, item)
    assert capsys.readouterr().out.strip() == f"Predicted {predicted} Expected {item.label}"
    assert 0 <= predicted <= 9


def test_fusion_backend_reaches_the_ndarray_accuracy(trained, mnist, tmp_path):
    """The same run on Autodiff[Fusion[Taichi]] (fused element-wise kernels,
    Taichi's conv and pool kernels) ends where Autodiff[NdArray] does."""
    from burnbook.backend import Fusion, Taichi

    fused = Autodiff[Fusion[Taichi]]
    train_set, test_set = mnist
    _, config, model = trained
    model_fused = train(tmp_path, config, fused.default_device(), backend=fused, dataset_train=train_set,
                        dataset_valid=test_set, renderer=MetricsRendererBase())
    ours, ref = evaluate(model_fused, test_set, fused.default_device()), evaluate(model, test_set)
    assert abs(ours.correct - ref.correct) <= 2, (ours, ref)  # float rounding may flip a close call
    assert ours.loss == pytest.approx(ref.loss, rel=1e-3)
    assert Fusion[Taichi].stats()["fused_ops"] > 0


def test_command_line_takes_a_backend():
    from burnbook.examples.guide.__main__ import BACKENDS, parse_args

    assert parse_args(["--backend", "fusion"]).backend == "fusion"
    assert BACKENDS["fusion"]().name() == "autodiff<fusion<taichi>>"
    with pytest.raises(SystemExit):
        parse_args(["--backend", "cuda"])


def test_load_model_without_training(tmp_path):
    with pytest.raises(FileNotFoundError, match="train the model first"):
        load_model(tmp_path)


def test_command_line(data_root, tmp_path):
    env = {**os.environ, "BURNBOOK_DATA": str(data_root), "TI_LOG_LEVEL": "warn"}
    res = subprocess.run(
        [sys.executable, "-m", "burnbook.examples.guide", "--epochs", "1", "--limit-train", "512",
         "--artifact-dir", str(tmp_path / "run"), "--num-workers", "0"],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "Training on 512 digits, validating on 2000" in res.stdout
    assert "Validation accuracy:" in res.stdout
    assert "Predicted" in res.stdout
    assert (tmp_path / "run" / "model.mpk").is_file()
