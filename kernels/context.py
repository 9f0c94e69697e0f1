"""What the kernels take from the backend that launches them, handed in once.

kernels/ is the bottom layer: it imports nothing from `burnbook.backend`. The
Taichi backend's runtime calls `install` when it starts, before any kernel
compiles, with three things:

- `launcher(kernel)`: wraps a `@ti.kernel` into the callable that launches it
  (the backend's fast `Launcher`, which skips Taichi's per-call Python work);
- `buffer(dtype, n)`: a flat 1-D device array (the backend's pooled allocator);
- `settings`: a `LaunchSettings`, the knobs launch functions read at each
  launch and the facts of the arch that kernels read in `ti.static` (the
  backend's `KernelSettings` extends it with knobs of its own).

Until then kernels launch through Taichi's own call, allocate with
`ti.ndarray` and read the CPU defaults, so kernels/ also runs by itself.

A kernel module wraps each `@ti.kernel` once, at import, in a `Kernel` and
launches it with `kernel.launch(*args)`. `install` binds the `launch` of every
`Kernel`, made before or after it: a launch costs one attribute lookup more
than calling the launcher itself.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

import taichi as ti


@dataclasses.dataclass
class LaunchSettings:
    """What launch functions and kernels read from the settings. No choice
    changes a result beyond float rounding (the reduction split changes the
    summation order)."""

    serial_below: int = 16384
    """Launches over fewer elements run serially on the calling thread: on the
    CPU arch, waking Taichi's thread pool costs more than it saves below ~16K
    elements (11 us vs 5.6 us for a 4-element launch, measured). 0 on GPUs."""
    block: int = 4096
    """Elements one task walks along the inner dim: long serial runs per CPU
    thread, one element per GPU thread."""
    reduce_tasks: int = 16 * (os.cpu_count() or 1)
    """A reduction with fewer outputs than this is split into chunks along the
    reduced dim, so that it still fills the arch."""
    reduce_min_chunk: int = 4096
    """The shortest chunk such a split makes."""
    gpu: bool = False
    """Whether the arch is a GPU one (CUDA, Vulkan, Metal); set by the runtime."""
    spirv: bool = False
    """Whether kernels compile to SPIR-V (Vulkan, Metal); set by the runtime
    before any kernel compiles (mathfn.py reads it in `ti.static`)."""


class LaunchContext:
    """The launcher, allocator and settings kernels use (see the module docstring)."""

    def __init__(self) -> None:
        self.launcher: Callable[[Any], Callable] | None = None
        self.buffer: Callable[[Any, int], Any] = _ndarray
        self.settings: LaunchSettings = LaunchSettings()


def _ndarray(dtype: Any, n: int) -> Any:
    return ti.ndarray(dtype, (n,))


CONTEXT = LaunchContext()
"""The context of this process (one Taichi runtime per process)."""

_KERNELS: list = []  # every Kernel made, so that `install` can bind them


class Kernel:
    """A `@ti.kernel` and `launch`, the callable that launches it: the
    installed launcher's wrapper of it, or before `install` the kernel itself."""

    __slots__ = ("kernel", "launch")

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.launch = CONTEXT.launcher(kernel) if CONTEXT.launcher is not None else kernel
        _KERNELS.append(self)

    def __repr__(self) -> str:
        return f"Kernel({getattr(self.kernel, '__name__', self.kernel)!r})"


def install(launcher: Callable[[Any], Callable], buffer: Callable[[Any, int], Any], settings: LaunchSettings) -> None:
    """Launch every kernel through `launcher`, allocate with `buffer` and read
    `settings` (kept by reference: later changes to it are seen at launch)."""
    CONTEXT.launcher, CONTEXT.buffer, CONTEXT.settings = launcher, buffer, settings
    for k in _KERNELS:
        k.launch = launcher(k.kernel)


def serial(work: int) -> bool:
    """Whether a launch over `work` elements runs serially on the calling
    thread (kernels take it as their `serial` template argument)."""
    return work < CONTEXT.settings.serial_below


__all__ = ["CONTEXT", "Kernel", "LaunchContext", "LaunchSettings", "install", "serial"]
