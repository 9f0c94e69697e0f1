"""What is measured and what measuring gives: a `Case` (one operation at one
size), and its results (`Stats` per framework, `Entry`, `CaseResult`)."""

from __future__ import annotations

import statistics
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

UNIT_SCALE = {"GB/s": 1e9, "GFLOP/s": 1e9, "Melem/s": 1e6}


@dataclass
class Case:
    """One measured operation at one size, for every framework that has a statement.

    `stmt` maps a framework key (`"ndarray"`, `"torch"`...) or an API name
    (`"numpy"`, `"burnbook"`, `"torch"`) or `"*"` to a Python statement; the
    framework key wins over the API, the API over `"*"`. The statement runs
    in a namespace holding the case's inputs converted for the framework
    (same names everywhere: `x`, `y`, ...) plus the API's helpers (`np`,
    `torch`, `F`, `Tensor`, `B`, `relu`). `setup[key-or-api](fw, ns)` may
    then edit the namespace (track gradients, define a `step()` function).

    `work` is the amount of work of one call in the unit's base quantity
    (bytes for GB/s, flops for GFLOP/s, elements for Melem/s).
    `ratio` is `"time"` (lower is better, e.g. dispatch) or `"speed"`
    (higher is better, e.g. throughput) and fixes how ratios are reported.
    `check` is the expression whose value is compared with NumPy's (`None`:
    the statement itself, `""`: no check); `tol` bounds the max error
    relative to the largest reference value.
    """

    family: str
    op: str
    size: str
    inputs: Callable[[np.random.Generator], dict]
    stmt: dict
    work: float | None = None
    unit: str | None = None
    ratio: str = "speed"
    setup: dict = field(default_factory=dict)
    check: str | None = None
    tol: float = 1e-5
    frameworks: tuple | None = None   # eligible framework keys; None = all
    tiny: bool = False                # microsecond op: the profile's tiny repeats/target

    @property
    def id(self) -> str:
        return f"{self.family}/{self.op}/{self.size}"

    def seed(self) -> int:
        return zlib.crc32(f"{self.family}/{self.size}".encode())

    def statement_for(self, fw) -> str | None:
        for key in (fw.key, fw.api, "*"):
            if key in self.stmt:
                return self.stmt[key]
        return None

    def setup_for(self, fw):
        return self.setup.get(fw.key) or self.setup.get(fw.api)

    def eligible(self, fw) -> bool:
        if self.frameworks is None and fw.families is not None and self.family not in fw.families:
            return False
        if self.frameworks is not None and fw.key not in self.frameworks:
            return False
        return self.statement_for(fw) is not None


@dataclass
class Stats:
    """Seconds per call, one sample per repeat."""

    samples: list
    inner: int
    cold_s: float

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    def quartiles(self) -> tuple[float, float]:
        s = sorted(self.samples)
        if len(s) < 4:
            return s[0], s[-1]
        q = statistics.quantiles(s, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def iqr_pct(self) -> float:
        q1, q3 = self.quartiles()
        return 100.0 * (q3 - q1) / self.median if self.median > 0 else 0.0


@dataclass
class Entry:
    """One framework on one case: its statistics, or why there are none."""

    fw: str
    stats: Stats | None = None
    error: str | None = None
    check: str = "n/a"          # "ok", "n/a", or a description of the mismatch

    @property
    def ok(self) -> bool:
        return self.stats is not None


@dataclass
class CaseResult:
    case: Case
    entries: dict                # fw key -> Entry, in framework order

    def median(self, key: str) -> float | None:
        e = self.entries.get(key)
        return e.stats.median if e is not None and e.ok else None

    def throughput(self, key: str) -> float | None:
        m = self.median(key)
        if m is None or not self.case.work or m <= 0:
            return None
        return self.case.work / m / UNIT_SCALE[self.case.unit]

    def ratio(self, key: str, ref: str) -> float | None:
        """time(key)/time(ref) for "time" cases, speed(key)/speed(ref) for "speed"."""
        a, b = self.median(key), self.median(ref)
        if a is None or b is None or a <= 0 or b <= 0:
            return None
        return a / b if self.case.ratio == "time" else b / a
