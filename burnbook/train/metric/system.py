"""Machine metrics measured on the host (Burn's `cpu_use.rs`,
`memory_use.rs`, `cpu_temp.rs`): `CpuUse`, `CpuMemory`, `CpuTemperature`.

They read the machine through `psutil`, imported when a metric is created.
Where psutil is not installed, or the machine has no such sensor (CPU
temperature in most containers, virtual machines, macOS), the entry says
"not available" and the value is NaN: a metric never stops a training run.
Readings are refreshed at most every 200 ms, as in Burn.
"""

from __future__ import annotations

import math
import time
from typing import Any

from .base import NOT_AVAILABLE, MetricEntry, MetricMetadata

__all__ = ["CpuUse", "CpuMemory", "CpuTemperature"]

REFRESH_SECONDS = 0.2

# sensor groups psutil reports for the CPU package on Linux, best first
_CPU_SENSORS = ("coretemp", "k10temp", "zenpower", "cpu_thermal", "cpu-thermal", "soc_thermal", "acpitz")
_CPU_LABELS = ("package id 0", "tctl", "tdie", "cpu")


def _load_psutil() -> Any:
    """The psutil module, or None where it is not installed."""
    try:
        import psutil
    except ImportError:
        return None
    return psutil


class _HostMetric:
    """Shared plumbing: a throttled `_read()` returning a float or None."""

    NAME = ""
    input_type = None

    def __init__(self) -> None:
        self._psutil = _load_psutil()
        self._last = -math.inf
        self.current = math.nan
        self.available = self._psutil is not None
        self._refresh(force=True)

    def name(self) -> str:
        return self.NAME

    def _read(self) -> float | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < REFRESH_SECONDS:
            return
        self._last = now
        value = None
        if self._psutil is not None:
            try:
                value = self._read()
            except Exception:  # a sensor that fails once is "not available", never a crash
                value = None
        self.available = value is not None and math.isfinite(value)
        self.current = float(value) if self.available else math.nan

    def _missing(self) -> MetricEntry:
        why = "" if self._psutil is not None else " (install psutil)"
        return MetricEntry(self.NAME, f"{self.NAME}: {NOT_AVAILABLE}{why}", "NaN", available=False)

    def clear(self) -> None:
        """Nothing to clear: the readings are instantaneous."""

    def value(self) -> float:
        return self.current

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CpuUse(_HostMetric):
    """The mean utilisation of all CPUs, in percent."""

    NAME = "CPU Usage"

    def _read(self) -> float | None:
        return float(self._psutil.cpu_percent(interval=None))

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        self._refresh()
        if not self.available:
            return self._missing()
        return MetricEntry(self.NAME, f"{self.NAME}: {self.current:.2f} %", f"{self.current:.2f}")


class CpuMemory(_HostMetric):
    """The RAM in use on the machine, in GB (10**9 bytes), out of the total."""

    NAME = "CPU Memory"

    def _read(self) -> float | None:
        memory = self._psutil.virtual_memory()
        self.total_gb = memory.total / 1e9
        return memory.used / 1e9

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        self._refresh()
        if not self.available:
            return self._missing()
        formatted = f"RAM Used: {self.current:.2f} / {self.total_gb:.2f} GB"
        return MetricEntry(self.NAME, formatted, repr(self.current))


class CpuTemperature(_HostMetric):
    """The CPU package temperature in degrees Celsius, where the machine
    exposes one (psutil's `sensors_temperatures`, Linux and FreeBSD)."""

    NAME = "CPU Temperature"

    def _read(self) -> float | None:
        sensors = getattr(self._psutil, "sensors_temperatures", None)
        if sensors is None:
            return None
        groups = sensors() or {}
        names = [n for n in _CPU_SENSORS if groups.get(n)] + [n for n in groups if "cpu" in n.lower()]
        for group in names:
            readings = [r for r in groups[group] if getattr(r, "current", None) is not None]
            for wanted in _CPU_LABELS:
                for r in readings:
                    if (getattr(r, "label", "") or "").lower().startswith(wanted):
                        return float(r.current)
            if readings:
                return sum(float(r.current) for r in readings) / len(readings)
        return None

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        self._refresh()
        if not self.available:
            return self._missing()
        return MetricEntry(self.NAME, f"{self.NAME}: {self.current:.2f} °C", f"{self.current:.2f}")
