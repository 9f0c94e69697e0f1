"""burnbook.kernels: the Taichi device code behind the `Taichi` backend.

The bottom layer: it imports nothing from `burnbook.backend`. Defining kernels
needs no Taichi runtime. What kernels need from the backend that launches
them comes through context.py: when the backend's runtime starts it installs
its fast launcher, its pooled allocator and its settings object (tuning
knobs, and the arch facts that kernels read in `ti.static`); until then
kernels launch through Taichi's own call. Op codes are enums
(`elementwise.UnaryOp`...). Kernel modules must not use `from __future__
import annotations`: Taichi reads parameter annotations
(`ti.types.ndarray()`, `ti.template()`) as objects. Every buffer is a flat
1-D ndarray and every layout a runtime meta buffer, so kernels compile once
per op and dtype combination, never per shape or rank.

- context.py     what the backend hands in (`install`), and `Kernel`, a kernel and its launch
- layout.py      strided layouts packed into cached int32 meta buffers
- data.py        host transfers, fill, arange
- elementwise.py map1/map2/map3: every element-wise op (UnaryOp, BinaryOp,
                 TernaryOp codes), cast and copy
- reduce.py      sum/mean/max/min/argmax/argmin along a dim
- index.py       gather/select and scatter-add/select_assign
- matmul.py      batched matmul (the backend uses NumPy's BLAS on the CPU arch instead)
- window.py      the window meta buffer and per-task prologue of conv.py and pool.py
- conv.py        im2col, col2im and direct convolution
- pool.py        max, average and adaptive average pooling, and backward passes
- mathfn.py      erf, log1p, a vectorisable f32 exp, and the dispatchers of
                 exp/log/sin/cos/tanh/pow (native, or spirv_math.py's), as @ti.func
- spirv_math.py  the SPIR-V math routines (f64 exp/log/sin/cos, f32 log, pow)
- custom.py      copies between flat buffers and the n-d ndarrays of user kernels
- examples/      user kernels for `burnbook.autodiff.taichi_op` (the Custom Taichi Kernel chapter)

Rules every kernel keeps, so that it compiles on each arch Taichi names
(CPU and CUDA through LLVM; Vulkan and Metal through SPIR-V, which has no
64-bit exp/log/pow/sin/cos/tanh, and where f64 itself is optional):

1. No f64 value in a kernel unless a tensor it reads or writes is f64: f32
   math runs in f32 (erf, log1p included; mathfn.py), and constants are made
   in the compute type: `ct(c)` or `ti.f64(c)` (a `ti.cast` of a Python
   float, or one passed as a plain ti.func argument, is rounded to the
   default f32 first). Sums of f32/f16
   accumulate in the dtype the backend passes: f64 on the CPU and CUDA,
   compensated f32 on SPIR-V archs (reduce.py).
2. An op's variant is a template argument chosen with `ti.static`, never a
   run-time `if` on an op code: one op's code (and its dtypes) never compiles
   into another op's kernel.
3. Scalar arguments travel in the tensor's dtype: f32 for f32 and f16
   tensors (the f16 value rounded on the host), f64 for f64, i64 for ints.
4. SPIR-V's exp/log/pow/sin/cos/tanh take 32-bit floats at most: on SPIR-V
   archs f64 kernels compute them from f64 arithmetic (mathfn.py's `exp_`,
   `log_`... dispatchers, chosen statically), and so do f32 log and tanh
   (SPIR-V's lose relative accuracy near 1 and 0) and pow's special values
   (SPIR-V's pow is undefined for x <= 0; spirv_math.py). On a device without f64 at all
   (Metal, a Vulkan device without shaderFloat64) an f64 tensor is an error
   naming the device (the backend's `primitive.alloc`, probed with `data.f64_works`).

tests/backend/test_vulkan_kernels.py compiles and runs every kernel family
on Vulkan wherever a Vulkan device exists (Mesa's lavapipe on CI).
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

from . import context, data, elementwise, index, layout, matmul, reduce  # noqa: E402

__all__ = ["context", "data", "elementwise", "index", "layout", "matmul", "reduce"]
