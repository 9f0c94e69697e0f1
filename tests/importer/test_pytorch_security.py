"""A `.pt` file is a pickle: the reader must never run what a file names.

Each malicious file here would create a marker file if its payload ran (as
`torch.load(..., weights_only=False)` would run it); the tests check the
load fails with `UnsafePickleError` naming the refused global, and that the
marker was never created.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import sys
import time
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from burnbook.importer.pytorch import (  # noqa: E402
    LoadArgs, PyTorchFileRecorder, UnsafePickleError, read_pt, read_safetensors,
)
from burnbook.record import RecordError  # noqa: E402

from ..bombs import GIB, MIB, deflate_zeros, peak_rss_mb, zeros_crc, zip_archive  # noqa: E402


class SystemCall:
    """Pickles as a call to os.system."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class Eval:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return (eval, (self.code,))


def touch_command(marker) -> str:
    return f"touch '{marker}'"


def write_archive(path, pkl: bytes, storages: dict[str, bytes] | None = None) -> None:
    """A zip laid out as torch.save lays it out, around a hand-made data.pkl."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")


def test_the_payload_is_live(tmp_path) -> None:
    # Control: an unrestricted unpickler does run it, so the tests below
    # would see the marker if the reader let the payload through.
    marker = tmp_path / "pwned"
    pickle.loads(pickle.dumps(SystemCall(touch_command(marker))))
    assert marker.exists()


def test_os_system_payload_saved_by_torch_is_refused_and_never_runs(tmp_path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"weight": torch.ones(2), "payload": SystemCall(touch_command(marker))}, path)
    with pytest.raises(UnsafePickleError) as err:
        read_pt(path)
    message = str(err.value)
    assert "system" in message and ("posix" in message or "os" in message), message
    assert str(path) in message
    assert not marker.exists()


def test_the_recorder_refuses_it_too(tmp_path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save(OrderedDict(weight=torch.ones(2), hook=SystemCall(touch_command(marker))), path)
    with pytest.raises(UnsafePickleError, match="refused to load the global"):
        PyTorchFileRecorder().load(LoadArgs(path), None)
    assert not marker.exists()
    assert issubclass(UnsafePickleError, RecordError)


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_protocol_goes_through_the_allow_list(tmp_path, protocol: int) -> None:
    # Protocol 0-1 use GLOBAL/INST/OBJ, 2-3 GLOBAL + REDUCE, 4-5 STACK_GLOBAL: all must be refused.
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    pkl = pickle.dumps({"x": SystemCall(touch_command(marker))}, protocol=protocol)
    write_archive(path, pkl)
    with pytest.raises(UnsafePickleError, match=r"system"):
        read_pt(path)
    assert not marker.exists()


def test_eval_is_refused_and_named(tmp_path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    write_archive(path, pickle.dumps([Eval(f"open({str(marker)!r}, 'w')")], protocol=2))
    with pytest.raises(UnsafePickleError, match=r"'(__builtin__|builtins)\.eval'"):
        read_pt(path)
    assert not marker.exists()


def test_a_payload_hidden_in_the_state_dict_metadata_is_refused(tmp_path) -> None:
    # state_dict()._metadata travels in the BUILD state of the OrderedDict.
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    state = torch.nn.Linear(2, 2).state_dict()
    state._metadata = {"": SystemCall(touch_command(marker))}
    torch.save(state, path)
    with pytest.raises(UnsafePickleError):
        read_pt(path)
    assert not marker.exists()


def test_extension_registry_opcodes_are_resolved_through_the_allow_list(tmp_path) -> None:
    # EXT1/EXT2 name a global by a registered code instead of by name; the
    # unpickler still has to ask find_class, even while the code is registered.
    import copyreg

    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    module, code = os.system.__module__, 0x7A11
    copyreg.add_extension(module, "system", code)
    try:
        pkl = pickle.dumps(SystemCall(touch_command(marker)), protocol=2)
        assert b"\x83" in pkl or b"\x82" in pkl  # EXT1/EXT2 opcode, not GLOBAL
        write_archive(path, pkl)
        with pytest.raises(UnsafePickleError, match=rf"'{module}\.system'"):
            read_pt(path)
    finally:
        copyreg.remove_extension(module, "system", code)
    assert not marker.exists()


def test_a_whole_pickled_model_is_refused_with_advice(tmp_path) -> None:
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 2)), path)
    with pytest.raises(UnsafePickleError, match=r"torch\.nn\.modules\.container\.Sequential.*state_dict"):
        read_pt(path)


def crafted_tensor_file(path, offset: int, size: tuple, stride: tuple, numel: int, data: bytes) -> None:
    """A .pt whose one tensor has the given (possibly lying) geometry."""
    class Storage:
        pass

    storage = Storage()

    class Tensor:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (storage, offset, size, stride, False, OrderedDict()))

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", numel) if obj is storage else None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump({"w": Tensor()})
    write_archive(path, buf.getvalue(), {"0": data})


@pytest.mark.parametrize("offset, size, stride, numel, data, message", [
    # A size/stride that would let as_strided read memory past the storage.
    (2, (4,), (1,), 3, np.arange(3, dtype="<f4").tobytes(), r"reads element 5 of storage data/0, which holds 3"),
    (0, (2, 2), (5, 1), 4, bytes(16), r"reads element 6 of storage data/0, which holds 4"),
    # A storage member shorter than the pickle says.
    (0, (8,), (1,), 8, bytes(12), r"holds 12 bytes; the pickle expects 32"),
    # A zero-stride tensor expanded to an enormous size from one value.
    (0, (1 << 30,), (0,), 1, bytes(4), r"expands storage data/0 \(1 elements\) to 1073741824 elements"),
    (-1, (1,), (1,), 1, bytes(4), r"invalid storage offset -1"),
    (0, (2,), (-1,), 2, bytes(8), r"invalid tensor size"),
])
def test_lying_tensor_geometry_is_refused(tmp_path, offset, size, stride, numel, data, message) -> None:
    path = tmp_path / "crafted.pt"
    crafted_tensor_file(path, offset, size, stride, numel, data)
    with pytest.raises(RecordError, match=message) as err:
        read_pt(path)
    assert "crafted.pt" in str(err.value)


def test_an_honest_crafted_tensor_loads(tmp_path) -> None:
    # The same construction with true geometry reads back, so the cases above fail for their lie alone.
    path = tmp_path / "crafted.pt"
    crafted_tensor_file(path, 1, (2, 2), (1, 2), 5, np.arange(5, dtype="<f4").tobytes())
    np.testing.assert_array_equal(read_pt(path)["w"], np.array([[1, 3], [2, 4]], np.float32))


def test_persistent_ids_other_than_storages_are_refused(tmp_path) -> None:
    class Thing:
        pass

    thing = Thing()

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("module", "os", "system") if obj is thing else None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump({"w": thing})
    path = tmp_path / "pid.pt"
    write_archive(path, buf.getvalue())
    with pytest.raises(RecordError, match=r"unknown persistent id"):
        read_pt(path)


def test_a_legacy_file_is_refused_without_unpickling(tmp_path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2), "p": SystemCall(touch_command(marker))}, path,
               _use_new_zipfile_serialization=False)
    with pytest.raises(RecordError, match=r"legacy torch\.save file .*save it again"):
        read_pt(path)
    assert not marker.exists()


# -- hostile archives: bombs, traversal, lying sizes ---------------------------------------


def state_pickle(entries: dict[str, tuple[str, int, tuple, tuple]]) -> bytes:
    """A data.pkl as torch writes it: name -> (storage key, numel, size, stride), f32."""
    storages: dict[str, object] = {}

    class Tensor:
        def __init__(self, key: str, size: tuple, stride: tuple) -> None:
            self.args = (storages.setdefault(key, type("S", (), {})()), 0, size, stride, False, OrderedDict())

        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, self.args)

    numels = {key: numel for key, numel, _, _ in entries.values()}

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            for key, storage in storages.items():
                if obj is storage:
                    return ("storage", torch.FloatStorage, key, "cpu", numels[key])
            return None

    state = OrderedDict((name, Tensor(key, size, stride)) for name, (key, _, size, stride) in entries.items())
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(state)
    return buf.getvalue()


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="ru_maxrss")
def test_a_data_pkl_bomb_is_refused_with_little_memory(tmp_path) -> None:
    # data.pkl deflates to 3 GiB of zeros: once with its true size in the
    # header, once with the header claiming 1 MiB.
    paths = []
    for declared in (None, MIB):
        path = tmp_path / f"bomb-{declared}.pt"
        zip_archive(path, {"archive/data.pkl": (deflate_zeros(b"", 3072), 3 * GIB, declared or 3 * GIB),
                           "archive/byteorder": b"little"})
        assert path.stat().st_size < 4 * MIB
        paths.append(str(path))
    grown, printed = peak_rss_mb("from burnbook.importer.pytorch import read_pt\nfrom burnbook.record import RecordError",
                                 f"""
        for path in {paths!r}:
            try:
                read_pt(path)
            except RecordError as err:
                print(str(err).replace(chr(10), ' '))
    """)
    honest, lying = printed.splitlines()
    assert paths[0] in honest and "data.pkl inflates to 3,221,225,472 bytes" in honest, honest
    assert paths[1] in lying and "not a readable torch.save file" in lying, lying  # the CRC of the 1 MiB read
    assert grown < 200, f"peak memory grew by {grown:.0f} MiB"


def test_storage_members_must_have_the_declared_size(tmp_path) -> None:
    pkl = state_pickle({"w": ("0", 4, (4,), (1,))})
    path = tmp_path / "big.pt"
    write_archive(path, pkl, {"0": np.arange(4, dtype="<f4").tobytes() + bytes(4)})
    with pytest.raises(RecordError, match=r"big\.pt: storage archive/data/0 holds 20 bytes, more than the 16"):
        read_pt(path)
    write_archive(path, pkl, {"0": np.arange(4, dtype="<f4").tobytes()})
    np.testing.assert_array_equal(read_pt(path)["w"], np.arange(4, dtype=np.float32))


def test_a_compressed_storage_bomb_is_refused_before_inflating(tmp_path) -> None:
    # The pickle honestly declares 512 Mi floats; the member deflates 2 GiB of
    # zeros from 2 MB. torch.save never compresses storages.
    numel = 1 << 29
    path = tmp_path / "bomb.pt"
    zip_archive(path, {"archive/data.pkl": state_pickle({"w": ("0", numel, (numel,), (1,))}),
                       "archive/data/0": (deflate_zeros(b"", 2048), 2 * GIB, 2 * GIB)})
    with pytest.raises(RecordError, match=r"bomb\.pt: storage archive/data/0 inflates \d+ compressed bytes to "
                                          r"2147483648, a decompression bomb"):
        read_pt(path)


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="ru_maxrss")
def test_many_small_storage_bombs_are_refused_together(tmp_path) -> None:
    # 40 storages of 16 Mi floats, each deflated to 64 kB: every member alone
    # is under the 64 MiB floor and valid, together they make 2.5 GiB.
    numel, count = 1 << 24, 40
    path = tmp_path / "many.pt"
    stream, crc = deflate_zeros(b"", 64), zeros_crc(64)
    pkl = state_pickle({f"w{i}": (str(i), numel, (numel,), (1,)) for i in range(count)})
    zip_archive(path, {"archive/data.pkl": pkl,
                       **{f"archive/data/{i}": (stream, 64 * MIB, 64 * MIB, crc) for i in range(count)}})
    assert path.stat().st_size < 3 * MIB
    grown, printed = peak_rss_mb("from burnbook.importer.pytorch import read_pt\nfrom burnbook.record import RecordError",
                                 f"""
        try:
            read_pt({str(path)!r})
        except RecordError as err:
            print(err)
    """)
    assert str(path) in printed and "inflate to more than 67,108,864 bytes, 16 times the archive's" in printed
    assert grown < 200, f"peak memory grew by {grown:.0f} MiB"
    with zipfile.ZipFile(path) as archive:  # the control: each entry alone is a valid 64 MiB member
        assert len(archive.read(f"archive/data/{count - 1}")) == 64 * MIB


@pytest.mark.parametrize("name", ["../evil", "archive/../../evil", "/etc/evil", "archive\\..\\evil",
                                  "C:/evil", "\\\\server\\share"])
def test_entries_with_traversal_paths_are_refused(tmp_path, name: str) -> None:
    path = tmp_path / "trav.pt"
    write_archive(path, state_pickle({"w": ("0", 2, (2,), (1,))}), {"0": bytes(8)})
    with zipfile.ZipFile(path, "a") as z:
        z.writestr(name, b"x")
    with pytest.raises(RecordError, match=r"trav\.pt: the archive holds an entry with an unsafe path"):
        read_pt(path)


@pytest.mark.parametrize("key", ["../../etc/passwd", "..", "a/b", ""])
def test_storage_keys_cannot_name_other_members(tmp_path, key: str) -> None:
    path = tmp_path / "key.pt"
    write_archive(path, state_pickle({"w": (key, 2, (2,), (1,))}), {"0": bytes(8)})
    with pytest.raises(RecordError, match=r"key\.pt: invalid storage reference"):
        read_pt(path)


def test_huge_sizes_and_dims_are_refused_at_once(tmp_path) -> None:
    path = tmp_path / "dims.pt"
    write_archive(path, state_pickle({"w": ("0", 2, (1,) * 100, (1,) * 100)}), {"0": bytes(8)})
    with pytest.raises(RecordError, match=r"invalid tensor size"):
        read_pt(path)
    write_archive(path, state_pickle({"w": ("0", 2, (1 << 64,), (0,))}), {"0": bytes(8)})
    with pytest.raises(RecordError, match=r"invalid tensor size"):
        read_pt(path)


def test_many_tensors_on_one_storage_are_refused_past_the_copy_budget(tmp_path) -> None:
    # 6,000 views of one 4,096-float storage would copy 24 M floats (98 MB).
    entries = {f"w{i}": ("0", 4096, (4096,), (1,)) for i in range(6_000)}
    path = tmp_path / "views.pt"
    write_archive(path, state_pickle(entries), {"0": bytes(4 * 4096)})
    with pytest.raises(RecordError, match=r"views\.pt: the tensors copy more than 4 times the 4096 elements"):
        read_pt(path)
    honest = {"a": ("0", 4096, (64, 64), (64, 1)), "b": ("0", 4096, (64, 64), (1, 64))}  # tied, transposed
    write_archive(path, state_pickle(honest), {"0": np.arange(4096, dtype="<f4").tobytes()})
    got = read_pt(path)
    np.testing.assert_array_equal(got["a"].T, got["b"])


def test_shared_containers_nested_deep_do_not_hang(tmp_path) -> None:
    # Each level lists the one below twice: 2**40 paths from a 1 kB pickle.
    level: object = {"w": "not a tensor"}
    for _ in range(40):
        level = [level, level]
    path = tmp_path / "dag.pt"
    write_archive(path, pickle.dumps({"state": level}, protocol=2))
    start = time.monotonic()
    with pytest.raises(RecordError, match=r"dag\.pt: the saved object has more than 1,048,576 entries"):
        read_pt(path)
    assert time.monotonic() - start < 10


def test_deeply_nested_and_unprintable_keys_give_record_errors(tmp_path) -> None:
    path = tmp_path / "odd.pt"
    write_archive(path, pickle.dumps({10 ** 5000: {"x": 1}}, protocol=2))
    assert read_pt(path) == {}
    with pytest.raises(RecordError, match=r"no top-level key 'm' \(<an int of 16610 bits>\)"):
        read_pt(path, "m")
    depth = 100_000  # EMPTY_LIST x depth, then APPEND x (depth - 1): lists nested 100,000 deep
    write_archive(path, b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b".")
    with pytest.raises(RecordError, match=r"odd\.pt: (the saved object nests too deeply|not a readable)"):
        read_pt(path)


# -- safetensors: offsets must tile the buffer --------------------------------------------


def safetensors_bytes(header: dict, buffer: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + buffer


@pytest.mark.parametrize("offsets, size, message", [
    ({"a": [0, 8], "b": [4, 12]}, 12, r"'b': data_offsets \[4, 12\] overlap those of tensor 'a', which end at 8"),
    ({"a": [0, 8], "b": [0, 8]}, 8, r"overlap those of tensor 'a'"),
    ({"a": [0, 8], "b": [12, 20]}, 20, r"'b': data_offsets \[12, 20\] leave bytes 8\.\.12 of the data buffer"),
    ({"a": [4, 12], "b": [12, 20]}, 20, r"'a': data_offsets \[4, 12\] leave bytes 0\.\.4"),
    ({"a": [0, 8], "b": [8, 16]}, 24, r"the tensors cover 16 bytes of the 24-byte data buffer"),
    ({"a": [0, 8], "b": [8, 16]}, 12, r"'b': data_offsets \[8, 16\] fall outside the 12-byte data buffer"),
])
def test_safetensors_offsets_that_do_not_tile_the_buffer(tmp_path, offsets, size, message) -> None:
    header = {name: {"dtype": "F32", "shape": [(end - begin) // 4], "data_offsets": [begin, end]}
              for name, (begin, end) in offsets.items()}
    path = tmp_path / "tile.safetensors"
    path.write_bytes(safetensors_bytes(header, bytes(size)))
    with pytest.raises(RecordError, match=message) as err:
        read_safetensors(path)
    assert str(path) in str(err.value)


def test_safetensors_a_thousand_views_of_one_buffer_are_refused_before_copying(tmp_path) -> None:
    header = {f"t{i}": {"dtype": "F32", "shape": [1 << 18], "data_offsets": [0, 1 << 20]} for i in range(1000)}
    path = tmp_path / "views.safetensors"
    path.write_bytes(safetensors_bytes(header, bytes(1 << 20)))
    with pytest.raises(RecordError, match=r"overlap those of tensor"):
        read_safetensors(path)


def test_safetensors_hostile_shapes_and_headers(tmp_path) -> None:
    path = tmp_path / "bad.safetensors"
    header = {"w": {"dtype": "F32", "shape": [1 << 62] * 100_000, "data_offsets": [0, 8]}}
    path.write_bytes(safetensors_bytes(header, bytes(8)))
    start = time.monotonic()
    with pytest.raises(RecordError, match=r"'w': 8 bytes for shape .* of F32, which needs more than 8"):
        read_safetensors(path)
    assert time.monotonic() - start < 5
    path.write_bytes(struct.pack("<Q", 1 << 63) + b"{}")
    with pytest.raises(RecordError, match=r"header length 9223372036854775808 exceeds the 2 bytes"):
        read_safetensors(path)
    deep = b"[" * 100_000 + b"]" * 100_000
    path.write_bytes(struct.pack("<Q", len(deep)) + deep)
    with pytest.raises(RecordError, match=r"nests too deeply|not valid JSON"):
        read_safetensors(path)
