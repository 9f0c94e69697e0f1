"""Chapter 20's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from burnbook import nn
from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.importer.pytorch import LoadArgs, PyTorchFileRecorder
from burnbook.module import Module
from burnbook.record import DoublePrecisionSettings, FullPrecisionSettings

ASSETS = Path(__file__).resolve().parents[2] / "notebooks" / "assets"
ex = exercises("20")
device = NdArray.default_device()
recorder = PyTorchFileRecorder(FullPrecisionSettings)

# mlp.pt holds torch.nn.Sequential(Linear(4, 8), BatchNorm1d(8), ReLU(), Linear(8, 3)).
KEYS = {"0.weight": [8, 4], "0.bias": [8], "1.weight": [8], "1.bias": [8], "1.running_mean": [8],
        "1.running_var": [8], "1.num_batches_tracked": [], "3.weight": [3, 8], "3.bias": [3]}


def test_predict_the_keys():
    assert ex[1].verdict((KEYS, [4, 8], {"1.num_batches_tracked"})).ok
    assert ex[1].verdict((KEYS, (4, 8), ["1.num_batches_tracked"])).ok
    assert "PyTorch's layout" in ex[1].verdict((KEYS, [8, 4], {"1.num_batches_tracked"})).message
    renamed = {k.replace("3.", "2."): v for k, v in KEYS.items()}
    assert "not the file's" in ex[1].verdict((renamed, [4, 8], {"1.num_batches_tracked"})).message
    transposed = {**KEYS, "0.weight": [4, 8]}
    assert "[out, in]" in ex[1].verdict((transposed, [4, 8], {"1.num_batches_tracked"})).message
    assert "running statistics" in ex[1].verdict(
        (KEYS, [4, 8], {"1.num_batches_tracked", "1.running_mean", "1.running_var"})).message
    assert "missing from your set" in ex[1].verdict((KEYS, [4, 8], set())).message


class Net(Module):
    conv1: nn.Conv2d
    conv2: nn.Conv2d

    def forward(self, x):
        return self.conv2(self.conv1(x))


class WrappedNet(Module):
    conv: Net

    def forward(self, x):
        return self.conv(x)


def make_net() -> Net:
    return Net(conv1=nn.Conv2dConfig([2, 2], [2, 2]).init(device, NdArray),
               conv2=nn.Conv2dConfig([2, 2], [2, 2], bias=False).init(device, NdArray))


def test_match_the_names():
    wrapped = WrappedNet(conv=make_net())
    loaded = wrapped.load_record(recorder.load(LoadArgs(str(ASSETS / "key_remap.pt")), device, wrapped))
    assert ex[2].verdict(loaded).ok
    assert "compared with PyTorch's" in ex[2].verdict(wrapped).message        # record never loaded
    assert "field conv" in ex[2].verdict(make_net()).message                   # the unwrapped Net


def test_double_precision():
    double = PyTorchFileRecorder(DoublePrecisionSettings).load(str(ASSETS / "conv2d.pt"), device, make_net())
    full = recorder.load(str(ASSETS / "conv2d.pt"), device, make_net())
    assert ex[3].verdict((double, 0.0)).ok
    assert "DoublePrecisionSettings" in ex[3].verdict((full, 0.0)).message
    assert "round trip" in ex[3].verdict((double, 1e-7)).message


def write_safetensors(path, tensors, *, order="<", dtype="<f4", shift=0):
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        header[name] = {"dtype": "F32" if dtype == "<f4" else "F64", "shape": list(np.shape(array)),
                        "data_offsets": [offset + shift, offset + shift + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    Path(path).write_bytes(len(text).to_bytes(8, "little" if order == "<" else "big") + text + b"".join(blobs))


def test_a_safetensors_file_by_hand():
    assert ex[4].verdict(write_safetensors).ok
    assert "not a valid safetensors" in ex[4].verdict(lambda p, t: write_safetensors(p, t, order=">")).message
    assert "F32" in ex[4].verdict(lambda p, t: write_safetensors(p, t, dtype="<f8")).message
    assert "not a valid safetensors" in ex[4].verdict(lambda p, t: write_safetensors(p, t, shift=4)).message
    transposed = lambda p, t: write_safetensors(p, {k: v.T for k, v in t.items()})  # noqa: E731
    assert "shape" in ex[4].verdict(transposed).message
    assert "wrote no file" in ex[4].verdict(lambda p, t: None).message
