"""Record checksums: every recorder writes one, a changed byte is a
`RecordError` naming the file, and files written before checksums still load.

The files in `legacy/` were written by burnbook 2132c5c, the commit before
checksums, from `legacy_record()` with each recorder's defaults (and
`record-half.mpk` with `HalfPrecisionSettings`).
"""

from __future__ import annotations

import gzip
import json
import random
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pytest

from burnbook import TensorData
from burnbook.record import (
    BinBytesRecorder, BinFileRecorder, BinGzFileRecorder, HalfPrecisionSettings, JsonGzFileRecorder,
    NamedMpkFileRecorder, NamedMpkGzFileRecorder, ParamRecord, PrettyJsonFileRecorder, Record, RecordError,
)
from burnbook.record.checksum import KEY, TRAILER_SIZE

from .conftest import FILE_RECORDERS

LEGACY = Path(__file__).parent / "legacy"
MPK_RECORDERS = [NamedMpkFileRecorder, BinFileRecorder]
SAMPLE = 300  # flipped positions per format when a file is longer


def legacy_record() -> Record:
    """The record the `legacy/` files hold: every kind of leaf, exact values."""
    weight = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 7
    return Record({
        "linear": {"weight": ParamRecord("linear-w", weight),
                   "bias": ParamRecord("linear-b", np.array([0.25, -1.5, 3.0], np.float32))},
        "norm": {"running_var": TensorData.from_numpy(np.linspace(0.5, 2.0, 3)),
                 "steps": TensorData.from_numpy(np.array([3, -1], np.int64))},
        "mask": TensorData.from_numpy(np.array([True, False])),
        "layers": [{"scale": 0.5}, {"scale": 2.0}],
        "kernel": (3, 3), "epoch": 4, "name": "legacy", "lr": 1e-3, "missing": None, "$dollar": "kept",
    })


def _document(recorder, data: bytes) -> dict:
    raw = gzip.decompress(data) if recorder.compressed else data
    return json.loads(raw) if recorder.encoding == "json" else msgpack.unpackb(raw, raw=False)


def _same(a: Record, b: Record) -> bool:
    """Equal values, and the fields in the same order."""
    return a == b and list(a.flatten()) == list(b.flatten())


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS + [BinBytesRecorder])
def test_every_recorder_writes_a_crc32_of_the_document(recorder_cls) -> None:
    recorder = recorder_cls()
    data = recorder.to_bytes(legacy_record())
    doc = _document(recorder, data)
    assert list(doc)[-1] == KEY and doc["version"] == 1  # old readers ignore the extra field
    if recorder.encoding == "json":
        body = {k: v for k, v in doc.items() if k != KEY}
        expected = zlib.crc32(json.dumps(body, separators=(",", ":")).encode())
    else:
        raw = gzip.decompress(data) if recorder.compressed else data
        assert raw[-TRAILER_SIZE:] == msgpack.packb(KEY) + msgpack.packb(doc[KEY])
        expected = zlib.crc32(raw[:-TRAILER_SIZE])
    assert doc[KEY] == f"crc32:{expected:08x}"


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS + [BinBytesRecorder])
def test_no_flipped_byte_loads_different_values(recorder_cls, tmp_path: Path) -> None:
    """Flip each byte (a seeded sample of a longer file) with a random mask:
    the load fails naming the file, or gives exactly the saved record; the
    latter only where the flip cannot change the content (gzip's header
    fields, JSON layout)."""
    recorder = recorder_cls()
    original = legacy_record()
    data = recorder.to_bytes(original)
    rng = random.Random(f"checksum-{recorder_cls.__name__}")
    positions = range(len(data)) if len(data) <= SAMPLE else sorted(rng.sample(range(len(data)), SAMPLE))
    path = recorder.file_path(tmp_path / "model") if recorder_cls is not BinBytesRecorder else None
    name = str(path) if path else "<bytes>"
    unchanged = []
    for i in positions:
        damaged = bytearray(data)
        damaged[i] ^= rng.randrange(1, 256)
        try:
            if path:
                path.write_bytes(damaged)
                loaded = recorder.load(path)
            else:
                loaded = recorder.load(bytes(damaged))
        except RecordError as err:
            assert str(err).startswith(f"{name}: "), (i, err)
            continue
        assert _same(loaded, original), f"flipping byte {i} loaded different values"
        unchanged.append(i)
    if recorder.compressed:  # gzip's header: flags readers ignore (text, reserved), time, extra flags, OS
        assert set(unchanged) <= {3, 4, 5, 6, 7, 8, 9}, unchanged
    elif recorder.pretty:  # whitespace only: a space, newline, tab or carriage return in its place
        assert all(data[i] in b" \n" for i in unchanged), unchanged
    else:
        assert unchanged == []


@pytest.mark.parametrize("recorder_cls", MPK_RECORDERS + [PrettyJsonFileRecorder])
def test_a_changed_weight_is_a_checksum_error_naming_the_file(recorder_cls, tmp_path: Path) -> None:
    recorder = recorder_cls()
    path = recorder.record(legacy_record(), tmp_path / "model")
    data = bytearray(path.read_bytes())
    if recorder.encoding == "json":
        i = data.index(b"0.25")  # the first bias value: 0.25 -> 0.35, still valid JSON
        data[i + 2] = ord("3")
    else:
        i = data.index(np.float32(0.25).tobytes())
        data[i + 3] ^= 0x01  # 0.25 -> 0.25000006: a plausible weight, only the checksum can tell
    path.write_bytes(data)
    with pytest.raises(RecordError, match="checksum does not match") as info:
        recorder.load(path)
    assert str(info.value).startswith(f"{path}: ") and "damaged" in str(info.value)


def test_in_memory_bytes_say_they_are_bytes() -> None:
    data = bytearray(BinBytesRecorder().record(legacy_record()))
    data[data.index(np.float32(3.0).tobytes())] ^= 0x80
    with pytest.raises(RecordError, match=r"^<bytes>: the checksum does not match .* damaged"):
        BinBytesRecorder().load(bytes(data))


@pytest.mark.parametrize("recorder_cls", MPK_RECORDERS)
def test_damage_that_breaks_the_structure_still_reads_as_damage(recorder_cls) -> None:
    data = bytearray(recorder_cls().to_bytes(legacy_record()))
    assert data[0] == 0x87  # a map of 7 fields: five header fields, the item, the checksum
    data[0] = 0x86  # the checksum field becomes trailing data
    with pytest.raises(RecordError, match="checksum does not match"):
        recorder_cls().from_bytes(bytes(data))


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS)
def test_files_written_before_checksums_load(recorder_cls) -> None:
    recorder = recorder_cls()
    path = recorder.file_path(LEGACY / "record")
    assert KEY not in _document(recorder, path.read_bytes())
    assert _same(recorder.load(path), legacy_record())


def test_a_half_precision_file_written_before_checksums_loads() -> None:
    loaded = NamedMpkFileRecorder().load(LEGACY / "record-half.mpk")
    weight = legacy_record().linear.weight.data.array
    assert loaded.linear.weight.data.array.dtype == np.float32
    np.testing.assert_array_equal(loaded.linear.weight.data.array, weight.astype(np.float16).astype(np.float32))
    assert loaded.norm.steps.array.tolist() == [3, -1]


@pytest.mark.parametrize("recorder_cls", MPK_RECORDERS + [BinBytesRecorder])
def test_a_document_without_its_checksum_field_loads(recorder_cls) -> None:
    """The old layout built by hand: one field fewer, no trailer."""
    data = recorder_cls().to_bytes(legacy_record())
    legacy = bytes([data[0] - 1]) + data[1:-TRAILER_SIZE]
    assert KEY not in msgpack.unpackb(legacy, raw=False)
    assert _same(recorder_cls().from_bytes(legacy), legacy_record())


def test_an_unknown_header_field_without_a_checksum_is_damage() -> None:
    """A damaged name of the checksum field must not turn checking off."""
    data = bytearray(NamedMpkFileRecorder().to_bytes(legacy_record()))
    i = data.rindex(KEY.encode())
    data[i] = ord("C")
    with pytest.raises(RecordError, match="field 'Checksum' that burnbook never writes"):
        NamedMpkFileRecorder().from_bytes(bytes(data), source="model.mpk")


def test_json_layout_is_outside_the_checksum_but_values_are_not() -> None:
    recorder = PrettyJsonFileRecorder()
    original = legacy_record()
    doc = json.loads(recorder.to_bytes(original))
    assert doc[KEY] == json.loads(gzip.decompress(JsonGzFileRecorder().to_bytes(original)))[KEY]
    for layout in ({"indent": 4}, {"separators": (",", ":")}, {"indent": "\t", "ensure_ascii": False}):
        assert _same(recorder.from_bytes(json.dumps(doc, **layout).encode()), original), layout
    doc["item"]["epoch"] = 5
    with pytest.raises(RecordError, match="delete its 'checksum' field"):
        recorder.from_bytes(json.dumps(doc).encode())
    del doc[KEY]  # what that message offers: the edit loads, unchecked
    assert recorder.from_bytes(json.dumps(doc).encode()).epoch == 5
