"""`Taichi`: every primitive op as a Taichi kernel from `burnbook.kernels` (Burn's `Wgpu`).

The primitive is a `TaichiTensor`: a flat device buffer seen through `shape`,
`strides` (in elements) and `offset`. Layout ops (reshape of a contiguous
tensor, permute, swap_dims, expand, slice with any step) are lazy views that
share the buffer; kernels read views directly through their strides, with zero
strides for broadcast dims, so no op copies its inputs. Buffers are never
written after the op that made them returns, which makes sharing safe.
`reshape` of a non-contiguous view, and `into_data` of one, materialise it.

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

Kernels (burnbook.kernels) are compiled per op, dtype combination and
serial/parallel variant only: shapes, ranks and strides are run-time
arguments. Launches under ~16K elements run serially on the calling
thread (waking the thread pool costs more), larger ones on all cores.
`float_matmul` is the one kernel selection: NumPy's BLAS on the CPU arch (see
`_matmul`). Module ops (conv, pooling, embedding) are `ModuleOps`' defaults,
composed of these primitives.

Vulkan runs on every CI run (Mesa's lavapipe; `make test-vulkan`); CUDA and
Metal run the same kernels. Vulkan and Metal compile kernels to SPIR-V, so
kernels keep the rules of kernels/__init__.py; f64 needs device support
(Taichi's Metal backend has none: an f64 tensor there is a DeviceDtypeError),
so do i64 and, for scatter, f16 atomics (lavapipe has no f16 atomics).
"""

from __future__ import annotations

import contextlib
import glob
import io
import math
import os
import platform
import sys
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from .base import Backend, broadcast_shape, check_devices, share_layout_ops

K: Any = None  # burnbook.kernels, imported when the runtime starts
_running: "TaichiDevice | None" = None
_no_f64 = False  # whether the running device lacks f64 (Metal, some Vulkan devices)
_TI: dict = {}  # np.dtype -> Taichi storage dtype
_ACC: dict = {}  # np dtype -> sum accumulator dtype (see _start)
_SPIRV = ("vulkan", "metal")  # archs whose kernels are SPIR-V: no f64 math in f32 kernels
_KINDS = {"cpu": "cpu", "x64": "cpu", "arm64": "cpu", "cuda": "cuda", "vulkan": "vulkan", "metal": "metal"}

F32, F64, F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
I64, BOOL = np.dtype(np.int64), np.dtype(np.bool_)
_FLOATS = (F32, F64, F16)


def _host_arch() -> str:
    m = platform.machine().lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)


class DeviceDtypeError(TypeError):
    """A tensor of a dtype that the running Taichi device cannot hold (f64 on Metal)."""


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
        if _running is None:
            import burnbook.kernels  # noqa: F401  - taichi, imported quietly
            import taichi as ti
            from taichi._lib import core
            from taichi.lang import impl

            if impl.get_runtime().prog is not None:  # started by the user: adopt it
                _start(cls(_KINDS.get(impl.current_cfg().arch.name, "cpu")))
                return _running
            ti.set_logging_level(ti.ERROR)  # probes log "library not found" warnings
            probes = (("cuda", core.with_cuda), ("metal", core.with_metal), ("vulkan", core.with_vulkan))
            for kind, probe in probes:
                if kind == "vulkan" and not _gpu_render_node():
                    continue
                if _probe(probe) and _start(cls(kind), probing=True):
                    return _running
            _start(cls.cpu())
        return _running

    def __repr__(self) -> str:
        if self.kind == "cpu":
            return f"Cpu({_host_arch()})"
        return f"Cuda({self.index})" if self.kind == "cuda" else self.kind.capitalize()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaichiDevice) and (self.kind, self.index) == (other.kind, other.index)

    def __hash__(self) -> int:
        return hash(("taichi", self.kind, self.index))


def _gpu_render_node() -> bool:
    """Whether a GPU could back a Vulkan device here (always true off Linux)."""
    return not sys.platform.startswith("linux") or bool(glob.glob("/dev/dri/renderD*"))


def _probe(fn) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001 - a failing probe means "not available"
        return False


def running_device() -> "TaichiDevice | None":
    """The device this process's Taichi runtime runs on, or None before the first tensor."""
    return _running


def kernel_stats() -> dict:
    """Kernel `instances` compiled (or loaded from Taichi's offline cache) and
    kernel `launches` so far in this process."""
    return K.stats() if K is not None else {"instances": 0, "launches": 0}


def _start(device: Any, probing: bool = False) -> bool:
    """Start Taichi's runtime for `device`, or check that it already runs there."""
    global K, _running
    if not isinstance(device, TaichiDevice):
        raise ValueError(f"Taichi backend: expected a TaichiDevice, got {device!r}")
    if _running is not None:
        if device == _running:
            return True
        raise RuntimeError(
            f"this process already runs Taichi on {_running!r}; a tensor on {device!r} needs a new "
            "Python process (restart the notebook kernel). Taichi has one runtime per process, and "
            "re-initialising it would invalidate every live tensor.")
    from burnbook import kernels  # imports taichi without its version banner
    import taichi as ti
    from taichi.lang import impl

    arch = {"cpu": ti.cpu, "cuda": ti.cuda, "vulkan": ti.vulkan, "metal": ti.metal}[device.kind]
    if impl.get_runtime().prog is None:
        if device.kind == "cuda" and device.index:
            _select_cuda_device(device.index)
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # ti.init prints "Starting on arch"
                quiet = {} if "TI_LOG_LEVEL" in os.environ and not probing else {
                    "log_level": ti.ERROR if probing else ti.WARN}  # Taichi warns when both are set
                ti.init(arch=arch, offline_cache=True, fast_math=False, enable_fallback=False, **quiet)
        except Exception as e:  # noqa: BLE001 - any failure means this arch cannot run here
            ti.reset()
            if probing:
                return False
            raise RuntimeError(f"Taichi cannot start on {device!r} here: {e}") from e
        finally:
            if "TI_LOG_LEVEL" not in os.environ:
                ti.set_logging_level(ti.WARN)
    actual = _KINDS.get(impl.current_cfg().arch.name, "?")
    if actual != device.kind:
        raise RuntimeError(
            f"this process already runs Taichi on {impl.current_cfg().arch.name} (started outside "
            f"burnbook); a tensor on {device!r} needs a new Python process.")
    K = kernels
    K.configure(gpu=device.kind != "cpu", spirv=device.kind in _SPIRV)
    global _no_f64
    _no_f64 = device.kind == "metal" or (device.kind == "vulkan" and not K.data.f64_works())
    _TI.update({F32: ti.f32, F64: ti.f64, F16: ti.f16, I64: ti.i64, BOOL: ti.u8})
    # f32/f16 sums accumulate in f64 where the arch computes f64 natively; on
    # SPIR-V archs f32 data never meets f64 math (kernels/__init__.py), so
    # there they accumulate in compensated f32.
    f32_acc = ti.f32 if device.kind in _SPIRV else ti.f64
    _ACC.update({F32: f32_acc, F16: f32_acc, F64: ti.f64, I64: ti.i64, BOOL: ti.i64})
    _running = device
    return True


def _select_cuda_device(index: int) -> None:
    """Taichi runs on the first visible CUDA device: make device `index` the only
    visible one (effective only before CUDA starts in this process)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(index + 1)]
    if index >= len(ids):
        raise RuntimeError(f"Cuda({index}): CUDA_VISIBLE_DEVICES={visible} lists only {len(ids)} device(s)")
    os.environ["CUDA_VISIBLE_DEVICES"] = ids[index].strip()


def _default() -> TaichiDevice:
    spec = os.environ.get("BURNBOOK_TAICHI_ARCH", "cpu").strip().lower()
    if spec in ("best", "gpu", "auto"):
        return TaichiDevice.best_available()
    kind, _, index = spec.partition(":")
    if kind not in _KINDS:
        raise ValueError(f"BURNBOOK_TAICHI_ARCH={spec!r}: expected cpu, cuda[:i], vulkan, metal or best")
    return TaichiDevice(_KINDS[kind], int(index or 0))


# -- the primitive -----------------------------------------------------------------
@lru_cache(maxsize=4096)
def _contig(shape: tuple) -> tuple:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


class TaichiTensor:
    """A strided view (shape, strides, offset) of a flat Taichi buffer; `buf` is
    None for zero-size tensors. Never modified after creation."""

    __slots__ = ("buf", "shape", "strides", "offset", "dtype", "device")

    def __init__(self, buf, shape: tuple, strides: tuple, offset: int, dtype: np.dtype, device: TaichiDevice):
        self.buf, self.shape, self.strides, self.offset = buf, shape, strides, offset
        self.dtype, self.device = dtype, device

    @property
    def contiguous(self) -> bool:
        return all(st == c for st, c, n in zip(self.strides, _contig(self.shape), self.shape) if n != 1)

    def view(self, shape: tuple | None = None) -> tuple:
        """(buffer, strides, offset), strides zeroed where broadcast to `shape`."""
        if shape is None or shape == self.shape:
            return self.buf, self.strides, self.offset
        lead = len(shape) - len(self.shape)
        st = (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                                 for s, n, m in zip(self.strides, self.shape, shape[lead:]))
        return self.buf, st, self.offset

    def __repr__(self) -> str:
        return f"TaichiTensor(shape={list(self.shape)}, dtype={self.dtype}, device={self.device})"


def _alloc(shape: tuple, dtype: np.dtype, device: TaichiDevice) -> TaichiTensor:
    if _no_f64 and dtype == F64:
        raise DeviceDtypeError(
            f"Taichi on {device!r}: this device has no f64 (Taichi's Metal backend never has; a Vulkan "
            "device without shaderFloat64 neither); keep f64 data on the CPU device, or use f32")
    n = math.prod(shape)
    buf = K.Buffer(_TI[dtype], n) if n else None
    return TaichiTensor(buf, shape, _contig(shape), 0, dtype, device)


def _out(t: TaichiTensor) -> tuple:
    return t.buf, t.strides, t.offset


def _materialize(p: TaichiTensor, dtype: np.dtype | None = None) -> TaichiTensor:
    """A contiguous copy (also a cast when `dtype` differs)."""
    out = _alloc(p.shape, dtype or p.dtype, p.device)
    if out.buf is not None:
        K.elementwise.run(K.elementwise.COPY, p.shape, _out(out), (p.view(),))
    return out


def _contiguous(p: TaichiTensor) -> TaichiTensor:
    return p if p.contiguous else _materialize(p)


def _same_device(op: str, ps: Sequence[TaichiTensor]) -> TaichiDevice:
    d = ps[0].device
    for p in ps[1:]:
        if p.device is not d:
            check_devices(op, d, p.device)
    return d


# -- op helpers ----------------------------------------------------------------
def _bshape(op: str, ps: Sequence[TaichiTensor]) -> tuple:
    shape = ps[0].shape
    for p in ps[1:]:
        if p.shape != shape:
            shape = broadcast_shape(op, shape, p.shape)
    return shape


def _unary(p: TaichiTensor, op: int, dtype: np.dtype | None = None, s1: Any = 0, s2: Any = 0) -> TaichiTensor:
    out = _alloc(p.shape, dtype or p.dtype, p.device)
    if out.buf is not None:
        K.elementwise.run(op, p.shape, _out(out), (p.view(),), s1, s2)
    return out


def _nary(name: str, op: int, ps: Sequence[TaichiTensor], dtype: np.dtype | None = None, s1: Any = 0,
          promote: bool = True) -> TaichiTensor:
    """An element-wise op over broadcast operands; operands of differing dtypes
    are promoted as NumPy would (the tensor layer normally prevents it)."""
    device = _same_device(name, ps)
    shape = _bshape(name, ps)
    if promote and ps[0].dtype != ps[1].dtype:
        common = np.result_type(ps[0].dtype, ps[1].dtype)
        ps = [p if p.dtype == common else _materialize(p, common) for p in ps]
    out = _alloc(shape, dtype or ps[0].dtype, device)
    if out.buf is not None:
        K.elementwise.run(op, shape, _out(out), [p.view(shape) for p in ps], s1)
    return out


def _full(shape: tuple, value: Any, dtype: np.dtype, device: TaichiDevice) -> TaichiTensor:
    out = _alloc(tuple(shape), dtype, device)
    if out.buf is not None:
        K.data.fill(out.buf, float(value) if dtype in _FLOATS else int(value))
    return out


def _int_scalar(name: str, s: Any) -> int:
    if isinstance(s, (bool, int, np.integer)):
        return int(s)
    if isinstance(s, (float, np.floating)) and float(s).is_integer():
        return int(s)
    raise TypeError(f"{name}: an Int tensor takes an integer scalar, got {s!r}")


def _int_compare_elem(name: str, p: TaichiTensor, s: Any, op: int) -> TaichiTensor:
    """Compare an int tensor with a scalar; a non-integral float scalar compares
    exactly as NumPy does, by rounding it the way that keeps the answer."""
    E = K.elementwise
    if isinstance(s, (float, np.floating)) and not float(s).is_integer():
        s = float(s)
        if math.isnan(s) or op == E.EQ_S:
            return _full(p.shape, False, BOOL, p.device)
        if math.isinf(s):
            return _full(p.shape, (op in (E.GT_S, E.GE_S)) == (s < 0), BOOL, p.device)
        s = math.floor(s) if op in (E.GT_S, E.LE_S) else math.ceil(s)
    return _unary(p, op, BOOL, _int_scalar(name, s))


def _reduce(name: str, p: TaichiTensor, dim: int, op: int, mean: bool = False) -> TaichiTensor:
    R = K.reduce
    arg = op in (R.ARGMAX, R.ARGMIN)
    shape = p.shape[:dim] + (1,) + p.shape[dim + 1:]
    out = _alloc(shape, I64 if arg else p.dtype, p.device)
    if out.buf is None:
        return out
    n = p.shape[dim]
    if n == 0:
        if op != R.SUM:
            raise ValueError(f"{name}: dim {dim} of shape {list(p.shape)} has size 0, and max/min/arg* "
                             "of nothing is undefined")
        return _full(shape, math.nan if mean else 0, p.dtype, p.device)
    adt = _ACC[p.dtype]
    K.reduce.run(op, p.view(), p.shape, dim, out.buf, adt, 1.0 / n if mean else 1.0)
    return out


def _reduce_all(name: str, p: TaichiTensor, op: int) -> TaichiTensor:
    """Full reduction to shape (1,): one strided walk when the view merges to
    a single dim, else over a contiguous copy."""
    n = math.prod(p.shape)
    if n == 0:
        if op != K.reduce.SUM:
            raise ValueError(f"{name}: a zero-size tensor of shape {list(p.shape)} has no max/min")
        return _full((1,), 0, p.dtype, p.device)
    merged, (strides,) = K.layout.coalesce(p.shape, [p.strides])
    if len(merged) > 1:
        p = _materialize(p)
        strides = [1]
    flat = TaichiTensor(p.buf, (n,), (strides[0] if strides else 1,), p.offset, p.dtype, p.device)
    return _reduce(name, flat, 0, op)


def _check_index_rank(name: str, p: TaichiTensor, idx: TaichiTensor) -> None:
    if len(idx.shape) != len(p.shape):
        raise ValueError(f"{name}: indices of shape {list(idx.shape)} need the rank of {list(p.shape)}")


def _raise_bad(name: str, bad: int, dim: int, n: int) -> None:
    if bad:
        raise IndexError(f"{name}: {bad} index value(s) out of range for dim {dim} of size {n}")


def _gather(name: str, dim: int, p: TaichiTensor, idx: TaichiTensor, idx_view: tuple, shape: tuple) -> TaichiTensor:
    out = _alloc(shape, p.dtype, p.device)
    if out.buf is None:
        return out
    if p.buf is None:
        raise IndexError(f"{name}: dim {dim} of shape {list(p.shape)} is empty; no index is in range")
    pv = p.view(shape)
    pst = list(pv[1])
    pst[dim] = 0
    bad = K.index.gather(shape, _out(out), (p.buf, tuple(pst), p.offset), idx_view, p.shape[dim], p.strides[dim])
    _raise_bad(name, bad, dim, p.shape[dim])
    return out


def _scatter(name: str, dim: int, p: TaichiTensor, idx_view: tuple, values: TaichiTensor, shape: tuple) -> TaichiTensor:
    """A copy of p with values[i] added at [i with dim -> index] for i over `shape`."""
    _same_device(name, (p, values))
    if len(values.shape) != len(shape) or any(m != n and m != 1 for n, m in zip(shape, values.shape)):
        raise ValueError(f"{name}: values of shape {list(values.shape)} do not broadcast to {list(shape)}")
    if p.dtype == F16 and p.device.kind in _SPIRV:
        # f16 atomics are optional on SPIR-V devices (lavapipe has none, and its
        # pipeline creation then crashes the process): add in f32, round once.
        wide = _scatter(name, dim, _materialize(p, F32), idx_view, _materialize(values, F32), shape)
        return _materialize(wide, F16)
    out = _materialize(p)
    if math.prod(shape) == 0:
        return out
    if out.buf is None:
        raise IndexError(f"{name}: dim {dim} of shape {list(p.shape)} is empty; no index is in range")
    ost = list(out.strides)
    ost[dim] = 0
    bad = K.index.scatter_add(shape, (out.buf, tuple(ost), 0), idx_view, values.view(shape),
                              p.shape[dim], out.strides[dim])
    _raise_bad(name, bad, dim, p.shape[dim])
    return out


def _select_view(idx: TaichiTensor, shape: tuple, dim: int) -> tuple:
    """A 1-D index tensor seen as `shape`, varying along `dim` only."""
    st = [0] * len(shape)
    st[dim] = idx.strides[0]
    return idx.buf, tuple(st), idx.offset


def _slice_view(p: TaichiTensor, ranges: Sequence[slice]) -> TaichiTensor:
    shape, strides, offset = list(p.shape), list(p.strides), p.offset
    for d, r in enumerate(ranges):
        start, stop, step = r.indices(shape[d])  # NumPy's reading of the slice object
        n = len(range(start, stop, step))
        if n:
            offset += start * strides[d]
        shape[d], strides[d] = n, strides[d] * step
    shape = tuple(shape)
    buf = p.buf if math.prod(shape) else None
    return TaichiTensor(buf, shape, tuple(strides), offset, p.dtype, p.device)


def _copy_into(region: TaichiTensor, values: TaichiTensor, name: str) -> None:
    if len(values.shape) != len(region.shape) or any(
            m != n and m != 1 for n, m in zip(region.shape, values.shape)):
        raise ValueError(f"{name}: values of shape {list(values.shape)} do not broadcast to the "
                         f"slice of shape {list(region.shape)}")
    if math.prod(region.shape) == 0:
        return
    K.elementwise.run(K.elementwise.COPY, region.shape, _out(region), (values.view(region.shape),))


def _matmul(lhs: TaichiTensor, rhs: TaichiTensor) -> TaichiTensor:
    """`[..., m, k] @ [..., k, n]`, batch dims broadcasting. Kernel selection: on
    the CPU arch NumPy's BLAS runs on the device buffers themselves (zero-copy;
    ~60 GFLOP/s against 3-6 for the Taichi kernel at 1024x1024 f32, measured);
    GPU archs run the Taichi kernel. See kernels/matmul.py."""
    device = _same_device("float_matmul", (lhs, rhs))
    ls, rs = lhs.shape, rhs.shape
    if len(ls) < 2 or len(ls) != len(rs) or ls[-1] != rs[-2]:
        raise ValueError(f"float_matmul: shapes {list(ls)} and {list(rs)} cannot be multiplied "
                         "(need [..., m, k] @ [..., k, n] of the same rank)")
    try:
        batch = broadcast_shape("float_matmul", ls[:-2], rs[:-2])
    except ValueError:
        raise ValueError(f"float_matmul: batch dims of {list(ls)} and {list(rs)} do not broadcast") from None
    if lhs.dtype != rhs.dtype:
        common = np.result_type(lhs.dtype, rhs.dtype)
        lhs, rhs = _materialize(lhs, common), _materialize(rhs, common)
    oshape = batch + (ls[-2], rs[-1])
    if ls[-1] == 0:
        return _full(oshape, 0, lhs.dtype, device)
    out = _alloc(oshape, lhs.dtype, device)
    if out.buf is not None:
        K.matmul.run(out.buf, lhs.view(), rhs.view(), ls, rs, oshape, lhs.dtype)
    return out


def _ew(name: str):
    return getattr(K.elementwise, name)


def _binop(name: str, code: str, dtype: np.dtype | None = None):
    return staticmethod(lambda a, b: _nary(name, _ew(code), (a, b), dtype))


def _scalar_f(code: str):
    return staticmethod(lambda p, s: _unary(p, _ew(code), None, float(s)))


def _scalar_i(name: str, code: str):
    return staticmethod(lambda p, s: _unary(p, _ew(code), None, _int_scalar(name, s)))


def _unop(code: str, dtype: np.dtype | None = None):
    return staticmethod(lambda p: _unary(p, _ew(code), dtype))


def _cmp_f(code: str):
    return staticmethod(lambda p, s: _unary(p, _ew(code), BOOL, float(s)))


def _cmp_i(name: str, code: str):
    return staticmethod(lambda p, s: _int_compare_elem(name, p, s, _ew(code)))


def _red(name: str, code: str, mean: bool = False):
    return staticmethod(lambda p, dim: _reduce(name, p, dim, getattr(K.reduce, code), mean))


def _red_all(name: str, code: str):
    return staticmethod(lambda p: _reduce_all(name, p, getattr(K.reduce, code)))


@share_layout_ops
class Taichi(Backend):
    """Taichi kernels on the arch its `TaichiDevice` names (Burn's `Wgpu`)."""

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
        return _running if _running is not None else _default()

    @classmethod
    def seed(cls, seed: int) -> None:
        cls._rng = np.random.default_rng(seed)

    @classmethod
    def sync(cls, device: Any = None) -> None:
        if _running is not None:
            import taichi as ti

            ti.sync()

    # -- data and creation -------------------------------------------------------
    @staticmethod
    def _from_data(array: Any, device: TaichiDevice, dtype: np.dtype) -> TaichiTensor:
        _start(device)
        arr = np.ascontiguousarray(array, dtype=dtype)
        out = _alloc(arr.shape, dtype, _running)
        if out.buf is not None:
            flat = arr.reshape(-1)
            K.data.upload(out.buf, flat.view(np.uint8) if dtype == BOOL else flat)
        return out

    @staticmethod
    def float_from_data(array: np.ndarray, device: TaichiDevice) -> TaichiTensor:
        dtype = np.asarray(array).dtype
        return Taichi._from_data(array, device, dtype if dtype in _FLOATS else F32)

    @staticmethod
    def float_into_data(p: TaichiTensor) -> np.ndarray:
        """A host copy; a non-contiguous view is first made contiguous on the device."""
        host = np.empty(p.shape, dtype=np.uint8 if p.dtype == BOOL else p.dtype)
        if p.buf is not None:
            p = _contiguous(p)
            K.data.download(host.reshape(-1), p.buf, p.offset)
        return host.view(np.bool_) if p.dtype == BOOL else host

    @staticmethod
    def float_empty(shape: tuple, device: TaichiDevice, dtype: Any = np.float32) -> TaichiTensor:
        _start(device)
        return _alloc(tuple(shape), np.dtype(dtype), _running)

    @staticmethod
    def float_full(shape: tuple, value: float, device: TaichiDevice, dtype: Any = np.float32) -> TaichiTensor:
        _start(device)
        return _full(shape, value, np.dtype(dtype), _running)

    @classmethod
    def float_random(cls, shape: tuple, distribution: Any, device: TaichiDevice, dtype: Any = np.float32):
        """Sampled on the host by NumPy (seeded by `seed`), then uploaded: the
        same numbers as NdArray for the same seed."""
        _start(device)
        return cls._from_data(distribution.sample(cls._rng, tuple(shape), dtype), device, np.dtype(dtype))

    @staticmethod
    def float_shape(p: TaichiTensor) -> tuple:
        return p.shape

    @staticmethod
    def float_device(p: TaichiTensor) -> TaichiDevice:
        return p.device

    @staticmethod
    def float_to_device(p: TaichiTensor, device: TaichiDevice) -> TaichiTensor:
        if device == p.device:
            return p
        _start(device)  # raises: one runtime, one device per process
        return p

    @staticmethod
    def float_dtype(p: TaichiTensor) -> np.dtype:
        return p.dtype

    @staticmethod
    def float_cast(p: TaichiTensor, dtype: Any) -> TaichiTensor:
        dtype = np.dtype(dtype)
        if dtype not in _FLOATS:
            raise TypeError(f"float_cast: {dtype} is not a float dtype (f16, f32, f64)")
        return p if dtype == p.dtype else _materialize(p, dtype)

    # -- layout ----------------------------------------------------------------
    @staticmethod
    def float_reshape(p: TaichiTensor, shape: tuple) -> TaichiTensor:
        shape = tuple(shape)
        n = math.prod(p.shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple(n // known if s == -1 and known else s for s in shape)
        if math.prod(shape) != n or any(s < 0 for s in shape):
            raise ValueError(f"reshape: cannot reshape {list(p.shape)} ({n} elements) into {list(shape)}")
        q = _contiguous(p)
        return TaichiTensor(q.buf, shape, _contig(shape), q.offset, q.dtype, q.device)

    @staticmethod
    def float_swap_dims(p: TaichiTensor, d1: int, d2: int) -> TaichiTensor:
        axes = list(range(len(p.shape)))
        axes[d1], axes[d2] = axes[d2], axes[d1]
        return Taichi.float_permute(p, axes)

    @staticmethod
    def float_permute(p: TaichiTensor, axes: Sequence[int]) -> TaichiTensor:
        if sorted(axes) != list(range(len(p.shape))):
            raise ValueError(f"permute: {list(axes)} is not a permutation of the dims of {list(p.shape)}")
        return TaichiTensor(p.buf, tuple(p.shape[a] for a in axes), tuple(p.strides[a] for a in axes),
                            p.offset, p.dtype, p.device)

    @staticmethod
    def float_expand(p: TaichiTensor, shape: tuple) -> TaichiTensor:
        shape = tuple(shape)
        lead = len(shape) - len(p.shape)
        if lead < 0 or any(n != m and n != 1 for n, m in zip(p.shape, shape[lead:])):
            raise ValueError(f"expand: shape {list(p.shape)} does not broadcast to {list(shape)}")
        buf = p.buf if math.prod(shape) else None
        _, strides, offset = p.view(shape)
        return TaichiTensor(buf, shape, strides, offset, p.dtype, p.device)

    @staticmethod
    def float_slice(p: TaichiTensor, ranges: Sequence[slice]) -> TaichiTensor:
        return _slice_view(p, ranges)

    @staticmethod
    def float_slice_assign(p: TaichiTensor, ranges: Sequence[slice], values: TaichiTensor) -> TaichiTensor:
        _same_device("slice_assign", (p, values))
        out = _materialize(p)
        _copy_into(_slice_view(out, ranges), values, "slice_assign")
        return out

    @staticmethod
    def float_cat(ps: Sequence[TaichiTensor], dim: int) -> TaichiTensor:
        device = _same_device("cat", ps)
        first = ps[0].shape
        for p in ps:
            if len(p.shape) != len(first) or any(a != b for d, (a, b) in enumerate(zip(p.shape, first)) if d != dim):
                raise ValueError(f"cat: shapes {[list(q.shape) for q in ps]} differ outside dim {dim}")
        dtype = np.result_type(*[p.dtype for p in ps])
        shape = first[:dim] + (sum(p.shape[dim] for p in ps),) + first[dim + 1:]
        out = _alloc(shape, dtype, device)
        at = 0
        for p in ps:
            if p.buf is not None:
                region = TaichiTensor(out.buf, p.shape, out.strides, at * out.strides[dim], dtype, device)
                K.elementwise.run(K.elementwise.COPY, p.shape, _out(region), (p.view(),))
            at += p.shape[dim]
        return out

    # -- indexing ----------------------------------------------------------------
    @staticmethod
    def float_gather(dim: int, p: TaichiTensor, indices: TaichiTensor) -> TaichiTensor:
        """take_along_axis: out[i] = p[i with dim -> indices[i]], other dims broadcasting."""
        _same_device("gather", (p, indices))
        _check_index_rank("gather", p, indices)
        # The output has the index's shape (torch.gather): outside `dim` the
        # index may be smaller than p, and only p's leading part is read.
        for d, (n, m) in enumerate(zip(indices.shape, p.shape)):
            if d != dim and n > m:
                raise IndexError(f"gather: indices of shape {list(indices.shape)} exceed {list(p.shape)} in dim {d}")
        return _gather("gather", dim, p, indices, indices.view(), indices.shape)

    @staticmethod
    def float_scatter(dim: int, p: TaichiTensor, indices: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
        """A copy of p with values added at indices along dim (np.add.at)."""
        _same_device("scatter", (p, indices))
        _check_index_rank("scatter", p, indices)
        for d, (n, m) in enumerate(zip(indices.shape, p.shape)):
            if d != dim and n > m:
                raise IndexError(f"scatter: indices of shape {list(indices.shape)} exceed {list(p.shape)} in dim {d}")
        return _scatter("scatter", dim, p, indices.view(), values, indices.shape)

    @staticmethod
    def float_select(p: TaichiTensor, dim: int, indices: TaichiTensor) -> TaichiTensor:
        _same_device("select", (p, indices))
        shape = p.shape[:dim] + (indices.shape[0],) + p.shape[dim + 1:]
        return _gather("select", dim, p, indices, _select_view(indices, shape, dim), shape)

    @staticmethod
    def float_select_assign(p: TaichiTensor, dim: int, indices: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
        _same_device("select_assign", (p, indices))
        shape = p.shape[:dim] + (indices.shape[0],) + p.shape[dim + 1:]
        return _scatter("select_assign", dim, p, _select_view(indices, shape, dim), values, shape)

    @staticmethod
    def float_mask_where(p: TaichiTensor, mask: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
        device = _same_device("mask_where", (p, mask, values))
        shape = _bshape("mask_where", (p, mask, values))
        if values.dtype != p.dtype:
            values = _materialize(values, p.dtype)
        out = _alloc(shape, p.dtype, device)
        if out.buf is not None:
            K.elementwise.run(K.elementwise.WHERE, shape, _out(out),
                              (p.view(shape), values.view(shape), mask.view(shape)))
        return out

    @staticmethod
    def float_mask_fill(p: TaichiTensor, mask: TaichiTensor, value: Any) -> TaichiTensor:
        s = float(value) if p.dtype in _FLOATS else int(value)
        return _nary("mask_fill", K.elementwise.FILL, (p, mask), p.dtype, s, promote=False)

    # -- arithmetic --------------------------------------------------------------
    float_add = _binop("float_add", "ADD")
    float_sub = _binop("float_sub", "SUB")
    float_mul = _binop("float_mul", "MUL")
    float_div = _binop("float_div", "DIV")
    float_powf = _binop("float_powf", "POW")
    float_add_scalar = _scalar_f("ADD_S")
    float_sub_scalar = _scalar_f("SUB_S")
    float_mul_scalar = _scalar_f("MUL_S")
    float_div_scalar = _scalar_f("DIV_S")
    float_powf_scalar = _scalar_f("POW_S")
    float_neg = _unop("NEG")
    float_abs = _unop("ABS")

    @staticmethod
    def float_clamp(p: TaichiTensor, min: Any = None, max: Any = None) -> TaichiTensor:  # noqa: A002
        if min is None and max is None:
            return p
        lo = -math.inf if min is None else float(min)
        hi = math.inf if max is None else float(max)
        return _unary(p, K.elementwise.CLAMP, None, lo, hi)

    # -- unary math ----------------------------------------------------------------
    float_exp = _unop("EXP")
    float_log = _unop("LOG")
    float_log1p = _unop("LOG1P")
    float_erf = _unop("ERF")
    float_sqrt = _unop("SQRT")
    float_recip = _unop("RECIP")
    float_cos = _unop("COS")
    float_sin = _unop("SIN")
    float_tanh = _unop("TANH")

    # -- comparison ----------------------------------------------------------------
    float_equal = _binop("float_equal", "EQ", BOOL)
    float_greater = _binop("float_greater", "GT", BOOL)
    float_greater_equal = _binop("float_greater_equal", "GE", BOOL)
    float_lower = _binop("float_lower", "LT", BOOL)
    float_lower_equal = _binop("float_lower_equal", "LE", BOOL)
    float_equal_elem = _cmp_f("EQ_S")
    float_greater_elem = _cmp_f("GT_S")
    float_greater_equal_elem = _cmp_f("GE_S")
    float_lower_elem = _cmp_f("LT_S")
    float_lower_equal_elem = _cmp_f("LE_S")

    # -- reductions ----------------------------------------------------------------
    float_sum = _red_all("float_sum", "SUM")
    float_max = _red_all("float_max", "MAX")
    float_min = _red_all("float_min", "MIN")
    float_sum_dim = _red("float_sum_dim", "SUM")
    float_mean_dim = _red("float_mean_dim", "SUM", mean=True)
    float_max_dim = _red("float_max_dim", "MAX")
    float_min_dim = _red("float_min_dim", "MIN")
    float_argmax = _red("float_argmax", "ARGMAX")
    float_argmin = _red("float_argmin", "ARGMIN")

    # -- linear algebra and conversion -------------------------------------------
    float_matmul = staticmethod(_matmul)
    float_into_int = _unop("COPY", I64)

    # -- Int ---------------------------------------------------------------------
    @staticmethod
    def int_from_data(array: np.ndarray, device: TaichiDevice) -> TaichiTensor:
        return Taichi._from_data(array, device, I64)

    @staticmethod
    def int_empty(shape: tuple, device: TaichiDevice) -> TaichiTensor:
        return Taichi.float_empty(shape, device, I64)

    @staticmethod
    def int_full(shape: tuple, value: int, device: TaichiDevice) -> TaichiTensor:
        _start(device)
        return _full(shape, _int_scalar("int_full", value), I64, _running)

    @staticmethod
    def int_clamp(p: TaichiTensor, min: Any = None, max: Any = None) -> TaichiTensor:  # noqa: A002
        if min is None and max is None:
            return p
        info = np.iinfo(np.int64)
        lo = info.min if min is None else int(min)
        hi = info.max if max is None else int(max)
        return _unary(p, K.elementwise.CLAMP, None, lo, hi)

    @staticmethod
    def int_arange(start: int, end: int, step: int, device: TaichiDevice) -> TaichiTensor:
        _start(device)
        out = _alloc((len(range(start, end, step)),), I64, _running)
        if out.buf is not None:
            K.data.arange(out.buf, start, step)
        return out

    int_add = _binop("int_add", "ADD")
    int_sub = _binop("int_sub", "SUB")
    int_mul = _binop("int_mul", "MUL")
    int_div = _binop("int_div", "DIV")
    int_add_scalar = _scalar_i("int_add_scalar", "ADD_S")
    int_sub_scalar = _scalar_i("int_sub_scalar", "SUB_S")
    int_mul_scalar = _scalar_i("int_mul_scalar", "MUL_S")
    int_div_scalar = _scalar_i("int_div_scalar", "DIV_S")
    int_neg = float_neg
    int_abs = float_abs
    int_equal = _binop("int_equal", "EQ", BOOL)
    int_greater = _binop("int_greater", "GT", BOOL)
    int_greater_equal = _binop("int_greater_equal", "GE", BOOL)
    int_lower = _binop("int_lower", "LT", BOOL)
    int_lower_equal = _binop("int_lower_equal", "LE", BOOL)
    int_equal_elem = _cmp_i("int_equal_elem", "EQ_S")
    int_greater_elem = _cmp_i("int_greater_elem", "GT_S")
    int_greater_equal_elem = _cmp_i("int_greater_equal_elem", "GE_S")
    int_lower_elem = _cmp_i("int_lower_elem", "LT_S")
    int_lower_equal_elem = _cmp_i("int_lower_equal_elem", "LE_S")
    int_sum = _red_all("int_sum", "SUM")
    int_max = _red_all("int_max", "MAX")
    int_min = _red_all("int_min", "MIN")
    int_sum_dim = _red("int_sum_dim", "SUM")
    int_max_dim = _red("int_max_dim", "MAX")
    int_min_dim = _red("int_min_dim", "MIN")
    int_argmax = _red("int_argmax", "ARGMAX")
    int_argmin = _red("int_argmin", "ARGMIN")
    int_into_float = _unop("COPY", F32)

    # -- Bool (u8 0/1 on the device) ---------------------------------------------
    @staticmethod
    def bool_from_data(array: np.ndarray, device: TaichiDevice) -> TaichiTensor:
        return Taichi._from_data(np.asarray(array, dtype=np.bool_), device, BOOL)

    @staticmethod
    def bool_empty(shape: tuple, device: TaichiDevice) -> TaichiTensor:
        """All False, as NdArray's."""
        _start(device)
        return _full(shape, 0, BOOL, _running)

    bool_dtype = float_dtype
    bool_equal = _binop("bool_equal", "EQ", BOOL)
    bool_not = _unop("NOT", BOOL)
    bool_and = _binop("bool_and", "AND", BOOL)
    bool_or = _binop("bool_or", "OR", BOOL)
    bool_into_int = _unop("COPY", I64)
    bool_into_float = _unop("COPY", F32)


Taichi.InnerBackend = Taichi
