"""`Taichi`: every primitive op as a Taichi kernel from `burnbook.kernels` (Burn's `Wgpu`).

Shaped like Burn's burn-cubecl:

- runtime.py    `TaichiDevice` (cpu, cuda(i), vulkan, metal, best_available)
                and `TaichiRuntime`, the one runtime of the process: device,
                arch facts (f64 support, SPIR-V), dtype maps, kernel settings
- settings.py   `SETTINGS`, every tuning knob, and `SETTINGS.override(...)`
- primitive.py  `TaichiTensor`: a strided view of a flat device buffer
- ops/          the float, int, bool and module ops, and how they reach their
                kernels (launch.py); the host paths of the CPU arch beside them
                (blas.py: matmul by NumPy's BLAS; columns.py: a conv's im2col
                and col2im by NumPy)
- launcher.py   the fast launcher and allocator (pooled buffers, host views):
                the only code that touches Taichi internals;
                `BURNBOOK_TAICHI_LAUNCH=public` bypasses it. (It was called
                compat.py; `device.py` was merged into runtime.py.)
- autotune.py   times kernel variants once per shape class, keeps the fastest
- backend.py    the `Taichi` class that puts them together

The kernels themselves (`burnbook.kernels`) import nothing from here: when the
runtime starts it hands them the launcher, the allocator and the settings
(`burnbook.kernels.context.install`).

Element types on the device: f32 (default), f64 and f16 are stored as
themselves (f16 math runs in f32 and rounds per op, as NumPy's does); ints are
i64; bools are u8 0/1, reported as `np.bool_`. Tensors hold < 2**31 elements.

One Taichi runtime per process: the first tensor (or `default_device()` with
`BURNBOOK_TAICHI_ARCH=best`, or `TaichiDevice.best_available()`) calls
`ti.init` for its device's arch, quietly and with the offline cache on. A
tensor on another arch afterwards raises RuntimeError: re-initialising would
invalidate every live tensor. A runtime you started with `ti.init` before
burnbook's first tensor is adopted; calling `ti.init`/`ti.reset` after it
kills burnbook's tensors, and the next op says so (RuntimeError).

Kernels are compiled per op, dtype combination and serial/parallel variant
only: shapes, ranks and strides are run-time arguments. Vulkan runs on every
CI run (Mesa's lavapipe; `make test-vulkan`); CUDA and Metal run the same
kernels (`make test-gpu ARCH=cuda`). Vulkan and Metal compile kernels to
SPIR-V, so kernels keep the rules of kernels/__init__.py; f64 needs device
support (Taichi's Metal backend has none: an f64 tensor there is a
DeviceDtypeError), so do i64 and, for scatter, f16 atomics.
"""

from __future__ import annotations

import burnbook.kernels  # noqa: F401  - imports taichi without its banner, before anything else does

from . import runtime
from .backend import Taichi
from .launcher import stats as _stats
from .primitive import TaichiTensor
from .runtime import DeviceDtypeError, TaichiDevice, TaichiRuntime
from .settings import SETTINGS, KernelSettings


def running_device() -> "TaichiDevice | None":
    """The device this process's Taichi runtime runs on, or None before the first tensor."""
    return runtime.current.device if runtime.current is not None else None


def kernel_stats() -> dict:
    """Kernel `instances` compiled (or loaded from Taichi's offline cache) and
    kernel `launches` so far in this process."""
    return _stats()


__all__ = ["DeviceDtypeError", "KernelSettings", "SETTINGS", "Taichi", "TaichiDevice", "TaichiRuntime",
           "TaichiTensor", "kernel_stats", "running_device", "runtime"]
