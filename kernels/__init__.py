"""burnbook.kernels: the Taichi device code behind the `Taichi` backend.

Only `burnbook.backend.taichi` imports this package. Defining kernels needs no
Taichi runtime; the backend calls `configure(gpu)` once after `ti.init`.
Kernel modules must not use `from __future__ import annotations`: Taichi reads
parameter annotations (`ti.types.ndarray()`, `ti.template()`) as objects.
Every buffer is a flat 1-D ndarray and every layout a runtime meta buffer, so
kernels compile once per dtype combination, never per shape or rank.

- launch.py      flat `Buffer`s and the low-overhead `Launcher`
- layout.py      strided layouts packed into cached int32 meta buffers
- data.py        host transfers, fill, arange
- elementwise.py map1/map2/map3: every element-wise op, cast and copy
- reduce.py      sum/mean/max/min/argmax/argmin along a dim
- index.py       gather/select and scatter-add/select_assign
- matmul.py      batched matmul (NumPy BLAS selected on the CPU arch)
- mathfn.py      erf and log1p as @ti.func
"""

from __future__ import annotations

import os


def _import_taichi_quietly() -> None:
    """Import taichi without its version banner and info lines (a notebook
    would show them), leaving the environment as it was."""
    saved = {k: os.environ.get(k) for k in ("ENABLE_TAICHI_HEADER_PRINT", "TI_LOG_LEVEL")}
    os.environ["ENABLE_TAICHI_HEADER_PRINT"] = "False"
    os.environ.setdefault("TI_LOG_LEVEL", "warn")
    try:
        import taichi  # noqa: F401
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_import_taichi_quietly()

from . import data, elementwise, index, launch, layout, matmul, reduce  # noqa: E402
from .launch import Buffer, Launcher, host_view, stats  # noqa: E402


def configure(gpu: bool) -> None:
    """Tune block sizes and kernel selection for the arch the runtime started on."""
    launch.configure(gpu)
    layout.configure(gpu)
    reduce.configure(gpu)
    matmul.configure(gpu)


__all__ = ["Buffer", "Launcher", "configure", "data", "elementwise", "host_view",
           "index", "layout", "matmul", "reduce", "stats"]
