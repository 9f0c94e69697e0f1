"""A `.pt` file is a pickle: the reader must never run what a file names.

Each malicious file here would create a marker file if its payload ran (as
`torch.load(..., weights_only=False)` would run it); the tests check the
load fails with `UnsafePickleError` naming the refused global, and that the
marker was never created.
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from burnbook.importer.pytorch import LoadArgs, PyTorchFileRecorder, UnsafePickleError, read_pt  # noqa: E402
from burnbook.record import RecordError  # noqa: E402


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
