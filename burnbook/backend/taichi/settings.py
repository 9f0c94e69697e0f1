"""The Taichi backend's tuning knobs, in one object that kernels read at launch
(the runtime hands it to `burnbook.kernels.context` when it starts).

The runtime fills in the defaults for its arch when it starts; a test (or a
reader measuring something) changes them for a block with `override`:

    with SETTINGS.override(serial_below=0, launch="public"):
        ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Iterator

from burnbook.kernels.context import LaunchSettings

_CHOICES = {"matmul": ("blas", "kernel"), "columns": ("host", "kernel"), "reduce": ("host", "kernel"),
            "copy": ("host", "kernel"),
            "launch": ("fast", "public"),
            "conv": ("auto", "im2col", "direct"), "lanes": (0, 8)}
_FIXED = ("gpu", "spirv")  # facts of the arch, not knobs
# The CPU arch's host (NumPy) paths and their defaults there; GPU archs always take "kernel".
_HOST_PATHS = {"matmul": "blas", "columns": "host", "reduce": "host", "copy": "host"}


def _env_choice(name: str, field: str, default: str) -> str | int:
    """The environment's choice for `field`, in the type of its choices."""
    value = os.environ.get(name, default).strip().lower() or default
    if field in _HOST_PATHS and value == "auto":
        return default
    choices = {str(c): c for c in _CHOICES[field]}
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(choices)}")
    return choices[value]


def _env_pool_mb() -> float:
    raw = os.environ.get("BURNBOOK_TAICHI_POOL_MB", "256")
    try:
        mb = float(raw)
    except ValueError:
        raise ValueError(f"BURNBOOK_TAICHI_POOL_MB={raw!r}: expected a number of MiB") from None
    if mb < 0:
        raise ValueError(f"BURNBOOK_TAICHI_POOL_MB={raw!r}: must be >= 0")
    return mb


@dataclasses.dataclass
class KernelSettings(LaunchSettings):
    """Every tuning choice of the Taichi backend: what the kernels read
    (`LaunchSettings`: serial_below, block, reduce_tasks, reduce_min_chunk,
    and the arch's gpu and spirv) and the backend's own choices below. None
    of them changes a result beyond float rounding."""

    matmul: str = "blas"
    """"blas": NumPy's matmul on the device buffers (CPU arch only, where device
    memory is host memory); "kernel": the Taichi kernel (always on GPUs).
    `BURNBOOK_TAICHI_MATMUL=kernel` forces the kernel on the CPU."""
    columns: str = "host"
    """How a conv builds its column matrix (im2col) and folds tap planes back
    onto the output grid (col2im): "host", NumPy copies and adds on the
    device buffers (CPU arch only, like "blas"; ops/columns.py); "kernel", the
    Taichi kernels of kernels/conv.py (always on GPUs). Both add in the same
    order, so the same results. On the CPU the copies are memory-bound and
    NumPy's run as vector loads and stores where Taichi's scalar loops do not
    (see kernels/conv.py): the guide CNN's im2col takes ~1 ms on the host and
    ~3 ms as a kernel. `BURNBOOK_TAICHI_COLUMNS=kernel` forces the kernels."""
    reduce: str = "host"
    """How a float sum along a strided dim (any dim but a contiguous last one:
    a bias gradient's sum over the batch) runs: "host", NumPy's add.reduce
    on the device buffers in the same f64 accumulator (CPU arch only, like
    "blas"; ops/host_reduce.py), or "kernel", Taichi's reduction kernel
    (always on GPUs), whose task per kept element strides through memory
    (a [2048, 512] f32 sum over dim 0: ~5.5 ms as a kernel, ~0.4 ms on the
    host). Fusion runs such a sum's lazy input as a map first, then this.
    `BURNBOOK_TAICHI_REDUCE=kernel` forces the kernels."""
    copy: str = "host"
    """How a strided view is copied into another of the same dtype (making a
    permuted tensor contiguous, `cat`, `slice_assign`): "host", NumPy's
    `copyto` on the device buffers (CPU arch only, like "blas";
    `primitive.copy`), or "kernel", Taichi's copy kernel (always on GPUs),
    ~6x slower on the CPU for a permuted copy. A cast always takes the
    kernel. `BURNBOOK_TAICHI_COPY=kernel` forces the kernel."""
    lanes: int = 8
    """Fused maps over dense operands whose element count is a multiple of 8
    run 8 elements per index through vector-typed ndarrays (the fusion
    codegen's `fused_lanes`), which LLVM compiles to SIMD loads, math and
    stores on the CPU arch; the scalar kernel's stores reload every ndarray
    pointer and keep it scalar (Adam's update of 524,288 floats: 1.6 ms
    scalar, 0.3 ms in lanes). Lane by lane the same ops, so the same results.
    0 turns it off (`BURNBOOK_TAICHI_LANES=0`); always 0 on GPUs."""
    pool_mb: float = 256.0
    """MiB of freed buffers kept for reuse (`BURNBOOK_TAICHI_POOL_MB`)."""
    launch: str = "fast"
    """"fast": launches reuse Taichi's compiled kernels directly (launcher.py);
    "public": every launch and allocation goes through Taichi's public API
    (`BURNBOOK_TAICHI_LAUNCH=public`), the tested fallback for a Taichi upgrade."""
    conv: str = "auto"
    """conv2d's kernel: "auto" times im2col+matmul against the direct kernel
    once per shape class and keeps the faster (autotune.py); "im2col" or
    "direct" forces one."""

    def start(self, kind: str) -> None:
        """Set the defaults of the arch `kind` the runtime starts on, reading
        the environment variables named above."""
        gpu = kind != "cpu"
        self.serial_below = 0 if gpu else 16384
        self.block = 1 if gpu else 4096
        self.reduce_tasks, self.reduce_min_chunk = (8192, 256) if gpu else (16 * (os.cpu_count() or 1), 4096)
        for name, default in _HOST_PATHS.items():
            setattr(self, name, "kernel" if gpu else _env_choice(f"BURNBOOK_TAICHI_{name.upper()}", name, default))
        self.lanes = 0 if gpu else _env_choice("BURNBOOK_TAICHI_LANES", "lanes", "8")
        self.pool_mb = _env_pool_mb()
        self.launch = _env_choice("BURNBOOK_TAICHI_LAUNCH", "launch", "fast")
        self.gpu, self.spirv = gpu, kind in ("vulkan", "metal")

    @contextlib.contextmanager
    def override(self, **changes) -> Iterator["KernelSettings"]:
        """Change some settings for the `with` block, then restore them."""
        names = {f.name for f in dataclasses.fields(self)}
        for name, value in changes.items():
            if name not in names or name in _FIXED:
                knobs = ", ".join(sorted(names - set(_FIXED)))
                raise TypeError(f"KernelSettings.override: {name!r} is not a setting ({knobs})")
            if name in _CHOICES and value not in _CHOICES[name]:
                raise ValueError(f"KernelSettings.override: {name}={value!r}, expected one of "
                                 f"{', '.join(map(str, _CHOICES[name]))}")
            if self.gpu and (_HOST_PATHS.get(name) == value or (name, value) == ("lanes", 8)):
                raise ValueError(f"KernelSettings.override: {name}={value!r} needs the CPU arch")
        saved = {name: getattr(self, name) for name in changes}
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


SETTINGS = KernelSettings()
"""The settings of this process's runtime (there is one Taichi runtime per process)."""


def cache_root() -> Path:
    """Where burnbook keeps what it generates and measures beside Taichi's
    offline cache (fused kernel sources, autotune choices): `$BURNBOOK_CACHE`,
    else `$XDG_CACHE_HOME/burnbook`, else `~/.cache/burnbook`."""
    env = os.environ.get("BURNBOOK_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "burnbook"


def serial(work: int) -> bool:
    """Whether a launch over `work` elements runs serially on the calling
    thread (kernels take it as their `serial` template argument)."""
    return work < SETTINGS.serial_below
