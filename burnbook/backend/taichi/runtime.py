"""The device and the one Taichi runtime of this process (Burn's `WgpuDevice`
and its runtime).

`TaichiDevice` names where Taichi runs. Taichi has one runtime per process,
and `ti.init` again would invalidate every live tensor, so the first tensor
(or `TaichiDevice.best_available()`) starts it and `current` holds it from
then on. A runtime the user started with `ti.init` before burnbook's first
tensor is adopted. Starting it hands the kernels (`burnbook.kernels`) the fast
launcher, the allocator and the settings (`kernels.context.install`).
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import platform
import sys
import time
from typing import Any

import numpy as np
import taichi as ti

from burnbook import kernels

from . import frontend, launcher
from .settings import SETTINGS, KernelSettings

KINDS = {"cpu": "cpu", "x64": "cpu", "arm64": "cpu", "cuda": "cuda", "vulkan": "vulkan", "metal": "metal"}
"""Taichi's arch names (and burnbook's) -> the device kind."""


class DeviceDtypeError(TypeError):
    """A tensor of a dtype that the running Taichi device cannot hold (f64 on Metal)."""


def host_arch() -> str:
    """Taichi's name of this machine's CPU arch (x64, arm64, ...)."""
    m = platform.machine().lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)


def gpu_render_node() -> bool:
    """Whether a GPU could back a Vulkan device here (always true off Linux)."""
    return not sys.platform.startswith("linux") or bool(glob.glob("/dev/dri/renderD*"))


class TaichiDevice:
    """Where Taichi runs: `cpu()`, `cuda(i)`, `vulkan()`, `metal()` or `best_available()`."""

    __slots__ = ("kind", "index")

    def __init__(self, kind: str = "cpu", index: int = 0) -> None:
        if kind not in ("cpu", "cuda", "vulkan", "metal"):
            raise ValueError(f"TaichiDevice: unknown kind {kind!r} (cpu, cuda, vulkan, metal)")
        self.kind, self.index = kind, int(index) if kind == "cuda" else 0

    @classmethod
    def cpu(cls) -> "TaichiDevice":
        return cls("cpu")

    @classmethod
    def cuda(cls, i: int = 0) -> "TaichiDevice":
        """CUDA device `i`. Taichi binds one CUDA device per process: for i > 0
        burnbook narrows CUDA_VISIBLE_DEVICES to it before starting the runtime."""
        return cls("cuda", i)

    @classmethod
    def vulkan(cls) -> "TaichiDevice":
        return cls("vulkan")

    @classmethod
    def metal(cls) -> "TaichiDevice":
        return cls("metal")

    @classmethod
    def best_available(cls) -> "TaichiDevice":
        """The device the runtime runs on, starting it if needed on the first of
        CUDA, Metal, Vulkan that really initialises, else the CPU. Starting is
        the only reliable probe, so this call starts Taichi's runtime.

        On Linux, Vulkan is tried only where a GPU render node exists
        (`/dev/dri/renderD*`): without one the only Vulkan driver is a software
        one (Mesa's lavapipe), slower than Taichi's own CPU backend. Ask for it
        with `TaichiDevice.vulkan()` or `BURNBOOK_TAICHI_ARCH=vulkan`."""
        return start_best().device

    @classmethod
    def from_env(cls) -> "TaichiDevice":
        """The device `BURNBOOK_TAICHI_ARCH` names: cpu (the default), cuda[:i],
        vulkan, metal, or best (`best_available()`)."""
        spec = os.environ.get("BURNBOOK_TAICHI_ARCH", "cpu").strip().lower()
        if spec in ("best", "gpu", "auto"):
            return cls.best_available()
        kind, _, index = spec.partition(":")
        if kind not in KINDS or (index and not index.isdigit()):
            raise ValueError(f"BURNBOOK_TAICHI_ARCH={spec!r}: expected cpu, cuda[:i], vulkan, metal or best")
        return cls(KINDS[kind], int(index or 0))

    def __repr__(self) -> str:
        if self.kind == "cpu":
            return f"Cpu({host_arch()})"
        return f"Cuda({self.index})" if self.kind == "cuda" else self.kind.capitalize()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaichiDevice) and (self.kind, self.index) == (other.kind, other.index)

    def __hash__(self) -> int:
        return hash(("taichi", self.kind, self.index))


F32, F64, F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
I64, BOOL = np.dtype(np.int64), np.dtype(np.bool_)
FLOATS = (F32, F64, F16)


class TaichiRuntime:
    """The running device and what follows from its arch: the Taichi storage
    dtype of each NumPy dtype, the accumulator of sums, whether f64 exists,
    and the kernel settings."""

    def __init__(self, device: TaichiDevice, kernels: Any, settings: KernelSettings) -> None:
        self.device = device
        self.kernels = kernels
        self.settings = settings
        self.spirv = settings.spirv
        self.ti_dtype = {F32: ti.f32, F64: ti.f64, F16: ti.f16, I64: ti.i64, BOOL: ti.u8}
        # f32/f16 sums accumulate in f64 where the arch computes f64 natively; on
        # SPIR-V archs f32 data never meets f64 math (kernels/__init__.py), so
        # there they accumulate in compensated f32.
        f32_acc = ti.f32 if self.spirv else ti.f64
        self.accumulator = {F32: f32_acc, F16: f32_acc, F64: ti.f64, I64: ti.i64, BOOL: ti.i64}
        self.has_f64 = device.kind != "metal" and (device.kind != "vulkan" or kernels.data.f64_works())
        # Vector-typed ndarray accesses are SIMD only where vectors stay LLVM
        # vectors (`_init` on the CPU; a runtime the user started may differ).
        self.simd = device.kind == "cpu" and not launcher.config()["real_matrix_scalarize"]

    def __repr__(self) -> str:
        return f"TaichiRuntime({self.device!r}, launch={self.settings.launch})"


current: "TaichiRuntime | None" = None
"""This process's runtime, once started."""


def start(device: Any, probing: bool = False) -> "TaichiRuntime | None":
    """The runtime on `device`, starting Taichi there if nothing runs yet.

    A device other than the running one is a RuntimeError (one runtime per
    process). With `probing`, a device that cannot start gives None."""
    global current
    if not isinstance(device, TaichiDevice):
        raise ValueError(f"Taichi backend: expected a TaichiDevice, got {device!r}")
    if current is not None:
        if device == current.device:
            return current
        raise RuntimeError(
            f"this process already runs Taichi on {current.device!r}; a tensor on {device!r} needs a new "
            "Python process (restart the notebook kernel). Taichi has one runtime per process, and "
            "re-initialising it would invalidate every live tensor.")
    if launcher.program() is None and not _init(device, probing):
        return None
    actual = KINDS.get(launcher.running_arch(), "?")
    if actual != device.kind:
        raise RuntimeError(
            f"this process already runs Taichi on {launcher.running_arch()} (started outside "
            f"burnbook); a tensor on {device!r} needs a new Python process.")
    SETTINGS.start(device.kind)
    if frontend.chosen():
        frontend.install()   # before the first kernel is built (frontend.py)
    kernels.context.install(launcher.Launcher, launcher.buffer, SETTINGS)
    current = TaichiRuntime(device, kernels, SETTINGS)
    return current


def _init(device: TaichiDevice, probing: bool) -> bool:
    """`ti.init` for `device`'s arch, quietly and with the offline cache on."""
    arch = {"cpu": ti.cpu, "cuda": ti.cuda, "vulkan": ti.vulkan, "metal": ti.metal}[device.kind]
    if device.kind == "cuda" and device.index:
        _select_cuda_device(device.index)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # ti.init prints "Starting on arch"
            quiet = {} if "TI_LOG_LEVEL" in os.environ and not probing else {
                "log_level": ti.ERROR if probing else ti.WARN}  # Taichi warns when both are set
            # On the CPU, vectors stay LLVM vectors (not scalarised) so that a
            # vector-typed ndarray access is one SIMD load or store.
            simd = {"real_matrix_scalarize": False} if device.kind == "cpu" else {}
            ti.init(arch=arch, offline_cache=True, fast_math=False, enable_fallback=False, **quiet, **simd)
    except Exception as e:  # noqa: BLE001 - any failure means this arch cannot run here
        ti.reset()
        if probing:
            return False
        raise RuntimeError(f"Taichi cannot start on {device!r} here: {e}") from e
    finally:
        if "TI_LOG_LEVEL" not in os.environ:
            ti.set_logging_level(ti.WARN)
    _drop_stale_cache_lock()
    return True


STALE_LOCK_S = 120.0
"""Taichi holds its offline cache's lock file for the milliseconds of a load
or a dump; one older than this was left by a process killed meanwhile."""


def _drop_stale_cache_lock() -> None:
    """Remove a lock file a killed process left in the offline cache. Taichi
    never removes it itself: every later process would then warn "Lock ...
    failed" on stderr at its first kernel and at exit (a notebook cell's
    output included) and stop updating the cache, until `ti cache clean`."""
    lock = os.path.join(launcher.offline_cache_folder(), "ticache.lock")
    try:
        if time.time() - os.path.getmtime(lock) > STALE_LOCK_S:
            os.remove(lock)
    except OSError:  # no lock (the usual case), or another process just removed it
        pass


def start_best() -> TaichiRuntime:
    """The running runtime, or one started on the first of CUDA, Metal, Vulkan
    that initialises (Vulkan only with a GPU render node on Linux), else the CPU."""
    if current is not None:
        return current
    if launcher.program() is not None:  # started by the user: adopt it
        return start(TaichiDevice(KINDS.get(launcher.running_arch(), "cpu")))
    ti.set_logging_level(ti.ERROR)  # probes log "library not found" warnings
    for kind in ("cuda", "metal", "vulkan"):
        if kind == "vulkan" and not gpu_render_node():
            continue
        if launcher.compiled_with(kind):
            rt = start(TaichiDevice(kind), probing=True)
            if rt is not None:
                return rt
    return start(TaichiDevice.cpu())


def _select_cuda_device(index: int) -> None:
    """Taichi runs on the first visible CUDA device: make device `index` the only
    visible one (effective only before CUDA starts in this process)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(index + 1)]
    if index >= len(ids):
        raise RuntimeError(f"Cuda({index}): CUDA_VISIBLE_DEVICES={visible} lists only {len(ids)} device(s)")
    os.environ["CUDA_VISIBLE_DEVICES"] = ids[index].strip()
