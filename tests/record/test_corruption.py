"""1,000 random corruptions per format: each gives `RecordError` or a valid
record, never another exception, a crash or a hang."""

from __future__ import annotations

import random
import signal
import time

import pytest

from burnbook.record import (
    BinFileRecorder, NamedMpkFileRecorder, NamedMpkGzFileRecorder, JsonGzFileRecorder, Record, RecordError,
)

from .conftest import make_record

CASES = 1000


def corrupt(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One random flip, insertion, deletion or truncation (sometimes several)."""
    buf = bytearray(data)
    steps = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["flip", "byte", "insert", "delete", "truncate"])
        i = rng.randrange(max(len(buf), 1))
        if kind == "flip" and buf:
            buf[i] ^= 1 << rng.randrange(8)
        elif kind == "byte" and buf:
            buf[i] = rng.randrange(256)
        elif kind == "insert":
            buf[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == "delete":
            del buf[i:i + rng.randint(1, 8)]
        else:
            del buf[i:]
        steps.append(f"{kind}@{i}")
    return ",".join(steps), bytes(buf)


@pytest.fixture
def no_hang():
    """Fail (instead of hanging) if the whole loop takes over 20 s."""
    def alarm(signum, frame):
        raise TimeoutError("corruption loop hung")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("recorder_cls", [NamedMpkFileRecorder, NamedMpkGzFileRecorder,
                                          BinFileRecorder, JsonGzFileRecorder])
def test_random_corruptions(recorder_cls, no_hang) -> None:
    recorder = recorder_cls()
    data = recorder.to_bytes(make_record(size=2))
    rng = random.Random(f"{recorder_cls.__name__}-1234")
    outcomes = {"error": 0, "record": 0}
    start = time.perf_counter()
    for _ in range(CASES):
        what, bad = corrupt(data, rng)
        try:
            result = recorder.from_bytes(bad, source="model")
        except RecordError as err:
            assert str(err).startswith("model: "), (what, err)
            outcomes["error"] += 1
        except Exception as err:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{what}: {type(err).__name__} instead of RecordError: {err}")
        else:
            assert isinstance(result, Record), what
            outcomes["record"] += 1
    assert outcomes["error"] > CASES // 2
    assert time.perf_counter() - start < 10
