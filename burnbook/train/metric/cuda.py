"""GPU metrics (Burn's `cuda.rs` and `gpu_temp.rs`): `CudaMetric` (memory
and utilisation of every NVIDIA GPU, as text) and `GpuTemperature` (numeric,
degrees Celsius).

Readings come from NVML through `pynvml` (the `nvidia-ml-py` package) when
it is installed and initialises, else from the `nvidia-smi` command when it
is on the PATH. A machine with neither (no NVIDIA GPU, no driver, macOS...)
gets entries that say "not available", never an error. A reader that fails
once is not asked again, so a broken driver costs one timeout at most.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .base import NOT_AVAILABLE, MetricEntry, MetricMetadata

__all__ = ["CudaMetric", "GpuTemperature", "GpuReading", "read_gpus"]

REFRESH_SECONDS = 1.0
_SMI_FIELDS = "index,memory.used,memory.total,utilization.gpu,temperature.gpu"


@dataclass
class GpuReading:
    """One GPU: memory in GB (10**9 bytes), utilisation in %, temperature in °C."""

    index: int
    memory_used_gb: float
    memory_total_gb: float
    utilization: float
    temperature: float


def _load_pynvml() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def _nvidia_smi() -> str | None:
    return shutil.which("nvidia-smi")


def _read_nvml(nvml: Any) -> list[GpuReading]:
    out = []
    for i in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        util = nvml.nvmlDeviceGetUtilizationRates(handle)
        temp = nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        out.append(GpuReading(i, memory.used / 1e9, memory.total / 1e9, float(util.gpu), float(temp)))
    return out


def _read_smi(command: str) -> list[GpuReading]:
    result = subprocess.run([command, f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader,nounits"],
                            capture_output=True, text=True, timeout=5, check=True)
    out = []
    for line in result.stdout.strip().splitlines():
        index, used, total, util, temp = (part.strip() for part in line.split(","))
        out.append(GpuReading(int(index), _num(used) * 1.048576e6 / 1e9, _num(total) * 1.048576e6 / 1e9,
                              _num(util), _num(temp)))
    return out


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return math.nan


class _GpuReader:
    """NVML, else nvidia-smi, else nothing; throttled."""

    def __init__(self) -> None:
        self._nvml = _load_pynvml()
        self._smi = None if self._nvml is not None else _nvidia_smi()
        self._last = -math.inf
        self.readings: list[GpuReading] | None = None
        self.refresh(force=True)

    @property
    def source(self) -> str | None:
        return "nvml" if self._nvml is not None else ("nvidia-smi" if self._smi else None)

    def refresh(self, force: bool = False) -> list[GpuReading] | None:
        now = time.monotonic()
        if not force and now - self._last < REFRESH_SECONDS:
            return self.readings
        self._last = now
        try:
            if self._nvml is not None:
                self.readings = _read_nvml(self._nvml)
            elif self._smi is not None:
                self.readings = _read_smi(self._smi)
            else:
                self.readings = None
        except Exception:
            self._nvml = self._smi = None  # don't pay for a broken driver on every iteration
            self.readings = None
        if not self.readings:
            self.readings = None
        return self.readings


def read_gpus() -> list[GpuReading] | None:
    """The GPUs of this machine now, or None where none can be read."""
    return _GpuReader().readings


class CudaMetric:
    """Memory use and utilisation of every NVIDIA GPU (Burn's "CUDA Stats")."""

    NAME = "CUDA Stats"
    input_type = None

    def __init__(self) -> None:
        self._reader = _GpuReader()

    def name(self) -> str:
        return self.NAME

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        readings = self._reader.refresh()
        if readings is None:
            return MetricEntry(self.NAME, f"{self.NAME}: {NOT_AVAILABLE} (no NVIDIA GPU, or neither pynvml "
                               "nor nvidia-smi)", NOT_AVAILABLE, available=False)
        formatted = " ".join(f"GPU #{g.index} - Memory {g.memory_used_gb:.2f}/{g.memory_total_gb:.2f} GB - "
                             f"Usage {g.utilization:.0f}%" for g in readings)
        raw = " ".join(f"{g.memory_used_gb}/{g.memory_total_gb}/{g.utilization}" for g in readings)
        return MetricEntry(self.NAME, formatted, raw)

    def clear(self) -> None:
        """Nothing to clear."""

    def __repr__(self) -> str:
        return "CudaMetric()"


class GpuTemperature:
    """The hottest NVIDIA GPU's temperature in °C (numeric), each shown."""

    NAME = "GPU Temperature"
    input_type = None

    def __init__(self) -> None:
        self._reader = _GpuReader()
        self.current = math.nan

    def name(self) -> str:
        return self.NAME

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        readings = self._reader.refresh()
        temps = [g.temperature for g in readings or () if math.isfinite(g.temperature)]
        if not temps:
            self.current = math.nan
            return MetricEntry(self.NAME, f"{self.NAME}: {NOT_AVAILABLE}", "NaN", available=False)
        self.current = max(temps)
        shown = ", ".join(f"GPU #{g.index} {g.temperature:.0f} °C" for g in readings)
        return MetricEntry(self.NAME, f"{self.NAME}: {shown}", f"{self.current:.2f}")

    def clear(self) -> None:
        """Nothing to clear."""

    def value(self) -> float:
        return self.current

    def __repr__(self) -> str:
        return "GpuTemperature()"
