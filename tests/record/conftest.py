"""Shared sample records for the record tests."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import TensorData
from burnbook.record import (
    BinFileRecorder, BinGzFileRecorder, JsonGzFileRecorder, NamedMpkFileRecorder,
    NamedMpkGzFileRecorder, ParamRecord, PrettyJsonFileRecorder, Record,
)

FILE_RECORDERS = [
    NamedMpkFileRecorder, NamedMpkGzFileRecorder, BinFileRecorder,
    BinGzFileRecorder, JsonGzFileRecorder, PrettyJsonFileRecorder,
]


def make_record(seed: int = 0, size: int = 3) -> Record:
    """A small module-like record touching every kind of leaf."""
    rng = np.random.default_rng(seed)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return Record({
        "conv1": {
            "weight": ParamRecord("p-conv1-w", f32(size, 2, 3, 3)),
            "bias": ParamRecord("p-conv1-b", f32(size)),
        },
        "layers": [{"weight": ParamRecord(f"p-layer{i}", f32(size, size))} for i in range(2)],
        "norm": {"running_mean": TensorData.from_numpy(f32(size)), "steps": TensorData.from_numpy(np.arange(4))},
        "mask": TensorData.from_numpy(np.array([[True, False], [False, True]])),
        "scalar": TensorData.from_numpy(np.array(2.5, np.float32)),
        "empty": TensorData.from_numpy(np.zeros((0, 3), np.float32)),
        "lr": 1e-3, "epoch": 7, "name": "model", "done": False, "missing": None,
        "sizes": [1, 2, 3], "kernel": (3, 3), "$dollar": "kept",
    })


@pytest.fixture
def record() -> Record:
    return make_record()
