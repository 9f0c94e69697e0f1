"""Taichi-specific tests: devices and the one-runtime rule, kernel caching, and
every op of the protocol against the NdArray reference on random shapes,
broadcasting, non-contiguous views (permute, swap_dims, negative-step
slices, expand), zero-size dims and NaN/inf.

Tests that start Taichi on another arch, or probe the environment, run in a
subprocess, because a process runs one Taichi runtime for good.
"""

from __future__ import annotations

import glob
import math
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import taichi as ti

import burnbook.backend.taichi as tb
from burnbook.backend.base import ALL_OPS, BOOL_OPS, FLOAT_OPS, INT_OPS, MODULE_OPS
from burnbook.backend.module_ops import ConvOptions, ConvTransposeOptions
from burnbook.backend.ndarray import NdArray as N
from burnbook.backend.taichi import Taichi as T
from burnbook.backend.taichi import TaichiDevice, TaichiTensor, kernel_stats
from burnbook.tensor.distribution import Distribution

DEV = TaichiDevice.cpu()
RNG = np.random.default_rng(1234)


def run_py(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python process (from a file: Taichi reads kernel source)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snippet.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        return subprocess.run([sys.executable, path], capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})), timeout=120)


def _gpu_kind() -> str | None:
    """A GPU arch Taichi can start here, probed in a subprocess (None on CI)."""
    code = """
        from burnbook.backend.taichi import TaichiDevice
        print("KIND=" + TaichiDevice.best_available().kind)
    """
    out = run_py(code).stdout
    kind = out.split("KIND=")[-1].strip() if "KIND=" in out else "cpu"
    return None if kind == "cpu" else kind



# -- helpers: the same data on both backends -------------------------------------------
class P:
    """One tensor on both backends: `n` (NdArray) and `t` (Taichi)."""

    def __init__(self, n, t):
        self.n, self.t = n, t


def _kind(arr: np.ndarray) -> str:
    return "bool" if arr.dtype == np.bool_ else "int" if arr.dtype.kind in "iu" else "float"


def _from(backend, arr: np.ndarray):
    device = N.default_device() if backend is N else DEV
    return getattr(backend, f"{_kind(arr)}_from_data")(arr, device)


def pair(arr: np.ndarray, layout: str = "contig") -> P:
    """`arr` on both backends, laid out as asked: contig; permute / swap (a
    transposed buffer seen through permute / swap_dims); slice (every other
    row of a taller buffer, walked backwards); expand (arr[:1] broadcast along
    dim 0, so the values differ from arr)."""
    k = _kind(arr)
    prims = []
    for B in (N, T):
        if layout == "contig" or arr.ndim == 0:
            p = _from(B, arr)
        elif layout == "permute":
            axes = tuple(reversed(range(arr.ndim)))
            p = getattr(B, f"{k}_permute")(_from(B, np.ascontiguousarray(arr.transpose(axes))), axes)
        elif layout == "swap":
            base = np.ascontiguousarray(np.swapaxes(arr, 0, -1))
            p = getattr(B, f"{k}_swap_dims")(_from(B, base), 0, arr.ndim - 1)
        elif layout == "slice":
            tall = np.repeat(arr, 2, axis=0)
            if arr.shape[0]:
                tall[::-2] = arr
                tall[-2::-2] = arr[::-1]  # other rows: wrong values if the view were off
            p = getattr(B, f"{k}_slice")(_from(B, tall), (slice(None, None, -2),))
        elif layout == "expand":
            p = getattr(B, f"{k}_expand")(_from(B, np.ascontiguousarray(arr[:1])), arr.shape)
        else:
            raise ValueError(layout)
        prims.append(p)
    return P(*prims)


def data(p) -> np.ndarray:
    return T.float_into_data(p) if isinstance(p, TaichiTensor) else np.array(p)


def same(got, ref, what: str = "", rtol: float = 2e-5, atol: float = 1e-6) -> None:
    got, ref = data(got), data(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype} != {ref.dtype}"
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, ref, err_msg=what)


def both(op: str, *args):
    """Run `op` on both backends (P arguments split per backend, lists of P too)."""
    def pick(a, side):
        if isinstance(a, P):
            return getattr(a, side)
        if isinstance(a, list) and a and isinstance(a[0], P):
            return [getattr(x, side) for x in a]
        return a
    return getattr(N, op)(*[pick(a, "n") for a in args]), getattr(T, op)(*[pick(a, "t") for a in args])


def check(op: str, *args, rtol: float = 2e-5, atol: float = 1e-6) -> None:
    ref, got = both(op, *args)
    if isinstance(ref, tuple):  # shape
        assert ref == got, f"{op}: {got} != {ref}"
        return
    same(got, ref, f"{op}{tuple(a if not isinstance(a, P) else '<t>' for a in args)}", rtol, atol)


def rand_float(shape, special: bool = True, dtype=np.float32) -> np.ndarray:
    a = RNG.normal(0, 2, size=shape).astype(dtype)
    if special and a.size >= 6:
        a.reshape(-1)[RNG.choice(a.size, 3, replace=False)] = [np.nan, np.inf, -np.inf]
    return a


def make(kind: str, shape, special: bool = True) -> np.ndarray:
    if kind == "float":
        return rand_float(shape, special)
    if kind == "int":
        return RNG.integers(-20, 20, size=shape).astype(np.int64)
    return RNG.random(shape) < 0.5


LAYOUTS = ("contig", "permute", "swap", "slice", "expand")
SHAPES = [(5,), (2, 3), (4, 1, 3), (2, 3, 2, 2), (3, 2, 1, 2, 2, 2), (0, 3), (3, 0, 2)]


def cases(kind: str, special: bool = True):
    """(shape, layout, P) over the shapes and layouts."""
    for shape in SHAPES:
        for layout in LAYOUTS:
            yield shape, layout, pair(make(kind, shape, special), layout)


def squeeze_some(shape: tuple) -> tuple:
    """The shape with a random subset of dims set to 1 (to broadcast against it)."""
    return tuple(1 if RNG.random() < 0.4 else s for s in shape)

def t(arr) -> TaichiTensor:
    """A Taichi primitive; Python float lists become f32."""
    return _from(T, np.asarray(arr, dtype=np.float32) if isinstance(arr, list) else np.asarray(arr))


# -- devices and the one-runtime rule ---------------------------------------------------
def test_device_constructors_repr_and_equality() -> None:
    cpu = TaichiDevice.cpu()
    assert cpu == TaichiDevice.cpu() and hash(cpu) == hash(TaichiDevice.cpu())
    assert repr(cpu) in ("Cpu(x64)", "Cpu(arm64)") or repr(cpu).startswith("Cpu(")
    assert repr(TaichiDevice.cuda()) == "Cuda(0)" and repr(TaichiDevice.cuda(1)) == "Cuda(1)"
    assert repr(TaichiDevice.vulkan()) == "Vulkan" and repr(TaichiDevice.metal()) == "Metal"
    assert TaichiDevice.cuda(0) != TaichiDevice.cuda(1) and TaichiDevice.vulkan() != cpu
    assert len({cpu, TaichiDevice.cpu(), TaichiDevice.cuda(), TaichiDevice.cuda(0)}) == 2
    with pytest.raises(ValueError, match="unknown kind"):
        TaichiDevice("tpu")
    assert T.name() == "taichi" and T.Device is TaichiDevice and T.InnerBackend is T


def test_runtime_starts_lazily_and_quietly() -> None:
    out = run_py("""
        import sys
        import numpy as np
        from burnbook.backend.taichi import Taichi, TaichiDevice, running_device
        from taichi.lang import impl
        d = Taichi.default_device()
        assert running_device() is None and impl.get_runtime().prog is None, "runtime started before a tensor"
        p = Taichi.float_from_data(np.arange(3, dtype=np.float32), d)
        print("RUNNING", running_device(), impl.current_cfg().offline_cache, Taichi.float_into_data(p))
    """)
    assert out.returncode == 0, out.stderr
    assert "RUNNING Cpu(" in out.stdout and "True [0. 1. 2.]" in out.stdout
    assert "[Taichi]" not in out.stdout + out.stderr  # neither the version banner nor "Starting on arch"


def test_another_arch_after_start_raises() -> None:
    p = t([1.0, 2.0])
    for other in (TaichiDevice.cuda(), TaichiDevice.vulkan(), TaichiDevice.metal()):
        with pytest.raises(RuntimeError, match=r"already runs Taichi on Cpu\(.*new Python process"):
            T.float_from_data(np.ones(2, np.float32), other)
        with pytest.raises(RuntimeError, match="already runs Taichi"):
            T.float_to_device(p, other)
    same(T.float_to_device(p, TaichiDevice.cpu()), np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError, match="expected a TaichiDevice"):
        T.float_from_data(np.ones(2, np.float32), "cpu")


def test_default_device_from_environment() -> None:
    code = "from burnbook.backend.taichi import Taichi; print('DEV', Taichi.default_device())"
    assert "DEV Cpu(" in run_py(code, {"BURNBOOK_TAICHI_ARCH": "cpu"}).stdout
    assert "DEV Cuda(1)" in run_py(code, {"BURNBOOK_TAICHI_ARCH": "cuda:1"}).stdout
    bad = run_py(code, {"BURNBOOK_TAICHI_ARCH": "tpu"})
    assert bad.returncode != 0 and "BURNBOOK_TAICHI_ARCH" in bad.stderr


def test_unavailable_arch_is_a_clear_error_and_leaves_cpu_usable() -> None:
    out = run_py("""
        import numpy as np
        from burnbook.backend.taichi import Taichi, TaichiDevice
        from taichi._lib import core
        if core.with_cuda():
            print("HAS_CUDA")
        else:
            try:
                Taichi.float_from_data(np.ones(2, np.float32), TaichiDevice.cuda())
            except RuntimeError as e:
                print("ERR", e)
            p = Taichi.float_from_data(np.ones(2, np.float32), TaichiDevice.cpu())
            print("OK", Taichi.float_into_data(Taichi.float_add(p, p)))
    """)
    assert out.returncode == 0, out.stderr
    if "HAS_CUDA" not in out.stdout:
        assert "ERR Taichi cannot start on Cuda(0)" in out.stdout and "OK [2. 2.]" in out.stdout


def test_runtime_started_by_the_user_is_adopted() -> None:
    out = run_py("""
        import numpy as np, taichi as ti
        ti.init(arch=ti.cpu)
        from burnbook.backend.taichi import Taichi, TaichiDevice

        @ti.kernel
        def twice(x: ti.types.ndarray(), n: ti.i32):
            for i in range(n):
                x[i] = 2 * x[i]

        p = Taichi.float_from_data(np.arange(3, dtype=np.float32), Taichi.default_device())
        twice(p.buf, 3)  # a primitive's buffer is a real ti.ndarray
        print("ADOPTED", TaichiDevice.best_available(), Taichi.float_into_data(p))
    """)
    assert out.returncode == 0, out.stderr
    assert "ADOPTED Cpu(" in out.stdout and "[0. 2. 4.]" in out.stdout


def test_best_available_without_gpu_is_cpu() -> None:
    out = run_py("from burnbook.backend.taichi import TaichiDevice as D; print('BEST', D.best_available())")
    assert out.returncode == 0, out.stderr
    assert "BEST " in out.stdout and "Starting on arch" not in out.stdout
    if sys.platform.startswith("linux") and not glob.glob("/dev/dri/renderD*"):
        # No GPU: a software Vulkan driver (lavapipe), if installed, is not "best".
        assert "BEST Cpu(" in out.stdout, out.stdout


# -- bad input ------------------------------------------------------------------------
def test_different_devices_raise_value_error_naming_both() -> None:
    a = t([1.0, 2.0])
    b = TaichiTensor(a.buf, a.shape, a.strides, a.offset, a.dtype, TaichiDevice.cuda())
    for op in ("float_add", "float_equal", "float_matmul"):
        x, y = (T.float_reshape(a, (1, 2)), T.float_reshape(b, (2, 1))) if op == "float_matmul" else (a, b)
        with pytest.raises(ValueError, match=r"Cpu\(.*\).*Cuda\(0\)"):
            getattr(T, op)(x, y)
    with pytest.raises(ValueError, match="Cuda"):
        T.float_cat([a, b], 0)


def test_shapes_that_do_not_broadcast_name_both() -> None:
    a, b = t(np.ones((2, 3), np.float32)), t(np.ones((4, 3), np.float32))
    for op in ("float_add", "float_lower", "float_powf"):
        with pytest.raises(ValueError, match=r"\[2, 3\].*\[4, 3\]"):
            getattr(T, op)(a, b)
    with pytest.raises(ValueError, match=r"\[2, 3\].*\[4, 3\]"):
        T.float_matmul(a, b)
    with pytest.raises(ValueError, match="reshape"):
        T.float_reshape(a, (4,))


def test_out_of_range_indices_raise_index_error() -> None:
    p = t(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(IndexError, match="out of range for dim 1 of size 3"):
        T.float_select(p, 1, t(np.array([0, 3])))
    with pytest.raises(IndexError):
        T.float_select_assign(p, 0, t(np.array([-3])), t(np.ones((1, 3), np.float32)))
    same(T.float_select(p, 1, t(np.array([-1, 0]))), np.array([[2, 0], [5, 3]], np.float32))


def test_int_division_truncates_toward_zero() -> None:
    a = t(np.array([7, -7, 7, -7, 5, np.iinfo(np.int64).min], np.int64))
    b = t(np.array([2, 2, -2, -2, 0, -1], np.int64))
    same(T.int_div(a, b), np.array([3, -3, -3, 3, 0, np.iinfo(np.int64).min]))
    same(T.int_div_scalar(a, -2), np.array([-3, 3, -3, 3, -2, 2**62]))
    with pytest.raises(TypeError, match="integer scalar"):
        T.int_mul_scalar(a, 0.5)


# -- dtypes, views, kernels ---------------------------------------------------------------
def test_dtypes_on_the_device() -> None:
    x = t(np.array([1.0, 2.5], np.float32))
    assert T.float_dtype(x) == np.float32
    for dt in (np.float16, np.float64):
        c = T.float_cast(x, dt)
        assert T.float_dtype(c) == dt and T.float_into_data(c).dtype == dt
        assert T.float_dtype(T.float_exp(c)) == dt
    assert T.int_dtype(t(np.array([1]))) == np.int64
    m = T.float_greater_elem(x, 2.0)
    assert T.bool_dtype(m) == np.bool_ and T.bool_into_data(m).dtype == np.bool_
    assert m.buf.dtype == ti.u8  # stored as u8 0/1
    same(T.float_sum(T.float_cast(x, np.float16)), np.array([3.5], np.float16))


def test_layout_ops_are_views_sharing_the_buffer() -> None:
    x = t(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    before = kernel_stats()["launches"]
    views = [T.float_permute(x, (2, 0, 1)), T.float_swap_dims(x, 0, 2), T.float_reshape(x, (6, 4)),
             T.float_slice(x, (slice(1, None), slice(None, None, -2))),
             T.float_expand(T.float_slice(x, (slice(0, 1),)), (5, 3, 4))]
    assert all(v.buf is x.buf for v in views)
    assert kernel_stats()["launches"] == before
    assert not views[0].contiguous and T.float_reshape(views[0], (24,)).buf is not x.buf  # copies then


def test_one_launch_per_op_and_no_new_kernels_for_new_shapes() -> None:
    a = t(rand_float((3, 4)))
    # warm up (compile or load) each op: every op is a kernel instance of its own
    T.float_add(a, a), T.float_exp(a), T.float_sum_dim(a, 1), T.float_mul_scalar(a, 3.0)
    before = kernel_stats()
    for shape in ((5,), (2, 3, 4), (2, 1, 3, 1, 2), (7, 2)):
        x = pair(rand_float(shape), "permute").t
        y = pair(rand_float(squeeze_some(shape)), "slice").t
        T.float_add(x, y), T.float_exp(x), T.float_sum_dim(x, 0), T.float_mul_scalar(y, 3.0)
    after = kernel_stats()
    assert after["instances"] == before["instances"], "a new shape, rank or layout compiled a kernel"
    n0 = kernel_stats()["launches"]
    T.float_add(x, y)  # layout seen before: one kernel launch, no copies, no meta upload
    assert kernel_stats()["launches"] == n0 + 1


def test_zero_size_tensors_launch_nothing() -> None:
    z = t(np.zeros((0, 3), np.float32))
    n0 = kernel_stats()["launches"]
    for r in (T.float_add(z, z), T.float_exp(z), T.float_sum_dim(z, 0), T.float_permute(z, (1, 0)),
              T.float_matmul(T.float_permute(z, (1, 0)), z)):
        assert r.buf is None or math.prod(r.shape)
    same(T.float_sum_dim(z, 0), np.zeros((1, 3), np.float32))
    assert T.float_into_data(z).shape == (0, 3)


def test_matmul_kernel_selection_and_the_taichi_kernel() -> None:
    t([0.0])
    assert tb.SETTINGS.matmul == "blas"  # CPU arch: NumPy BLAS on the device buffers (see kernels/matmul.py)
    with tb.SETTINGS.override(matmul="kernel"):  # the kernel GPU archs run
        for ls, rs in (((5, 7), (7, 9)), ((2, 1, 3, 4), (1, 3, 4, 5)), ((1, 1), (1, 1))):
            check("float_matmul", pair(rand_float(ls, False), "permute"), pair(rand_float(rs, False), "slice"),
                  rtol=1e-4, atol=1e-5)
        check("float_matmul", pair(rand_float((3, 4), False).astype(np.float64)),
              pair(rand_float((4, 2), False).astype(np.float64)), rtol=1e-12)


@pytest.mark.parametrize("ls, rs", [((6, 1, 5, 7), (1, 1, 7, 9)), ((1, 6, 5, 7), (6, 1, 7, 9)),
                                    ((9, 33), (33, 17)), ((2, 9, 33), (1, 33, 17)), ((1, 1, 4), (1, 4, 3))])
def test_a_product_split_over_two_threads_equals_the_whole(monkeypatch, ls, rs) -> None:
    """With BLAS on 2 threads, a product from `SPLIT_GEMM` on runs as two
    halves (batch, else rows) on two Python threads: the same values as one
    call, broadcast batch dims included; with BLAS on one thread it stays whole."""
    from burnbook._blas import openblas_threads
    from burnbook.backend.taichi.ops import blas as mm

    found = openblas_threads()
    if found is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS: no thread count to read")
    a, b = rand_float(ls, False), rand_float(rs, False)
    want = np.matmul(a, b)
    calls = []
    halves = mm.both
    monkeypatch.setattr(mm, "SPLIT_GEMM", 0)
    monkeypatch.setattr(mm, "both", lambda *args: calls.append(1) or halves(*args))
    before = int(found[0]())
    try:
        found[1](2)
        got = T.float_into_data(T.float_matmul(t(a), t(b)))
        split = len(calls)
        found[1](1)
        whole = T.float_into_data(T.float_matmul(t(a), t(b)))
    finally:
        found[1](before)
    rows = want.shape[-2]
    assert split == (0 if rows < 2 and math.prod(want.shape[:-2]) < 2 else 1) and len(calls) == split
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(whole, got, rtol=1e-6, atol=1e-7)


def test_buffer_pool_reuses_freed_buffers() -> None:
    a = t(np.ones(1000, np.float32))
    T.float_add(a, a)  # the compiling call: Taichi keeps its arguments, which would hold b
    b = T.float_add(a, a)
    arr = b.buf.arr
    del b
    assert T.float_add(a, a).buf.arr is arr


def test_a_full_pool_gives_way_to_the_sizes_freed_last() -> None:
    """Buffers freed long ago are dropped to keep the ones a loop frees and
    takes back every step: earlier large tensors do not hold the budget."""
    from burnbook.backend.taichi import launcher

    t([0.0])
    with tb.SETTINGS.override(pool_mb=1.0):  # room for two 512 KiB buffers
        first, second = (t(np.full(2**17, k, np.float32)) for k in range(2))  # 512 KiB each
        old_arrs = [first.buf.arr, second.buf.arr]
        del first
        del second  # the pool is now full of these, `first`'s freed first
        a = t(np.ones(1000, np.float32))
        T.float_add(a, a)  # compiled (see test_buffer_pool_reuses_freed_buffers)
        b = T.float_add(a, a)
        arr = b.buf.arr
        del b
        assert T.float_add(a, a).buf.arr is arr  # pooled, though old buffers filled the budget
        assert launcher._pool_state["bytes"] <= 2**20
        pooled = [x for free in launcher._pool.values() for x in free]
        assert not any(x is old_arrs[0] for x in pooled)  # the least recently freed went
        assert any(x is old_arrs[1] for x in pooled)  # and only as much as needed


# -- GPU (skipped where Taichi finds no CUDA, Vulkan or Metal) -------------------------------
@pytest.fixture(scope="module")
def gpu_kind() -> str:
    kind = _gpu_kind()
    if kind is None:
        pytest.skip("no CUDA, Vulkan or Metal device for Taichi here")
    return kind


@pytest.mark.gpu
def test_gpu_ops_match_numpy(gpu_kind: str) -> None:
    out = run_py("""
        import numpy as np
        from burnbook.backend.taichi import Taichi as T, TaichiDevice
        d = TaichiDevice.best_available()
        rng = np.random.default_rng(0)
        a = rng.normal(size=(64, 33)).astype(np.float32); b = rng.normal(size=(33, 17)).astype(np.float32)
        pa, pb = T.float_from_data(a, d), T.float_from_data(b, d)
        checks = {
            "add": (T.float_add(pa, T.float_slice(pa, (slice(0, 1),))), a + a[:1]),
            "exp_t": (T.float_exp(T.float_permute(pa, (1, 0))), np.exp(a.T)),
            "sum_dim": (T.float_sum_dim(pa, 0), a.sum(0, keepdims=True)),
            "sum": (T.float_sum(pa), a.sum().reshape(1)),
            "argmax": (T.float_argmax(pa, 1), a.argmax(1)[:, None]),
            "matmul": (T.float_matmul(pa, pb), a @ b),
            "gather": (T.float_select(pa, 1, T.int_from_data(np.array([3, 0, -1]), d)), a[:, [3, 0, -1]]),
        }
        for name, (got, ref) in checks.items():
            np.testing.assert_allclose(T.float_into_data(got), ref, rtol=1e-4, atol=1e-4, err_msg=name)
        print("GPU_OK", d)
    """, {"BURNBOOK_TAICHI_ARCH": "best"})
    assert out.returncode == 0, out.stderr
    assert "GPU_OK" in out.stdout and "Cpu" not in out.stdout


# -- one case per op of the protocol ---------------------------------------------------------
def k_of(op: str) -> str:
    return op.split("_", 1)[0]


def case_binary(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        b_arr = make(kind, squeeze_some(shape))
        if op == "int_div":
            b_arr[b_arr == 3] = 0  # division by zero gives 0, as NumPy
        if op == "float_powf":
            b_arr = np.round(b_arr)  # negative bases need integral exponents
        check(op, a, pair(b_arr))
        check(op, pair(b_arr), a)


def case_scalar(op: str) -> None:
    kind = k_of(op)
    scalars = [2.0, -1.5, 0.0, 0.5, 3.0, np.inf] if kind == "float" else [3, -4, 0, 1, -1]
    if op.endswith("_elem") and kind == "float":
        scalars += [np.nan]
    if op.endswith("_elem") and kind == "int":
        scalars += [2.5, -3.5, np.nan, np.inf, -np.inf]
    for shape, layout, a in cases(kind):
        for s in scalars:
            check(op, a, s)


def case_unary(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        check(op, a)
    if op == "float_erf":  # the f32 fit and the f64 series/continued fraction
        x = np.linspace(-7, 7, 2001)
        check(op, pair(x.astype(np.float32)), rtol=1e-6, atol=1e-7)
        check(op, pair(x), rtol=1e-14, atol=1e-15)
    if op in ("float_log1p", "float_tanh", "float_exp", "float_sqrt", "float_log"):
        x = np.array([1e-30, 1e-10, 1e-3, 0.5, 1, 30, 100, 1e30, 0, -0.0, -1, -2], np.float64)
        check(op, pair(x), rtol=1e-14, atol=0)
        check(op, pair(x.astype(np.float32)), rtol=1e-6, atol=0)


def case_clamp(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for lo, hi in ((-1, 2), (None, 0), (0, None), (None, None), (3, -3)):
            check(op, a, lo, hi)


def case_reduce_all(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind, special=False):
        if math.prod(shape) == 0 and not op.endswith("sum"):
            with pytest.raises(ValueError):
                getattr(T, op)(a.t)
            continue
        check(op, a)
    if kind == "float":  # NaN and inf pass through
        x = pair(np.array([1.0, np.nan, np.inf, -2.0], np.float32))
        check(op, x)
        big = pair(RNG.random(200_001).astype(np.float32))  # chunked two-stage reduction
        check(op, big, rtol=1e-5)


def case_reduce_dim(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind, special=op.endswith(("max_dim", "min_dim", "argmax", "argmin"))):
        for dim in range(len(shape)):
            if shape[dim] == 0 and "sum" not in op and "mean" not in op:
                with pytest.raises(ValueError):
                    getattr(T, op)(a.t, dim)
                continue
            if shape[dim] == 0 and "mean" in op:
                continue  # NumPy warns; both give NaN
            check(op, a, dim)
    x = RNG.integers(0, 3, size=(7, 9)).astype(np.float32 if kind == "float" else np.int64)
    check(op, pair(x), 0)  # ties: the first index
    check(op, pair(x), 1)
    if kind == "float":
        x = rand_float((5, 6))
        x[1, 2], x[1, 4], x[3, 0] = np.nan, np.nan, np.inf
        check(op, pair(x), 1)
        long = pair(RNG.random((3, 50_000)).astype(np.float32), "permute")  # chunked along dim 1
        # The reference (NdArray: NumPy's f32 sum) adds a strided row one element after the
        # other (pairwise summation needs the contiguous axis): ~1e-5 off on some draws, while
        # Taichi accumulates in f64. Hence 3e-5 along the strided dim.
        check(op, long, 1, rtol=3e-5)
        check(op, long, 0, rtol=1e-5)


def case_matmul(op: str) -> None:
    for ls, rs in (((3, 4), (4, 5)), ((2, 3, 4), (1, 4, 2)), ((1, 2, 5, 3), (4, 1, 3, 6)), ((0, 3), (3, 2)),
                   ((2, 0), (0, 3)), ((1, 1), (1, 1)), ((9, 17), (17, 13))):
        for layout in ("contig", "permute", "slice"):
            check(op, pair(rand_float(ls, False), layout), pair(rand_float(rs, False), "swap"), rtol=1e-4, atol=1e-5)
    nan = rand_float((3, 3), False)
    nan[0, 0] = np.nan
    check(op, pair(nan), pair(rand_float((3, 2), False)))


def case_cast(op: str) -> None:
    for shape, layout, a in cases("float"):
        for dtype in (np.float64, np.float16, np.float32):
            check(op, a, dtype)
            ref, got = both(op, a, dtype)
            back = pair(data(ref))
            for name in ("float_add", "float_exp", "float_sum", "float_erf"):
                args = (back, back) if name == "float_add" else (back,)
                check(name, *args, rtol=2e-3 if dtype == np.float16 else 2e-5, atol=1e-3)


def case_convert(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind, special=False):
        check(op, a)


def case_data(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        if op.endswith("from_data"):
            arr = make(kind, shape)
            same(getattr(T, op)(arr, DEV), getattr(N, op)(arr, N.default_device()), op)
        else:
            check(op, a)
            got = getattr(T, op)(a.t)
            got.reshape(-1)[:1] = 0  # a copy the caller may keep and change
            same(getattr(T, op)(a.t), getattr(N, op)(a.n), op)


def case_empty(op: str) -> None:
    for shape in SHAPES:
        p = getattr(T, op)(shape, DEV)
        assert T.float_shape(p) == shape
        ref = getattr(N, op)(shape, N.default_device())
        assert T.float_into_data(p).dtype == ref.dtype
        if op == "bool_empty":
            same(p, ref, op)


def case_full(op: str) -> None:
    for shape in SHAPES:
        for v in ((1.5, np.nan, -np.inf) if op == "float_full" else (7, -3)):
            same(getattr(T, op)(shape, v, DEV), getattr(N, op)(shape, v, N.default_device()), op)
    if op == "float_full":
        for dt in (np.float16, np.float64):
            same(T.float_full((2, 2), 0.1, DEV, dt), N.float_full((2, 2), 0.1, None, dt), op)


def case_random(op: str) -> None:
    for dist in (Distribution.Default, Distribution.Uniform(-2, 3), Distribution.Normal(1, 2),
                 Distribution.Bernoulli(0.3)):
        N.seed(42)
        T.seed(42)
        ref = N.float_random((3, 4), dist, N.default_device())
        got = T.float_random((3, 4), dist, DEV)
        np.testing.assert_array_equal(data(got), ref)


def case_meta(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        if op.endswith("_shape"):
            assert getattr(T, op)(a.t) == getattr(N, op)(a.n)
        elif op.endswith("_dtype"):
            assert getattr(T, op)(a.t) == getattr(N, op)(a.n)
        elif op.endswith("_to_device"):
            same(getattr(T, op)(a.t, DEV), a.n, op)
        elif op.endswith("_device"):
            assert getattr(T, op)(a.t) == DEV


def case_reshape(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        n = math.prod(shape)
        for new in ((n,), (1, n), (n, 1) if n else (0, 5), (-1,)):
            check(op, a, new)


def case_swap(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        check(op, a, 0, len(shape) - 1)
        swapped = P(*both(op, a, 0, len(shape) - 1))
        check(f"{kind}_equal", swapped, pair(data(swapped.n)))  # the view feeds the next op


def case_permute(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        axes = tuple(RNG.permutation(len(shape)))
        check(op, a, axes)


def case_expand(op: str) -> None:
    kind = k_of(op)
    for shape in SHAPES:
        small = tuple(1 if i % 2 else s for i, s in enumerate(shape))
        a = pair(make(kind, small), "permute")
        check(op, a, shape)
        check(op, a, (2,) + shape)  # new leading dims
    with pytest.raises(ValueError, match=r"\[2, 3\]"):
        getattr(T, op)(pair(make(kind, (2, 3))).t, (4, 3))


def _ranges(shape: tuple) -> list:
    out = []
    for _ in range(4):
        r = []
        for s in shape[:RNG.integers(1, len(shape) + 1)]:
            step = int(RNG.choice([1, 2, -1, -2, 3]))
            a, b = sorted(RNG.integers(-s - 1, s + 2, size=2))
            r.append(slice(int(a), int(b), step) if step > 0 else slice(int(b), int(a), step))
        out.append(tuple(r))
    return out


def case_slice(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for r in _ranges(shape):
            check(op, a, r)


def case_slice_assign(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for r in _ranges(shape):
            region = np.empty(shape)[r].shape
            check(op, a, r, pair(make(kind, region), "permute"))
            check(op, a, r, pair(make(kind, squeeze_some(region))))


def case_cat(op: str) -> None:
    kind = k_of(op)
    for shape in SHAPES:
        for dim in range(len(shape)):
            parts = []
            for i, n in enumerate((2, 0, 3)):
                s = shape[:dim] + (n,) + shape[dim + 1:]
                parts.append(pair(make(kind, s), LAYOUTS[i % 4]))
            check(op, parts, dim)


def case_gather(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for dim in range(len(shape)):
            if shape[dim] == 0:
                continue
            ishape = shape[:dim] + (int(RNG.integers(0, 4)),) + shape[dim + 1:]
            idx = RNG.integers(-shape[dim], shape[dim], size=ishape).astype(np.int64)
            check(op, dim, a, pair(idx, "permute"))
    with pytest.raises(IndexError):
        getattr(T, op)(0, pair(make(kind, (2, 3))).t, pair(np.array([[0, 2, 1]])).t)


def case_scatter(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for dim in range(len(shape)):
            if shape[dim] == 0:
                continue
            ishape = shape[:dim] + (int(RNG.integers(0, 4)),) + shape[dim + 1:]
            idx = RNG.integers(-shape[dim], shape[dim], size=ishape).astype(np.int64)  # repeats add up
            check(op, dim, a, pair(idx, "swap"), pair(make(kind, ishape, special=False), "permute"))
    with pytest.raises(IndexError):
        getattr(T, op)(0, pair(make(kind, (2, 3))).t, pair(np.array([[0, 2, 1]])).t,
                       pair(make(kind, (1, 3))).t)


def case_select(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for dim in range(len(shape)):
            if shape[dim] == 0:
                continue
            idx = RNG.integers(-shape[dim], shape[dim], size=int(RNG.integers(0, 5))).astype(np.int64)
            check(op, a, dim, pair(idx, "slice"))


def case_select_assign(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        for dim in range(len(shape)):
            if shape[dim] == 0:
                continue
            idx = RNG.integers(-shape[dim], shape[dim], size=int(RNG.integers(0, 5))).astype(np.int64)
            vshape = shape[:dim] + (len(idx),) + shape[dim + 1:]
            check(op, a, dim, pair(idx), pair(make(kind, vshape, special=False), "swap"))
            check(op, a, dim, pair(idx), pair(make(kind, squeeze_some(vshape), special=False)))


def case_mask_where(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        mask = pair(make("bool", squeeze_some(shape)), "permute")
        check(op, a, mask, pair(make(kind, squeeze_some(shape)), "slice"))


def case_mask_fill(op: str) -> None:
    kind = k_of(op)
    for shape, layout, a in cases(kind):
        mask = pair(make("bool", squeeze_some(shape)), "swap")
        for v in ((2.5, np.nan, -np.inf) if kind == "float" else (7, -1)):
            check(op, a, mask, v)


def case_arange(op: str) -> None:
    for start, end, step in ((0, 10, 1), (3, -7, -2), (5, 5, 1), (-4, 9, 3), (2, 0, 1)):
        same(T.int_arange(start, end, step, DEV), N.int_arange(start, end, step, None), op)


PATTERNS = {
    "from_data": case_data, "into_data": case_data, "empty": case_empty, "full": case_full,
    "random": case_random, "shape": case_meta, "device": case_meta, "to_device": case_meta,
    "dtype": case_meta, "cast": case_cast, "reshape": case_reshape, "swap_dims": case_swap,
    "permute": case_permute, "expand": case_expand, "slice": case_slice, "slice_assign": case_slice_assign,
    "cat": case_cat, "gather": case_gather, "scatter": case_scatter, "select": case_select,
    "select_assign": case_select_assign, "mask_where": case_mask_where, "mask_fill": case_mask_fill,
    "add": case_binary, "sub": case_binary, "mul": case_binary, "div": case_binary, "powf": case_binary,
    "equal": case_binary, "greater": case_binary, "greater_equal": case_binary, "lower": case_binary,
    "lower_equal": case_binary, "and": case_binary, "or": case_binary,
    "neg": case_unary, "abs": case_unary, "exp": case_unary, "log": case_unary, "log1p": case_unary,
    "erf": case_unary, "sqrt": case_unary, "recip": case_unary, "cos": case_unary, "sin": case_unary,
    "tanh": case_unary, "relu": case_unary, "sigmoid": case_unary, "not": case_unary, "clamp": case_clamp,
    "sum": case_reduce_all, "max": case_reduce_all, "min": case_reduce_all,
    "sum_dim": case_reduce_dim, "mean_dim": case_reduce_dim, "max_dim": case_reduce_dim,
    "min_dim": case_reduce_dim, "argmax": case_reduce_dim, "argmin": case_reduce_dim,
    "matmul": case_matmul, "into_int": case_convert, "into_float": case_convert, "arange": case_arange,
}


def case_for(op: str):
    rest = op.split("_", 1)[1]
    if rest.endswith("_scalar") or rest.endswith("_elem"):
        return case_scalar
    return PATTERNS[rest]


@pytest.mark.parametrize("op", FLOAT_OPS + INT_OPS + BOOL_OPS)
def test_op_matches_ndarray(op: str) -> None:
    case_for(op)(op)


def module_args(op: str) -> list:
    """Arguments of a module op (resolved, as the tensor layer passes them)."""
    f = lambda shape, layout="contig": pair(rand_float(shape, special=False), layout)  # noqa: E731
    conv = ConvOptions(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2).resolved(2)
    convt = ConvTransposeOptions(stride=(2, 2), padding=(1, 1), padding_out=(1, 0)).resolved(2)
    pool = ((3, 2), (2, 1), (1, 0))
    x4, x3 = f((2, 4, 7, 6), "permute"), f((2, 4, 9), "slice")
    idx = pair(RNG.integers(0, 10, size=(2, 5)).astype(np.int64))
    args = {
        "conv2d": [x4, f((6, 2, 3, 3)), f((6,)), conv],
        "conv1d": [x3, f((6, 2, 3)), None, ConvOptions(2, 1, 1, 2).resolved(1)],
        "conv_transpose2d": [f((2, 4, 5, 5)), f((4, 3, 3, 3)), f((3,)), convt],
        "conv_transpose1d": [f((2, 4, 6)), f((4, 3, 3)), None, ConvTransposeOptions(2, 1, 1).resolved(1)],
        "conv2d_weight_backward": [x4, f((2, 6, 4, 2)), (6, 2, 3, 3), conv],
        "avg_pool2d": [x4, *pool, False],
        "avg_pool2d_backward": [x4, f((2, 4, 4, 5)), *pool, True],
        "avg_pool1d": [x3, (3,), (2,), (1,), True],
        "adaptive_avg_pool2d": [x4, (3, 4)],
        "adaptive_avg_pool2d_backward": [x4, f((2, 4, 3, 4))],
        "adaptive_avg_pool1d": [x3, (4,)],
        "max_pool2d": [x4, *pool, (1, 1), True],
        "max_pool2d_with_indices": [x4, *pool, (1, 2), False],
        "max_pool1d": [x3, (3,), (2,), (1,), (1,), False],
        "max_pool1d_with_indices": [x3, (3,), (2,), (1,), (2,), True],
        "embedding": [f((10, 4)), idx],
        "embedding_backward": [f((10, 4)), f((2, 5, 4), "swap"), idx],
        "attention": [f((2, 3, 4, 5)), f((2, 3, 6, 5)), f((2, 3, 6, 2)), pair(RNG.random((2, 1, 4, 6)) < 0.3),
                      0.45, -1.0e4],
        "layer_norm": [f((2, 3, 8), "swap"), f((8,)), f((8,)), 1e-5],
        "gelu": [f((3, 70), "slice")],
    }
    return args[op]


@pytest.mark.parametrize("op", MODULE_OPS)
def test_module_op_defaults_run_on_taichi(op: str) -> None:
    """Module ops are defaults composed of primitives (module_ops.py); on Taichi
    they must agree with NdArray's own NumPy versions."""
    if op == "max_pool2d_with_indices_backward":
        x4 = pair(rand_float((2, 4, 7, 6), special=False), "permute")
        pool = ((3, 2), (2, 1), (1, 0), (1, 1), False)
        ref, got = both("max_pool2d_with_indices", x4, *pool)
        same(got[1], ref[1], "indices")
        og = pair(rand_float(N.float_shape(ref[0]), special=False))
        check(op, x4, *pool, og, P(ref[1], got[1]), rtol=1e-5, atol=1e-5)
        return
    ref, got = both(op, *module_args(op))
    for r, g in (zip(ref, got) if isinstance(ref, tuple) else [(ref, got)]):
        same(g, r, op, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["float_add", "int_div", "float_exp", "float_lower_elem", "float_sum_dim",
                                "int_argmax", "float_max", "float_gather", "float_scatter", "float_select_assign",
                                "float_mask_where", "bool_mask_where", "float_mask_fill", "float_cat",
                                "float_slice_assign", "float_into_data", "float_cast"])
def test_parallel_kernels_match_ndarray(op: str) -> None:
    """Small tensors run the serial variants of the kernels; run these ops with
    the thread-pool (parallel) variants too, on big and small tensors."""
    t([0.0])  # the runtime (and its settings) exist from here on
    with tb.SETTINGS.override(serial_below=0):
        case_for(op)(op)
        x = pair(rand_float((130, 257)), "permute")
        check("float_add", x, pair(rand_float((1, 257)), "slice"))
        check("float_sum_dim", x, 0, rtol=1e-4, atol=1e-4)  # NumPy sums f32 pairwise; f64 here


@pytest.mark.parametrize("op", ["float_add", "float_exp", "float_sum", "float_sum_dim", "float_argmin",
                                "float_matmul", "float_gather", "float_scatter", "float_cat", "float_mask_where"])
def test_gpu_layout_policies_on_the_cpu(op: str) -> None:
    """GPU archs walk one element per thread, chunk reductions finer and use
    the Taichi matmul; run those host-side choices here, on the CPU arch."""
    t([0.0])
    with tb.SETTINGS.override(serial_below=0, block=1, reduce_tasks=8192, reduce_min_chunk=256, matmul="kernel",
                              reduce="kernel"):
        case_for(op)(op)


def test_loop_shift_stretches_short_cpu_task_loops() -> None:
    """A CPU task loop runs over `ntask << sh` iterations, at least
    `CPU_LOOP` of them (Taichi deals 512 iterations to a thread at a time, so
    128 tasks ran on one thread); serial launches and long loops are not
    stretched."""
    from burnbook.kernels.layout import CPU_LOOP, loop_shift

    t([0.0])
    for ntask in (1, 2, 3, 85, 128, 511, 4095):
        sh = loop_shift(ntask, False)
        assert ntask << sh >= CPU_LOOP and (sh == 0 or ntask << (sh - 1) < CPU_LOOP), ntask
        assert loop_shift(ntask, True) == 0
    assert loop_shift(CPU_LOOP, False) == loop_shift(10 ** 6, False) == loop_shift(0, False) == 0


@pytest.mark.parametrize("op", ["float_add", "float_exp", "float_sum_dim", "float_argmax", "float_matmul",
                                "float_gather", "float_scatter", "float_mask_where", "float_cat"])
def test_stretched_task_loops_run_every_task_once(op: str) -> None:
    """Every launch parallel (no serial cut-off) with short blocks: each task
    loop is stretched, and every task must still run exactly once."""
    t([0.0])
    with tb.SETTINGS.override(serial_below=0, block=8, reduce_tasks=64, reduce_min_chunk=16, matmul="kernel"):
        case_for(op)(op)


@pytest.mark.parametrize("n", [1, 7, 4096, 40_000])
def test_a_fused_chain_is_stretched_and_exact(n: int) -> None:
    """A fused element-wise chain and its fused sum over lengths whose task
    counts give several shifts (one block per task: `block=1`)."""
    from burnbook.backend import Fusion

    F = Fusion[T]
    x = RNG.standard_normal(n).astype(np.float32)
    with tb.SETTINGS.override(serial_below=0, block=1 if n < 100 else 64):
        a = F.float_from_data(x, DEV)
        y = F.float_exp(F.float_mul_scalar(F.float_add_scalar(a, 1.0), 0.5))
        np.testing.assert_allclose(F.float_into_data(y), np.exp((x + 1) * 0.5), rtol=1e-6)
        s = F.float_sum(F.float_mul(F.float_add_scalar(a, 1.0), F.float_add_scalar(a, 1.0)))
        np.testing.assert_allclose(F.float_into_data(s), [np.sum((x.astype(np.float64) + 1) ** 2)], rtol=1e-5)


def test_every_op_is_implemented_and_covered() -> None:
    assert T.missing_ops() == []
    for op in ALL_OPS:
        assert op in MODULE_OPS or callable(case_for(op))


def test_host_and_kernel_copies_give_the_same_bits() -> None:
    """Strided copies (a permuted tensor made contiguous, cat, slice_assign)
    run through NumPy on the CPU arch's device buffers (`SETTINGS.copy ==
    "host"`) and through Taichi's copy kernel otherwise: the same bits for
    permuted, flipped, broadcast and offset views, in f32, f16, i64 and bool,
    and a cast still converts."""
    from burnbook.backend.taichi import SETTINGS, primitive

    rng = np.random.default_rng(9)
    f32 = rng.standard_normal((3, 4, 5)).astype(np.float32)
    f32[0, 0, :2] = [np.nan, -0.0]

    def runs() -> list:
        x = t(f32)
        h = T.float_cast(x, np.float16)
        i = T.int_from_data(np.arange(60).reshape(3, 4, 5) - 30, DEV)
        b = T.float_greater_elem(x, 0.0)
        flipped = T.float_slice(x, (slice(None), slice(None, None, -1), slice(1, 5, 2)))
        bcast = T.float_expand(T.float_slice(x, (slice(0, 1),)), (3, 4, 5))
        return [T.float_into_data(p) for p in (
            T.float_reshape(T.float_permute(x, (2, 0, 1)), (60,)), primitive.materialize(flipped),
            primitive.materialize(bcast), T.float_reshape(T.float_swap_dims(h, 0, 2), (60,)),
            T.float_cat([T.float_swap_dims(x, 1, 2), T.float_swap_dims(x, 1, 2)], 1),
            T.float_slice_assign(x, (slice(1, 3), slice(0, 4, 2)), T.float_slice(T.float_swap_dims(x, 0, 1), (slice(0, 2), slice(0, 2)))),
            primitive.materialize(T.float_swap_dims(x, 0, 1), np.dtype(np.float64)),
        )] + [T.int_into_data(T.int_reshape(T.int_permute(i, (1, 2, 0)), (60,))),
              T.bool_into_data(T.bool_reshape(T.bool_swap_dims(b, 0, 2), (60,)))]

    from burnbook.backend.taichi.launcher import host_writable

    t(f32)   # the runtime started: its settings are the arch's
    if SETTINGS.copy != "host" or not host_writable():
        pytest.skip("the host copy runs on the CPU arch's fast launch path only")
    host = runs()
    with SETTINGS.override(copy="kernel"):
        kernel = runs()
    for a, k in zip(host, kernel):
        assert a.dtype == k.dtype and a.tobytes() == k.tobytes()
    np.testing.assert_array_equal(host[0], f32.transpose(2, 0, 1).reshape(60))
    np.testing.assert_array_equal(host[1], f32[:, ::-1, 1:5:2])
    np.testing.assert_array_equal(host[2], np.broadcast_to(f32[:1], (3, 4, 5)))
    assert host[6].dtype == np.float64
