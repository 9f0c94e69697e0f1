"""A description of the machine and the software that ran a benchmark."""

from __future__ import annotations

import datetime
import os
import platform
import sys
import time

import numpy as np

from burnbook._blas import openblas_threads


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return ", ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in flags)
    except OSError:
        pass
    return ""


def _memory() -> str:
    try:
        import psutil

        return f"{psutil.virtual_memory().total / 2**30:.1f} GiB"
    except Exception:
        try:
            with open("/proc/meminfo") as f:
                kb = int(f.readline().split()[1])
            return f"{kb / 2**20:.1f} GiB"
        except Exception:
            return "unknown"


def _physical_cores() -> str:
    try:
        import psutil

        return str(psutil.cpu_count(logical=False))
    except Exception:
        return "?"


def _os() -> str:
    name = platform.system()
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{name} (kernel {platform.release()})"


def blas_threads() -> int | None:
    found = openblas_threads()
    return int(found[0]()) if found else None


def set_blas_threads(n: int) -> bool:
    """Set NumPy's OpenBLAS thread count; False when that is not possible."""
    found = openblas_threads()
    if not found:
        return False
    found[1](int(n))
    return True


def _blas() -> str:
    """NumPy's BLAS and, for OpenBLAS, its thread count."""
    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        text = f"{cfg.get('name')} {cfg.get('version')}"
    except Exception:
        return "unknown"
    threads = blas_threads()
    return text if threads is None else f"{text}, {threads} threads"


def _version(dist: str) -> str:
    """A package's installed version, read from its metadata (no import)."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe(frameworks: list) -> list:
    """Lines (label, value) naming the machine, the software and the thread counts."""
    taichi_version = _version("taichi")
    torch_line = _version("torch")
    for fw in frameworks:
        if fw.key == "torch" and fw.available:
            torch_line += f" ({fw.note})"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return [
        ("Date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("CPU", f"{_cpu_model()} ({_cpu_flags()})"),
        ("Cores", f"{os.cpu_count()} logical, {_physical_cores()} physical"),
        ("RAM", _memory()),
        ("OS", _os()),
        ("Python", f"{platform.python_version()} ({sys.executable})"),
        ("NumPy", f"{np.__version__}, BLAS {_blas()}"),
        ("Taichi", taichi_version),
        ("PyTorch", torch_line),
        ("Threading environment", ", ".join(
            f"{k}={os.environ.get(k, 'unset')}" for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
        )),
        ("Load average at start (1, 5, 15 min)", load),
    ]


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


class CpuShare:
    """How much of the machine's CPU other processes used while we ran: the
    system's busy time minus this process's own, over wall time x cores."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.sys0 = self._busy()
        self.own0 = self._own()

    @staticmethod
    def _busy() -> float | None:
        try:
            import psutil

            t = psutil.cpu_times()
            return sum(t) - t.idle - getattr(t, "iowait", 0.0)
        except Exception:
            return None

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system

    def others_percent(self) -> float | None:
        busy = self._busy()
        if busy is None or self.sys0 is None:
            return None
        wall = (time.perf_counter() - self.t0) * (os.cpu_count() or 1)
        others = (busy - self.sys0) - (self._own() - self.own0)
        return max(0.0, 100.0 * others / wall) if wall > 0 else None


def contention_probe(calls: int = 25) -> str:
    """Time a 256x256 f32 matmul with NumPy's BLAS on every core and on one
    thread (then back to every core). On an idle 2-core machine the multi-threaded call is faster;
    when other processes keep the cores busy, its worker threads get
    preempted and it becomes slower than one thread, sometimes by 10-100x:
    then every multi-threaded number of the run (BLAS, PyTorch, Taichi) is
    inflated by the machine, not by the framework."""
    current = blas_threads()
    threads = os.cpu_count() or 1
    if not current or threads == 1 or current != threads:
        # (Raising OpenBLAS's thread count at run time leaves it oddly slow, so
        # the probe only runs when BLAS is already on every core.)
        return f"not run (NumPy's BLAS runs {current} thread(s) on {threads} cores)"
    a = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)

    def median_call() -> float:
        for _ in range(3):
            a @ a
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            a @ a
            times.append(time.perf_counter() - t)
        return sorted(times)[len(times) // 2]

    try:
        multi = median_call()
        set_blas_threads(1)
        one = median_call()
    finally:
        set_blas_threads(current)
    verdict = ("multi-threaded numbers look sound" if one / multi >= 1.2 else
               "CONTENDED: other processes keep the cores busy; multi-threaded numbers "
               "(BLAS matmul, PyTorch, Taichi) are inflated; compare with `--threads 1`")
    return (f"256x256 f32 matmul median {multi * 1e6:.0f} µs with {threads} BLAS threads, "
            f"{one * 1e6:.0f} µs with 1 ({one / multi:.2f}x speed-up): {verdict}")
