"""The guide's inference (the book's `src/inference.rs`).

`infer(artifact_dir, device, item)` loads what `train` saved, the training
config (for the model's settings) and the weights (`model.mpk`, written by
`CompactRecorder`), builds the model straight from the record on the plain
backend (no autodiff: nothing is trained here), and prints the digit it
predicts for one `MnistItem` beside the expected one::

    item = MnistDataset.test().get(42)
    infer("/tmp/guide", device, item)      # Predicted 4 Expected 4
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from burnbook.nn import resolve_backend
from burnbook.record import CompactRecorder
from .data import MnistBatcher
from .model import Model
from .training import TrainingConfig

__all__ = ["infer", "load_model"]


def load_model(artifact_dir: str | os.PathLike, device: Any = None, backend: type | None = None) -> Model:
    """The trained model of `artifact_dir`, for inference: on `backend`,
    by default the plain backend of `device` (`NdArray` for a `Cpu`)."""
    directory = Path(artifact_dir)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path} not found: train the model first "
                                "(burnbook.examples.guide.training.train)")
    config = TrainingConfig.load(config_path)
    record = CompactRecorder().load(directory / "model", device)
    backend = backend if backend is not None else resolve_backend(device).InnerBackend
    return config.model.init_with(record, device, backend)


def infer(artifact_dir: str | os.PathLike, device: Any, item: Any, backend: type | None = None) -> int:
    """Print and return the digit the trained model sees in `item` (on
    `backend`, by default the plain backend of `device`)."""
    model = load_model(artifact_dir, device, backend)
    label = item.label
    batcher = MnistBatcher(device, model.linear2.weight.val().backend)
    batch = batcher.batch([item])
    output = model.forward(batch.images)
    predicted = int(output.argmax(1).flatten(0, 1).into_scalar())
    print(f"Predicted {predicted} Expected {label}")
    return predicted
