"""Every kernel family of burnbook.kernels compiles and runs on Vulkan, and the
SPIR-V rules written at the top of kernels/__init__.py hold there.

Taichi runs one arch per process, so each check runs in a fresh process on
`TaichiDevice.vulkan()`. The module skips only where Taichi finds no Vulkan
device; `make test` installs Mesa's lavapipe (a Vulkan driver on the CPU), so
on CI it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = pytest.mark.gpu

_PRELUDE = """
import math
import numpy as np
from burnbook.backend.taichi import Taichi as T, TaichiDevice, DeviceDtypeError
D = TaichiDevice.vulkan()
rng = np.random.default_rng(7)

def check(name, got, ref, rtol=2e-6, atol=1e-6):
    got = np.asarray(got)
    assert got.dtype == np.asarray(ref).dtype, (name, got.dtype, np.asarray(ref).dtype)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg=name)
"""


def _run(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`code` after the prelude, in a fresh process (from a file: Taichi reads kernel source)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snippet.py")
        with open(path, "w") as f:
            f.write(_PRELUDE + textwrap.dedent(code))
        return subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, TI_LOG_LEVEL="error", **(env or {})))


@pytest.fixture(scope="module", autouse=True)
def vulkan_device() -> None:
    """Skip where Taichi cannot start on Vulkan; any other failure is a failure."""
    out = _run("T.float_from_data(np.zeros(1, np.float32), D); print('VULKAN_UP')")
    if "VULKAN_UP" not in out.stdout:
        if "Taichi cannot start on Vulkan" in out.stderr:
            pytest.skip("no Vulkan device for Taichi here (install mesa-vulkan-drivers: `make vulkan-deps`)")
        pytest.fail(out.stderr)


def test_every_float_kernel_family_matches_numpy() -> None:
    """Transfers, fill, every unary/binary/scalar/compare op, clamp, where,
    reductions (chunked ones too), gather/scatter/select and matmul, in f32
    and f16, on strided and broadcast views."""
    out = _run("""
        import math
        erf = np.vectorize(math.erf)
        for dt, tol in ((np.float32, 2e-6), (np.float16, 1e-3)):
            a = rng.normal(size=(37, 41)).astype(dt)
            pos = (np.abs(a) + 0.5).astype(dt)
            b = rng.normal(size=(1, 41)).astype(dt)
            pa, pp, pb = (T.float_from_data(x, D) for x in (a, pos, b))
            got = lambda p: T.float_into_data(p)
            f = lambda x: x.astype(np.float32)  # f16 math runs in f32 and rounds per op
            c = lambda x: np.asarray(x).astype(dt)
            check("roundtrip", got(pa), a)
            check("full", got(T.float_full((3, 2), 2.5, D, dt)), np.full((3, 2), 2.5, dt))
            unary = {
                "neg": (T.float_neg, -a), "abs": (T.float_abs, np.abs(a)),
                "exp": (T.float_exp, c(np.exp(f(a)))), "log": (lambda p: T.float_log(pp), c(np.log(f(pos)))),
                "log1p": (lambda p: T.float_log1p(pp), c(np.log1p(f(pos)))),
                "erf": (T.float_erf, c(erf(a.astype(np.float64)))),
                "sqrt": (lambda p: T.float_sqrt(pp), c(np.sqrt(f(pos)))),
                "recip": (lambda p: T.float_recip(pp), c(1 / f(pos))),
                "cos": (T.float_cos, c(np.cos(f(a)))), "sin": (T.float_sin, c(np.sin(f(a)))),
                "tanh": (T.float_tanh, c(np.tanh(f(a)))),
                "add_scalar": (lambda p: T.float_add_scalar(p, 0.1), a + dt(0.1)),
                "sub_scalar": (lambda p: T.float_sub_scalar(p, 0.1), a - dt(0.1)),
                "mul_scalar": (lambda p: T.float_mul_scalar(p, 3.0), a * dt(3.0)),
                "div_scalar": (lambda p: T.float_div_scalar(p, 3.0), c(f(a) / 3.0)),
                "powf_scalar": (lambda p: T.float_powf_scalar(pp, 1.7), c(f(pos) ** 1.7)),
                "square": (lambda p: T.float_powf_scalar(p, 2.0), c(f(a) * f(a))),
                "clamp": (lambda p: T.float_clamp(p, -0.5, 0.5), np.clip(a, -0.5, 0.5)),
                "into_int": (lambda p: T.float_into_int(T.float_mul_scalar(p, 10.0)), (a * dt(10)).astype(np.int64)),
                "transpose": (lambda p: T.float_exp(T.float_permute(p, (1, 0))), c(np.exp(f(a.T)))),
            }
            for name, (fn, ref) in unary.items():
                check(f"{name} {dt.__name__}", got(fn(pa)), ref, rtol=tol, atol=tol)
            binary = {
                "add": (T.float_add, a + b), "sub": (T.float_sub, a - b), "mul": (T.float_mul, a * b),
                "div": (T.float_div, c(f(a) / f(b))),
                "powf": (lambda x, y: T.float_powf(pp, y), c(f(pos) ** f(b))),
            }
            for name, (fn, ref) in binary.items():
                check(f"{name} {dt.__name__}", got(fn(pa, pb)), ref, rtol=tol, atol=tol)
            for name, ref in (("equal", a == b), ("greater", a > b), ("greater_equal", a >= b),
                              ("lower", a < b), ("lower_equal", a <= b)):
                check(f"{name} {dt.__name__}", got(getattr(T, "float_" + name)(pa, pb)), ref)
                check(f"{name}_elem {dt.__name__}", got(getattr(T, f"float_{name}_elem")(pa, 0.25)),
                      getattr(np, {"equal": "equal", "greater": "greater", "greater_equal": "greater_equal",
                                   "lower": "less", "lower_equal": "less_equal"}[name])(a, dt(0.25)))
            m = a > 0
            pm = T.float_greater_elem(pa, 0.0)
            check(f"mask_where {dt.__name__}", got(T.float_mask_where(pa, pm, T.float_neg(pa))), np.where(m, -a, a))
            check(f"mask_fill {dt.__name__}", got(T.float_mask_fill(pa, pm, 7.0)), np.where(m, dt(7), a))
            sums = a.astype(np.float64)
            check(f"sum {dt.__name__}", got(T.float_sum(pa)), c(sums.sum().reshape(1)), rtol=tol, atol=tol * 40)
            check(f"sum_dim {dt.__name__}", got(T.float_sum_dim(pa, 0)), c(sums.sum(0, keepdims=True)),
                  rtol=tol, atol=tol * 10)
            check(f"mean_dim {dt.__name__}", got(T.float_mean_dim(pa, 1)), c(sums.mean(1, keepdims=True)),
                  rtol=tol, atol=tol)
            for name in ("max", "min"):
                check(f"{name} {dt.__name__}", got(getattr(T, "float_" + name)(pa)), getattr(a, name)().reshape(1))
                check(f"{name}_dim {dt.__name__}", got(getattr(T, f"float_{name}_dim")(pa, 1)),
                      getattr(a, name)(1, keepdims=True))
                arg = "argmax" if name == "max" else "argmin"
                check(f"{arg} {dt.__name__}", got(getattr(T, "float_" + arg)(pa, 0)), getattr(a, arg)(0)[None])
            long = rng.normal(size=(2, 70000)).astype(dt)  # long rows: the chunked two-pass reduction
            check(f"chunked sum {dt.__name__}", got(T.float_sum_dim(T.float_from_data(long, D), 1)),
                  c(long.astype(np.float64).sum(1, keepdims=True)), rtol=tol, atol=tol * 100)
            idx = np.array([[3, 0, 40]] * 37)
            pi = T.int_from_data(idx, D)
            check(f"gather {dt.__name__}", got(T.float_gather(1, pa, pi)), np.take_along_axis(a, idx, 1))
            sel = T.int_from_data(np.array([2, 0, 2]), D)
            check(f"select {dt.__name__}", got(T.float_select(pa, 0, sel)), a[[2, 0, 2]])
            # (f16 atomics are optional on Vulkan, and lavapipe has none: f16 adds in f32)
            v = np.ones((37, 3), dt)
            ref = a.copy()
            np.add.at(ref, (np.arange(37)[:, None], idx), v)
            check(f"scatter {dt.__name__}", got(T.float_scatter(1, pa, pi, T.float_from_data(v, D))), ref)
            vs = np.full((3, 41), 0.25, dt)
            ref = a.astype(np.float32)
            np.add.at(ref, [2, 0, 2], vs.astype(np.float32))
            check(f"select_assign {dt.__name__}",
                  got(T.float_select_assign(pa, 0, sel, T.float_from_data(vs, D))), c(ref), rtol=tol, atol=tol)
            check(f"cat {dt.__name__}", got(T.float_cat([pa, T.float_expand(pb, (2, 41))], 0)),
                  np.concatenate([a, np.broadcast_to(b, (2, 41))]))
            check(f"slice_assign {dt.__name__}",
                  got(T.float_slice_assign(pa, (slice(1, 3),), T.float_expand(pb, (2, 41)))),
                  np.concatenate([a[:1], np.broadcast_to(b, (2, 41)), a[3:]]))
            w = rng.normal(size=(3, 41, 5)).astype(dt)
            pw = T.float_from_data(w, D)
            check(f"matmul {dt.__name__}", got(T.float_matmul(T.float_reshape(pa, (1, 37, 41)), pw)),
                  c(f(a) @ f(w)), rtol=tol * 10, atol=tol * 10)
        print("FLOAT_OK")
    """)
    assert out.returncode == 0 and "FLOAT_OK" in out.stdout, out.stderr[-4000:]


def test_f32_math_keeps_its_relative_accuracy_where_spirv_loses_it() -> None:
    """SPIR-V's f32 log is good to 2**-21 absolute near 1, its tanh loses all
    relative accuracy near 0, its pow is undefined for x <= 0: burnbook's own
    routines keep a few ulp (atol 0) and NumPy's special values."""
    out = _run("""
        near = np.concatenate([1 + np.linspace(-1e-3, 1e-3, 201), np.geomspace(1e-30, 1e3, 300)]).astype(np.float32)
        small = np.concatenate([np.geomspace(1e-20, 0.6, 300), -np.geomspace(1e-20, 0.6, 300)]).astype(np.float32)
        f64 = lambda v: v.astype(np.float64)
        check("log near 1", T.float_into_data(T.float_log(T.float_from_data(near, D))),
              np.log(f64(near)).astype(np.float32), rtol=4e-7, atol=0)
        check("log1p near 0", T.float_into_data(T.float_log1p(T.float_from_data(small, D))),
              np.log1p(f64(small)).astype(np.float32), rtol=4e-7, atol=0)
        check("tanh near 0", T.float_into_data(T.float_tanh(T.float_from_data(small, D))),
              np.tanh(f64(small)).astype(np.float32), rtol=4e-7, atol=0)
        base = np.array([-2.0, -2.0, 0.0, -0.0, 0.0, 2.0, -np.inf, 1.0], np.float32)
        ex = np.array([3.0, 0.5, -1.0, 3.0, 0.0, -np.inf, 3.0, np.nan], np.float32)
        with np.errstate(all="ignore"):
            ref = base ** ex
        got = T.float_into_data(T.float_powf(T.float_from_data(base, D), T.float_from_data(ex, D)))
        num = ~np.isnan(ref)
        assert np.array_equal(got, ref, equal_nan=True), got
        assert np.array_equal(np.signbit(got[num]), np.signbit(ref[num])), got
        print("F32_OK")
    """)
    assert out.returncode == 0 and "F32_OK" in out.stdout, out.stderr[-4000:]


def test_int_and_bool_kernels_match_numpy() -> None:
    out = _run("""
        a = rng.integers(-50, 50, size=(9, 13))
        b = rng.integers(1, 7, size=(1, 13))
        pa, pb = T.int_from_data(a, D), T.int_from_data(b, D)
        got = T.int_into_data
        for name, ref in (("add", a + b), ("sub", a - b), ("mul", a * b), ("div", np.trunc(a / b).astype(np.int64))):
            check("int " + name, got(getattr(T, "int_" + name)(pa, pb)), ref)
        check("int add_scalar", got(T.int_add_scalar(pa, 3)), a + 3)
        check("int div_scalar", got(T.int_div_scalar(pa, -4)), np.trunc(a / -4).astype(np.int64))
        check("int sum_dim", got(T.int_sum_dim(pa, 1)), a.sum(1, keepdims=True))
        check("int max", got(T.int_max(pa)), a.max().reshape(1))
        check("int argmin", got(T.int_argmin(pa, 1)), a.argmin(1)[:, None])
        check("int arange", got(T.int_arange(3, 11, 2, D)), np.arange(3, 11, 2))
        check("int greater_elem", T.bool_into_data(T.int_greater_elem(pa, 2.5)), a > 2.5)
        pm, pn = T.int_greater_elem(pa, 0), T.int_lower_elem(pa, 10)
        check("bool and", T.bool_into_data(T.bool_and(pm, pn)), (a > 0) & (a < 10))
        check("bool or", T.bool_into_data(T.bool_or(pm, pn)), (a > 0) | (a < 10))
        check("bool not", T.bool_into_data(T.bool_not(pm)), ~(a > 0))
        print("INT_OK")
    """)
    assert out.returncode == 0 and "INT_OK" in out.stdout, out.stderr[-4000:]


def test_f64_math_compiles_on_spirv_and_matches_numpy() -> None:
    """SPIR-V has no 64-bit exp/log/pow/sin/cos/tanh: f64 kernels compute them
    from f64 arithmetic (kernels/spirv_math.py), to within a few ulp, with NumPy's
    special values; f64 arithmetic, sums and matmul run as on the CPU."""
    out = _run("""
        import math
        x = np.concatenate([rng.normal(size=300) * 3, rng.uniform(-700, 700, 50),
                            [0.0, -0.0, 5e-324, 1e-300, np.inf, -np.inf, np.nan, 709.7, -745.0, 3e-9, 22.5]])
        y = np.concatenate([rng.normal(size=350) * 3, [2.0, 0.5, -1.0, 3.0, np.inf, -2.0, 0.0, 1.0, 3.0, -3.0, 0.5]])
        px, pa, py = (T.float_from_data(v, D) for v in (x, np.abs(x), y))
        got = T.float_into_data
        with np.errstate(all="ignore"):
            check("f64 add", got(T.float_add(px, py)), x + y, rtol=0, atol=0)
            check("f64 sqrt", got(T.float_sqrt(pa)), np.sqrt(np.abs(x)), rtol=1e-15, atol=0)
            check("f64 sum", got(T.float_sum(T.float_slice(px, (slice(0, 300),)))), x[:300].sum().reshape(1),
                  rtol=1e-13, atol=0)
            m = rng.normal(size=(6, 7))
            pm = T.float_from_data(m, D)
            check("f64 matmul", got(T.float_matmul(pm, T.float_permute(pm, (1, 0)))), m @ m.T, rtol=1e-13, atol=0)
            for name, p, ref in (("exp", px, np.exp(x)), ("log", pa, np.log(np.abs(x))), ("sin", px, np.sin(x)),
                                 ("cos", px, np.cos(x)), ("tanh", px, np.tanh(x)),
                                 ("log1p", pa, np.log1p(np.abs(x)))):
                check("f64 " + name, got(getattr(T, "float_" + name)(p)), ref, rtol=1e-14, atol=1e-300)
            finite = np.nan_to_num(x)
            check("f64 erf", got(T.float_erf(T.float_from_data(finite, D))), np.vectorize(math.erf)(finite),
                  rtol=1e-14, atol=1e-300)
            check("f64 powf", got(T.float_powf(pa, py)), np.abs(x) ** y, rtol=1e-13, atol=1e-300)
            check("f64 powf negative base", got(T.float_powf(px, T.float_from_data(np.round(y), D))),
                  x ** np.round(y), rtol=1e-13, atol=1e-300)
            check("f64 powf_scalar", got(T.float_powf_scalar(pa, 1.7)), np.abs(x) ** 1.7, rtol=1e-13, atol=1e-300)
        print("F64_OK")
    """)
    assert out.returncode == 0 and "F64_OK" in out.stdout, out.stderr[-4000:]


def test_a_device_without_f64_refuses_f64_tensors_naming_the_device() -> None:
    """Where the f64 probe fails (Metal, a Vulkan device without shaderFloat64),
    an f64 tensor is a DeviceDtypeError (a TypeError) naming the device; f32 works."""
    out = _run("""
        import burnbook.kernels as K
        K.data.f64_works = lambda: False  # as on a device without shaderFloat64
        p = T.float_from_data(np.ones(3, np.float32), D)
        try:
            T.float_from_data(np.ones(3), D)
        except DeviceDtypeError as e:
            assert isinstance(e, TypeError) and "Vulkan" in str(e) and "f64" in str(e), e
            print("REFUSED")
        check("f32 still works", T.float_into_data(T.float_add(p, p)), np.full(3, 2, np.float32))
    """)
    assert out.returncode == 0 and "REFUSED" in out.stdout, out.stderr[-4000:]


def test_taichi_op_runs_forward_and_refuses_to_track_on_vulkan() -> None:
    """Taichi 1.7.4's kernel.grad leaves ndarray gradients at zero on SPIR-V
    (taichi-dev/taichi#8524): a tracked `taichi_op` is a clear error there,
    never a silent zero gradient; its forward still runs."""
    out = _run("""
        import taichi as ti
        from burnbook import Tensor
        from burnbook.autodiff import Autodiff, taichi_op

        def square(x: ti.types.ndarray(), out: ti.types.ndarray()):
            for i in range(x.shape[0]):
                out[i] = x[i] * x[i]

        op = taichi_op(ti.kernel(square), lambda s: s)
        x = Tensor[T, 1].from_floats([1.0, -2.0, 3.0], device=D)
        check("forward", op.apply(x).into_data(), np.array([1.0, 4.0, 9.0], np.float32))
        B = Autodiff[T]
        xt = Tensor[B, 1].from_floats([1.0, -2.0, 3.0], device=D).require_grad()
        try:
            op.apply(xt)
        except NotImplementedError as e:
            assert "Vulkan" in str(e) and "8524" in str(e), e
            print("REFUSED")
    """)
    assert out.returncode == 0 and "REFUSED" in out.stdout, out.stderr[-4000:]
