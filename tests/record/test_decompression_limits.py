"""A gzip record is inflated with a cap: a bomb is refused with little memory,
an honest record loads, and the cap can be raised for a record that needs it."""

from __future__ import annotations

import gzip
import sys

import numpy as np
import pytest

from burnbook import TensorData
from burnbook._inflate import MAX_RATIO, MIN_LIMIT
from burnbook.record import BinGzFileRecorder, JsonGzFileRecorder, NamedMpkGzFileRecorder, Record, RecordError

from ..bombs import GIB, MIB, gzip_bomb, peak_rss_mb

pytestmark = pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="ru_maxrss")


def test_a_gzip_record_bomb_is_refused_with_little_memory(tmp_path) -> None:
    path = tmp_path / "model.mpk.gz"
    inflated = gzip_bomb(path, b"", 2048)
    assert inflated >= 2 * GIB and path.stat().st_size < 3 * MIB
    grown, printed = peak_rss_mb("from burnbook.record import NamedMpkGzFileRecorder, RecordError", f"""
        try:
            NamedMpkGzFileRecorder().load({str(path)!r})
        except RecordError as err:
            print(err)
    """)
    assert str(path) in printed and "inflates past" in printed and "max_bytes" in printed, printed
    assert grown < 200, f"peak memory grew by {grown:.0f} MiB"


@pytest.mark.parametrize("recorder", [NamedMpkGzFileRecorder, BinGzFileRecorder, JsonGzFileRecorder])
def test_the_cap_follows_the_compressed_size(tmp_path, recorder) -> None:
    # An honest record of zeros compresses about 1,000 to 1: under the 64 MiB
    # floor it loads; a cap below its size refuses it, naming the file.
    zeros = np.zeros((64, 1024), np.float32)
    record = Record({"weight": TensorData.from_numpy(zeros)})
    path = recorder().record(record, tmp_path / "zeros")
    inflated = len(gzip.decompress(path.read_bytes()))
    assert inflated > MAX_RATIO * path.stat().st_size and inflated < MIN_LIMIT
    loaded = recorder().load(path)
    np.testing.assert_array_equal(np.asarray(loaded["weight"].to_numpy()), zeros)
    with pytest.raises(RecordError, match=rf"{path.name}: the .*gzip data inflates past {inflated - 1:,} bytes"):
        recorder().load(path, max_bytes=inflated - 1)
    assert recorder().load(path, max_bytes=inflated)["weight"].shape == list(zeros.shape)


def test_from_bytes_takes_the_cap_too() -> None:
    recorder = NamedMpkGzFileRecorder()
    data = recorder.to_bytes(Record({"x": 1.5}))
    assert recorder.from_bytes(data)["x"] == 1.5
    with pytest.raises(RecordError, match=r"<bytes>: .*inflates past 10 bytes"):
        recorder.from_bytes(data, max_bytes=10)
