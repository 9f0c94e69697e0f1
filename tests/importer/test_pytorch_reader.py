"""The `.pt` and safetensors readers against files written by torch and by
the safetensors package, every element type, views and damaged files."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from burnbook.importer.pytorch import read_pt, read_safetensors, read_tensors  # noqa: E402
from burnbook.record import RecordError  # noqa: E402

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool]


def expected(t: "torch.Tensor") -> np.ndarray:
    """What the readers should give: the same values, bf16 widened to f32."""
    t = t.detach().contiguous()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def sample(dtype: "torch.dtype", shape=(3, 4), seed: int = 0) -> "torch.Tensor":
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 100).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


def assert_same(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key, tensor in want.items():
        ref = expected(tensor)
        assert got[key].dtype == ref.dtype, key
        assert got[key].shape == ref.shape, key
        np.testing.assert_array_equal(got[key], ref, err_msg=key)


# -- .pt ---------------------------------------------------------------------------------


def test_every_element_type_matches_torch(tmp_path) -> None:
    state = {str(d).removeprefix("torch."): sample(d, seed=i) for i, d in enumerate(DTYPES)}
    torch.save(state, tmp_path / "all.pt")
    assert_same(read_pt(tmp_path / "all.pt"), state)


def test_bf16_widening_is_exact(tmp_path) -> None:
    # Every bf16 bit pattern but NaNs: widened values equal torch's own conversion.
    bits = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    values = bits.view(torch.bfloat16)
    values = values[~torch.isnan(values)]
    torch.save({"all": values}, tmp_path / "bf16.pt")
    got = read_pt(tmp_path / "bf16.pt")["all"]
    np.testing.assert_array_equal(got.view(np.uint32), values.float().numpy().view(np.uint32))


def test_views_shared_storages_and_strides(tmp_path) -> None:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    state = {
        "base": base,
        "transposed": base.t(),
        "row": base[2],
        "column": base[:, 3],
        "strided": base[::2, 1::2],
        "expanded": torch.tensor([1.5, 2.5]).expand(3, 2),
        "scalar": torch.tensor(7.0),
        "empty": torch.zeros(0, 3),
    }
    torch.save(state, tmp_path / "views.pt")
    assert_same(read_pt(tmp_path / "views.pt"), state)


def test_a_model_state_dict_with_buffers_and_parameters(tmp_path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Flatten(),
                                torch.nn.Linear(3, 2))
    torch.save(model.state_dict(), tmp_path / "model.pt")
    assert_same(read_pt(tmp_path / "model.pt"), model.state_dict())
    # nn.Parameter objects (not just tensors) rebuild through _rebuild_parameter.
    params = dict(model.named_parameters())
    torch.save(params, tmp_path / "params.pt")
    assert_same(read_pt(tmp_path / "params.pt"), params)


def test_nested_checkpoint_and_top_level_key(tmp_path) -> None:
    weights = {"fc.weight": torch.randn(2, 3), "fc.bias": torch.randn(2)}
    torch.save({"state_dict": weights, "epoch": 3, "name": "run-1", "history": [torch.ones(1)]},
               tmp_path / "ckpt.pt")
    flat = read_pt(tmp_path / "ckpt.pt")
    assert list(flat) == ["state_dict.fc.weight", "state_dict.fc.bias", "history.0"]
    assert_same(read_pt(tmp_path / "ckpt.pt", "state_dict"), weights)
    with pytest.raises(RecordError, match=r"no top-level key 'model' \(state_dict, epoch, name, history\)"):
        read_pt(tmp_path / "ckpt.pt", "model")


def test_big_endian_archives_are_byte_swapped(tmp_path) -> None:
    # torch writes the host's order; rewrite a little-endian file as a big-endian host would.
    state = {"f": sample(torch.float32), "h": sample(torch.float16), "b": sample(torch.bfloat16),
             "i": sample(torch.int64)}
    torch.save(state, tmp_path / "little.pt")
    sizes = {"0": 4, "1": 2, "2": 2, "3": 8}
    with zipfile.ZipFile(tmp_path / "little.pt") as src, zipfile.ZipFile(tmp_path / "big.pt", "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                item = sizes[info.filename.rsplit("/", 1)[1]]
                data = np.frombuffer(data, dtype=f"<u{item}").astype(f">u{item}").tobytes()
            dst.writestr(info, data)
    assert_same(read_pt(tmp_path / "big.pt"), state)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit is deprecated, still writes archives
def test_torchscript_and_foreign_files_are_refused(tmp_path) -> None:
    scripted = torch.jit.script(torch.nn.Linear(2, 2))
    torch.jit.save(scripted, tmp_path / "scripted.pt")
    with pytest.raises(RecordError, match=r"TorchScript archive"):
        read_pt(tmp_path / "scripted.pt")
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(RecordError, match=r"text\.pt: neither a torch\.save file nor safetensors"):
        read_tensors(tmp_path / "text.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(RecordError, match=r"empty"):
        read_tensors(tmp_path / "empty.pt")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("readme.txt", "not a checkpoint")
    with pytest.raises(RecordError, match=r"0 top-level data\.pkl"):
        read_pt(tmp_path / "other.zip")
    with pytest.raises(FileNotFoundError, match=r"no PyTorch weights file"):
        read_tensors(tmp_path / "absent.pt")


def corrupt(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4])):
        i = rng.randrange(len(buf))
        kind = rng.choice(["flip", "byte", "truncate", "delete"])
        if kind == "flip":
            buf[i] ^= 1 << rng.randrange(8)
        elif kind == "byte":
            buf[i] = rng.randrange(256)
        elif kind == "truncate":
            del buf[i:]
        else:
            del buf[i:i + rng.randint(1, 16)]
        if not buf:
            break
    return bytes(buf)


@pytest.mark.parametrize("kind", ["pt", "safetensors"])
def test_damaged_files_give_record_errors_only(tmp_path, kind: str) -> None:
    """300 random corruptions: a `RecordError` or a dict of arrays, never another exception."""
    state = {"conv.weight": sample(torch.float32, (2, 2, 3)), "conv.bias": sample(torch.float16, (2,)),
             "steps": sample(torch.int64, (1,))}
    path = tmp_path / f"good.{kind}"
    if kind == "pt":
        torch.save(state, path)
    else:
        safetensors_torch = pytest.importorskip("safetensors.torch")
        safetensors_torch.save_file(state, path)
    data = path.read_bytes()
    rng = random.Random(1234)
    bad = tmp_path / f"bad.{kind}"
    outcomes = {"error": 0, "loaded": 0}
    for _ in range(300):
        bad.write_bytes(corrupt(data, rng))
        try:
            tensors = read_tensors(bad)
        except RecordError:
            outcomes["error"] += 1
        else:
            assert all(isinstance(v, np.ndarray) for v in tensors.values())
            outcomes["loaded"] += 1
    assert outcomes["error"] > 100


# -- safetensors ---------------------------------------------------------------------------


def test_safetensors_from_the_reference_writer(tmp_path) -> None:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    state = {str(d).removeprefix("torch."): sample(d, seed=i) for i, d in enumerate(DTYPES)}
    state["scalar"] = torch.tensor(3.25)
    state["empty"] = torch.zeros(0, 2)
    safetensors_torch.save_file(state, tmp_path / "all.safetensors", metadata={"format": "pt"})
    got = read_safetensors(tmp_path / "all.safetensors")
    assert sorted(got) == sorted(state)  # the writer orders tensors its own way
    assert_same({k: got[k] for k in state}, state)
    assert read_tensors(tmp_path / "all.safetensors").keys() == got.keys()


def pack(header: dict, buffer: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + buffer


def test_safetensors_packed_by_hand_per_the_format(tmp_path) -> None:
    # Independent of any writer: bytes laid out as the format describes.
    w = np.arange(6, dtype="<f4").reshape(2, 3)
    b = torch.tensor([1.0, -2.5, 3.0e38], dtype=torch.bfloat16)
    b_bytes = b.view(torch.int16).numpy().astype("<i2").tobytes()
    header = {"__metadata__": {"source": "hand"},
              "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "BF16", "shape": [3], "data_offsets": [24, 30]}}
    (tmp_path / "hand.safetensors").write_bytes(pack(header, w.tobytes() + b_bytes))
    got = read_safetensors(tmp_path / "hand.safetensors")
    np.testing.assert_array_equal(got["w"], w)
    np.testing.assert_array_equal(got["b"], b.float().numpy())


@pytest.mark.parametrize("header, buffer, message", [
    ({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, b"\0\0", r"'w': element type 'F8_E4M3'"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}}, b"\0" * 8, r"'w': data_offsets \[0, 12\] fall outside"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, r"'w': 8 bytes for shape \[3\]"),
    ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, r"'w': invalid shape"),
    ({"w": [1, 2]}, b"", r"'w': header entry is not an object"),
])
def test_safetensors_errors_name_the_tensor(tmp_path, header, buffer, message) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(pack(header, buffer))
    with pytest.raises(RecordError, match=message) as err:
        read_safetensors(path)
    assert "bad.safetensors" in str(err.value)


def test_safetensors_framing_errors(tmp_path) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(RecordError, match=r"header length 1000 exceeds the 2 bytes"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 4) + b"{no}")
    with pytest.raises(RecordError, match=r"not valid JSON"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 2) + b"[]")
    with pytest.raises(RecordError, match=r"JSON list, not an object"):
        read_safetensors(path)


def test_safetensors_top_level_key_keeps_one_prefix(tmp_path) -> None:
    w, v = np.ones((2,), "<f4"), np.zeros((1,), "<f4")
    header = {"model.fc.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "ema.fc.weight": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}
    (tmp_path / "two.safetensors").write_bytes(pack(header, w.tobytes() + v.tobytes()))
    assert list(read_tensors(tmp_path / "two.safetensors", "model")) == ["fc.weight"]
    with pytest.raises(RecordError, match=r"no tensor under the top-level key 'opt'"):
        read_tensors(tmp_path / "two.safetensors", "opt")


# -- without torch ---------------------------------------------------------------------------


def test_the_readers_work_with_torch_blocked(tmp_path) -> None:
    """In a fresh interpreter where `import torch` fails, both readers and
    the recorder still load files that torch wrote."""
    torch.manual_seed(0)
    state = {"fc.weight": torch.randn(3, 2), "fc.bias": torch.randn(3).to(torch.bfloat16)}
    torch.save(state, tmp_path / "net.pt")
    ref = {k: expected(v) for k, v in state.items()}
    np.savez(tmp_path / "ref.npz", **{k.replace(".", "_"): v for k, v in ref.items()})
    script = f"""
import sys
sys.modules["torch"] = None          # any `import torch` now raises ImportError
import numpy as np
from burnbook.importer.pytorch import LoadArgs, PyTorchFileRecorder, read_pt
got = read_pt({str(tmp_path / "net.pt")!r})
ref = np.load({str(tmp_path / "ref.npz")!r})
for key, value in got.items():
    assert np.array_equal(value, ref[key.replace(".", "_")]), key
record = PyTorchFileRecorder().load(LoadArgs({str(tmp_path / "net.pt")!r}))
assert sorted(record) == ["fc.bias", "fc.weight"]
assert "torch" not in [m.split(".")[0] for m, v in sys.modules.items() if v is not None]
print("ok without torch")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok without torch" in result.stdout
