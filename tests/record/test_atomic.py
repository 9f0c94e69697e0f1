"""Saving is atomic: a failure halfway through leaves the previous file as it was."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from burnbook.record import NamedMpkFileRecorder, NamedMpkGzFileRecorder, PrettyJsonFileRecorder, Record, codec

from .conftest import FILE_RECORDERS, make_record


class Boom(RuntimeError):
    pass


def _fail_on_second_tensor(monkeypatch) -> list[int]:
    """Make the encoder raise when it reaches the second tensor, after it has written some bytes."""
    calls = [0]
    original = codec._stored

    def stored(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:
            raise Boom("serializer failed halfway")
        return original(*args, **kwargs)

    monkeypatch.setattr(codec, "_stored", stored)
    return calls


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS)
def test_failure_mid_write_keeps_the_previous_file(recorder_cls, tmp_path: Path, monkeypatch) -> None:
    recorder = recorder_cls()
    path = recorder.record(make_record(seed=0), tmp_path / "model")
    before = path.read_bytes()
    calls = _fail_on_second_tensor(monkeypatch)
    with pytest.raises(Boom):
        recorder.record(make_record(seed=1), tmp_path / "model")
    assert calls[0] == 2
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left
    monkeypatch.undo()
    assert recorder.load(path) == make_record(seed=0)


def test_the_temporary_file_had_data_when_the_failure_came(tmp_path: Path, monkeypatch) -> None:
    """The failure really is mid-write: bytes had reached the temporary file."""
    import burnbook._atomic as atomic

    seen: list[int] = []
    real_write = atomic.atomic_write

    def spying(path, write):
        def spy(f):
            try:
                write(f)
            finally:
                f.flush()
                seen.append(os.fstat(f.fileno()).st_size)
        return real_write(path, spy)

    monkeypatch.setattr("burnbook.record.recorder.atomic_write", spying)
    _fail_on_second_tensor(monkeypatch)
    with pytest.raises(Boom):
        NamedMpkFileRecorder().record(make_record(), tmp_path / "model")
    assert seen and seen[0] > 100
    assert not list(tmp_path.iterdir())


def test_a_failed_first_save_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    _fail_on_second_tensor(monkeypatch)
    with pytest.raises(Boom):
        NamedMpkGzFileRecorder().record(make_record(), tmp_path / "model")
    assert not list(tmp_path.iterdir())


def test_overwrite_replaces_and_keeps_permissions(tmp_path: Path) -> None:
    recorder = PrettyJsonFileRecorder()
    path = recorder.record(Record(x=1), tmp_path / "model")
    path.chmod(0o640)
    recorder.record(Record(x=np.arange(2)), path)
    assert recorder.load(path) == Record(x=np.arange(2))
    assert path.stat().st_mode & 0o777 == 0o640


def test_new_files_get_umask_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        path = NamedMpkFileRecorder().record(Record(x=1), tmp_path / "m")
    finally:
        os.umask(umask)
    import burnbook._atomic as atomic

    assert path.stat().st_mode & 0o777 == 0o666 & ~atomic._UMASK
