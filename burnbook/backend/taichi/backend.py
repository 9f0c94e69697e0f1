"""`Taichi`, the backend class: the ops of ops/ on the runtime of runtime.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burnbook._draws import uniform_halves

from ..base import Backend, share_layout_ops
from . import runtime
from .launcher import host_array, host_writable
from .ops import BoolOps, FloatOps, IntOps
from .ops.float_ops import from_data
from .ops.module_ops import TaichiModuleOps
from .primitive import alloc
from .runtime import TaichiDevice


@share_layout_ops
class Taichi(TaichiModuleOps, FloatOps, IntOps, BoolOps, Backend):
    """Taichi kernels on the arch its `TaichiDevice` names (Burn's `Wgpu`).
    Conv and pooling run dedicated kernels (ops/module_ops.py); embedding
    and the 1-D ops are `ModuleOps`' defaults over them."""

    Device = TaichiDevice
    is_autodiff = False
    _rng = np.random.default_rng()

    @classmethod
    def name(cls) -> str:
        return "taichi"

    @classmethod
    def default_device(cls) -> TaichiDevice:
        """The running device if the runtime has started, else the one
        `BURNBOOK_TAICHI_ARCH` names (cpu, cuda[:i], vulkan, metal, best; default cpu)."""
        rt = runtime.current
        return rt.device if rt is not None else TaichiDevice.from_env()

    @classmethod
    def seed(cls, seed: int) -> None:
        cls._rng = np.random.default_rng(seed)

    @classmethod
    def sync(cls, device: Any = None) -> None:
        if runtime.current is not None:
            import taichi as ti

            ti.sync()

    @staticmethod
    def primitive_layout(p: Any) -> tuple:
        """A `TaichiTensor` is a strided view of a flat buffer: its shape,
        strides and offset as the view holds them, and the buffer's length."""
        return (tuple(p.shape), tuple(p.strides), p.offset, 0 if p.buf is None else p.buf.shape[0])

    @classmethod
    def float_random(cls, shape: tuple, distribution: Any, device: TaichiDevice, dtype: Any = np.float32):
        """Sampled on the host by NumPy (seeded by `seed`), then uploaded: the
        same numbers as NdArray for the same seed."""
        runtime.start(device)
        dtype = np.dtype(dtype)
        if getattr(distribution, "kind", None) == "bernoulli" and host_writable() and math.prod(shape):
            # Dropout's masks: the same draws and comparison as `sample`,
            # written as 0/1 straight into device memory (no float64 mask,
            # no casts, no upload).
            out = alloc(tuple(shape), dtype, device)
            mask = host_array(out.buf, dtype)
            uniform_halves(cls._rng, mask.size, lambda u, part: np.less(u, distribution.a, out=mask[part]))
            return out
        return from_data(distribution.sample(cls._rng, tuple(shape), dtype), device, dtype)


Taichi.InnerBackend = Taichi
