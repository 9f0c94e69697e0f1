"""The fast launcher and allocator: the one module that touches Taichi's
internals (pinned: taichi==1.7.4; `taichi.lang.*`, `taichi._lib`).

Taichi's public paths are built for a few large launches: `ti.ndarray(...)`
captures a Python traceback and zero-fills (~70 us), and calling a kernel
re-derives its template key and dispatches every argument in Python (~80 us).
burnbook launches many small kernels, so with `SETTINGS.launch == "fast"`:

- `buffer(dtype, n)` is a flat 1-D `ti.ndarray` allocated without zero-fill
  or traceback, from a pool of freed buffers of the same dtype and size when
  one is there (a caching allocator: re-touching fresh pages cost a
  16M-element op as much as the op itself), capped by `SETTINGS.pool_mb`.
- `Launcher` wraps a `@ti.kernel`. The first call for a new signature (ndarray
  dtypes and template values) goes through Taichi's own call, which compiles
  the kernel or loads it from the offline cache; later calls set the arguments
  on a launch context and launch the cached compiled kernel directly (~15 us,
  most of it the CPU thread pool's dispatch).
- `host_array` sees a buffer's memory as a NumPy array (CPU arch), zero-copy.

With `SETTINGS.launch == "public"` (`BURNBOOK_TAICHI_LAUNCH=public`) each of
them takes Taichi's public API instead: `ti.ndarray`, the kernel's own call,
`to_numpy`/`from_numpy`. The results are the same; a Taichi upgrade that
breaks the fast path still has this tested one.

The device code in `burnbook.kernels` never imports this module: the runtime
hands it `Launcher` and `buffer` when it starts (`burnbook.kernels.context`).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import taichi as ti
from taichi._lib import core as _ti_core
from taichi.lang import impl
from taichi.lang._ndarray import Ndarray, ScalarNdarray
from taichi.lang.enums import Layout
from taichi.lang.kernel_impl import template
from taichi.lang.matrix import VectorType
from taichi.lang.util import to_numpy_type
from taichi.types import ndarray_type, primitive_types

from .settings import SETTINGS

# Buffers index with i32 on every arch, so one buffer holds < 2**31 elements.
MAX_ELEMENTS = 2**31 - 1

_stats = {"instances": 0, "launches": 0}
_pool: dict = {}  # (id of dtype, n) -> freed raw ndarrays of the current program, least recently freed first
_pool_state = {"bytes": 0, "prog": None}


def stats() -> dict:
    """Counters: kernel `instances` compiled or loaded from the offline cache by
    this process (one per kernel and signature), and `launches`."""
    return dict(_stats)


# -- the runtime ----------------------------------------------------------------
def program() -> Any:
    """Taichi's running program, or None before `ti.init`."""
    return impl.get_runtime().prog


def running_arch() -> str:
    """The name of the arch Taichi's runtime runs on (x64, arm64, cuda, vulkan, metal)."""
    return impl.current_cfg().arch.name


def config() -> dict:
    """The running program's arch, CPU thread count, offline-cache flag and
    whether it scalarises vectors."""
    cfg = impl.current_cfg()
    return {"arch": cfg.arch.name, "cpu_max_num_threads": cfg.cpu_max_num_threads,
            "offline_cache": cfg.offline_cache, "real_matrix_scalarize": cfg.real_matrix_scalarize}


def offline_cache_folder() -> str:
    """The folder of the running program's offline kernel cache."""
    return str(impl.current_cfg().offline_cache_file_path)


def compiled_with(kind: str) -> bool:
    """Whether this Taichi build includes the `kind` arch (cuda, metal, vulkan)."""
    probe = {"cuda": _ti_core.with_cuda, "metal": _ti_core.with_metal, "vulkan": _ti_core.with_vulkan}[kind]
    try:
        return bool(probe())
    except Exception:  # noqa: BLE001 - a failing probe means "not available"
        return False


def _check_program(prog: Any) -> None:
    if prog is not program():
        raise RuntimeError("Taichi's runtime was reset or re-initialised after burnbook started it; "
                           "burnbook's tensors and kernels died with it: restart the Python process")


# -- buffers --------------------------------------------------------------------
def _pool_of(prog: Any) -> dict:
    """The free pool of `prog`; emptied when the program changed (ti.reset/init)."""
    if _pool_state["prog"] is not prog:
        _pool.clear()
        _pool_state.update(bytes=0, prog=prog)
    return _pool


class Buffer(ScalarNdarray):
    """A flat device array of `n` elements of Taichi dtype `dtype`, not zeroed.

    A real `ti.ndarray`, so it can also be passed to user kernels. When the last
    primitive using it goes, its memory returns to the pool (or is freed).
    """

    def __init__(self, dtype: Any, n: int) -> None:
        Ndarray.__init__(self)
        self.dtype = dtype
        self.element_type = dtype
        self.shape = (n,)
        prog = self._prog = program()
        free = _pool_of(prog).get((id(dtype), n))
        if free:
            self.arr = free.pop()
            _pool_state["bytes"] -= n * self.arr.element_size()
        else:
            self.arr = prog.create_ndarray(dtype, (n,), Layout.NULL, False, _ti_core.DebugInfo())

    def __del__(self) -> None:
        try:
            runtime = impl.get_runtime() if impl is not None else None
        except TypeError:  # interpreter shutdown: Taichi's module globals are already gone
            return
        prog = runtime.prog if runtime is not None else None
        if prog is None or prog is not getattr(self, "_prog", None):
            return  # its program is gone, and its memory with it
        nbytes = self.shape[0] * self.arr.element_size()
        budget = SETTINGS.pool_mb * 2**20
        if nbytes > budget:
            prog.delete_ndarray(self.arr)
            return
        pool = _pool_of(prog)
        # Least recently freed sizes go first: a size still in use comes back
        # every step, while one from earlier work (a large tensor of another
        # model) would otherwise hold the budget and leave every later buffer
        # to a fresh allocation.
        while pool and _pool_state["bytes"] + nbytes > budget:
            old = next(iter(pool))
            if pool[old]:
                _pool_state["bytes"] -= old[1] * pool[old][0].element_size()
                prog.delete_ndarray(pool[old].pop(0))
            if not pool[old]:
                del pool[old]
        key = (id(self.dtype), self.shape[0])
        free = pool.pop(key, [])
        free.append(self.arr)
        pool[key] = free  # now the most recently freed size
        _pool_state["bytes"] += nbytes

    def __repr__(self) -> str:
        return f"Buffer({self.dtype}, {self.shape[0]})"


def buffer(dtype: Any, n: int) -> Any:
    """A flat device array of `n` elements of Taichi dtype `dtype` (a `ti.ndarray`)."""
    if n > MAX_ELEMENTS:
        raise ValueError(f"Taichi backend: {n} elements exceed the limit of {MAX_ELEMENTS} per tensor")
    if SETTINGS.launch == "public":
        return ti.ndarray(dtype, (n,))
    return Buffer(dtype, n)


def numpy_dtype(buf: Any) -> np.dtype:
    """The NumPy dtype of `buf`'s elements (u8 for burnbook's bools)."""
    return np.dtype(to_numpy_type(buf.dtype))


def host_array(buf: Any, np_dtype: np.dtype) -> np.ndarray:
    """`buf`'s elements as a NumPy array. CPU arch only: there device memory is
    host memory, and the fast path returns a view of it without copying (the
    caller keeps `buf` alive while using it); the public path copies."""
    if SETTINGS.launch == "public":
        return buf.to_numpy().view(np_dtype)
    n = buf.shape[0] * np.dtype(np_dtype).itemsize
    ptr = program().get_ndarray_data_ptr_as_int(buf.arr)
    return np.frombuffer((ctypes.c_char * n).from_address(ptr), dtype=np_dtype)


def host_view(buf: Any, np_dtype: np.dtype, shape: tuple, strides: tuple, offset: int = 0,
              write: bool = False) -> np.ndarray:
    """The strided view (`strides` and `offset` in elements) of `buf`'s
    elements as a NumPy array of `shape`, on `host_array`'s terms; negative
    strides step back into the same buffer. `write` only where `host_writable()`."""
    base = host_array(buf, np_dtype)
    return np.lib.stride_tricks.as_strided(base[offset:], shape=shape, strides=[s * base.itemsize for s in strides],
                                           writeable=write)


def host_writable() -> bool:
    """Whether `host_array` gives views that NumPy may write into: the fast
    path on a CPU arch, where device memory is host memory and kernels have
    finished when their launch returns."""
    return SETTINGS.launch == "fast" and not SETTINGS.gpu


def write_host(buf: Any, values: np.ndarray) -> None:
    """Store the host array `values` (as many elements as `buf`) into `buf`."""
    buf.from_numpy(np.ascontiguousarray(values).reshape(-1))


# -- launches -------------------------------------------------------------------
def _arg_kind(ann: Any) -> str:
    if isinstance(ann, template):
        return "t"
    if isinstance(ann, ndarray_type.NdarrayType):
        return "n"
    if id(ann) in primitive_types.integer_type_ids:
        return "i"
    if id(ann) in primitive_types.real_type_ids:
        return "f"
    raise TypeError(f"Launcher: unsupported kernel argument annotation {ann!r}")


class Launcher:
    """Calls a `@ti.kernel` with the per-argument Python work done once per signature."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        prim = kernel._primal
        kinds = [_arg_kind(a.annotation) for a in prim.arguments]
        self._nd = tuple(i for i, k in enumerate(kinds) if k == "n")
        self._tmpl = tuple(i for i, k in enumerate(kinds) if k == "t")
        setters, slot = [], 0
        for i, k in enumerate(kinds):
            if k != "t":
                setters.append((i, slot, k))
                slot += 1
        self._setters = tuple(setters)
        self._has_ret = prim.return_type is not None
        self._cache: dict = {}  # signature key -> (kernel, compiled, program); None after a public call

    def _key(self, args: tuple) -> tuple:
        # Keys hold ids: dtypes and template values (Taichi dtypes, bools, enum
        # members) are singletons, and hashing a Taichi DataType is a slow call
        # into C++. External (NumPy) arrays must be 1-D: their dtype alone keys them.
        return tuple([id(args[i].dtype) for i in self._nd] + [id(args[i]) for i in self._tmpl])

    def _compiled(self, args: tuple) -> tuple:
        """(kernel, compiled kernel, program) of the instance `args` select."""
        prim = self.kernel._primal
        t_kernel = prim.compiled_kernels[prim.ensure_compiled(*args)]
        prog = program()
        return t_kernel, prog.compile_kernel(prog.config(), prog.get_device_caps(), t_kernel), prog

    def __call__(self, *args: Any) -> Any:
        _stats["launches"] += 1
        key = self._key(args)
        entry = self._cache.get(key)
        if entry is None:
            if key not in self._cache:
                _stats["instances"] += 1
            if SETTINGS.launch == "public":
                self._cache[key] = None
                return self.kernel(*args)
            # Taichi's own call: compiles (or loads from the offline cache) and launches.
            ret = self.kernel(*args)
            self._cache[key] = self._compiled(args)
            return ret
        if SETTINGS.launch == "public":
            return self.kernel(*args)
        t_kernel, compiled, prog = entry
        _check_program(prog)
        ctx = t_kernel.make_launch_context()
        for i, slot, kind in self._setters:
            v = args[i]
            if kind == "n":
                if type(v) is np.ndarray:
                    ctx.set_arg_external_array_with_shape((slot,), v.ctypes.data, v.nbytes, v.shape, 0)
                else:
                    ctx.set_arg_ndarray((slot,), v.arr)
            elif kind == "i":
                ctx.set_arg_int((slot,), v)
            else:
                ctx.set_arg_float((slot,), v)
        prog.launch_kernel(compiled, ctx)
        if self._has_ret:
            prog.synchronize()
            return ctx.get_struct_ret_int((0,))
        return None


class LaneLauncher(Launcher):
    """Launches a kernel whose vector-typed ndarray parameters hold vectors of
    `lanes` elements with flat buffers of the element dtype: index q of such a
    parameter is elements [q * lanes, (q + 1) * lanes) of the buffer. The
    kernel is compiled against vector-typed stand-ins; a flat buffer then
    goes in its place, since a launch passes only the data pointer (and a
    shape the kernel never reads). Fast launch path only."""

    def __init__(self, kernel: Any, lanes: int) -> None:
        super().__init__(kernel)
        self.lanes = lanes
        arguments = kernel._primal.arguments
        self._vectors = tuple(i for i in self._nd if isinstance(arguments[i].annotation.dtype, VectorType))

    def __call__(self, *args: Any) -> Any:
        key = self._key(args)
        if self._cache.get(key) is None:
            _stats["instances"] += 1
            stand_ins = list(args)
            for i in self._vectors:  # the scalar ndarrays (a reduction's partials) stay as they are
                stand_ins[i] = ti.ndarray(ti.types.vector(self.lanes, args[i].dtype), (1,))
            self._cache[key] = self._compiled(tuple(stand_ins))
        return super().__call__(*args)


__all__ = ["Buffer", "LaneLauncher", "Launcher", "MAX_ELEMENTS", "buffer", "compiled_with", "config", "host_array",
           "host_view", "host_writable", "numpy_dtype", "offline_cache_folder", "program", "running_arch", "stats",
           "write_host"]
