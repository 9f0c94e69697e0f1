"""Float sums along a strided dim on the CPU arch run through NumPy on the
device buffers (burnbook/backend/taichi/ops/host_reduce.py, `SETTINGS.reduce
== "host"`): the same sums as Taichi's reduction kernel (f64 accumulator,
one rounding), on Taichi and on Fusion[Taichi] (whose lazy source runs as a
map first), for views, means and f64; max/min and last-dim sums keep the
kernel."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.backend.fusion import Fusion
from burnbook.backend.taichi import SETTINGS, Taichi as T
from burnbook.backend.taichi.ops import host_reduce
from burnbook.kernels.reduce import Reduce

F = Fusion[T]
DEV = T.default_device()
RNG = np.random.default_rng(34)


@pytest.fixture(autouse=True)
def _cpu_only():
    T.default_device()
    if SETTINGS.gpu:
        pytest.skip("the host path is CPU-arch only")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BURNBOOK_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _needs_host_buffers() -> None:
    """Under BURNBOOK_TAICHI_LAUNCH=public (make test-public) no buffer is
    host-writable and SETTINGS.reduce is "kernel", so the kernel sums (the
    conformance cases check it)."""
    T.float_into_data(T.float_from_data(np.zeros(1, np.float32), DEV))   # the launch path is chosen by now
    if SETTINGS.reduce != "host" or not host_reduce.host_writable():
        pytest.skip("the public launch path has no host-writable buffers: the kernel sums")


def _expected(a: np.ndarray, dim: int, mean: bool) -> np.ndarray:
    total = a.astype(np.float64).sum(dim, keepdims=True)
    return (total / a.shape[dim] if mean else total).astype(a.dtype)


@pytest.mark.parametrize("shape,dim", [((2048, 64), 0), ((8, 16, 32), 0), ((8, 16, 32), 1), ((5, 1, 7), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mean", [False, True])
def test_a_strided_sum_on_the_host_equals_the_kernel_and_f64_numpy(shape, dim, dtype, mean) -> None:
    _needs_host_buffers()
    a = (RNG.standard_normal(shape) * 100).astype(dtype)
    op = T.float_mean_dim if mean else T.float_sum_dim
    assert host_reduce.applies(Reduce.SUM, np.dtype(dtype), shape, T.float_from_data(a, DEV).strides, dim)
    host = T.float_into_data(op(T.float_from_data(a, DEV), dim))
    with SETTINGS.override(reduce="kernel"):
        kernel = T.float_into_data(op(T.float_from_data(a, DEV), dim))
    want = _expected(a, dim, mean)
    assert host.shape == want.shape
    # f64 sums of the same values, each rounded once: equal up to the last bit of f32
    np.testing.assert_allclose(host, kernel, rtol=2e-7 if dtype == np.float32 else 1e-12, atol=0)
    np.testing.assert_allclose(host, want, rtol=2e-7 if dtype == np.float32 else 1e-12, atol=0)


def test_a_transposed_view_sums_its_strided_dim_on_the_host() -> None:
    _needs_host_buffers()
    a = RNG.standard_normal((48, 40)).astype(np.float32)
    v = T.float_swap_dims(T.float_from_data(a, DEV), 0, 1)   # [40, 48], strides (1, 40): dim 1 is strided
    assert host_reduce.applies(Reduce.SUM, np.dtype(np.float32), v.shape, v.strides, 1)
    assert not host_reduce.applies(Reduce.SUM, np.dtype(np.float32), v.shape, v.strides, 0)
    np.testing.assert_allclose(T.float_into_data(T.float_sum_dim(v, 1)), _expected(a.T, 1, False), rtol=2e-7)
    np.testing.assert_allclose(T.float_into_data(T.float_sum_dim(v, 0)), _expected(a.T, 0, False), rtol=2e-7)


def test_only_float_sums_over_a_strided_dim_take_the_host_path() -> None:
    f32 = np.dtype(np.float32)
    assert not host_reduce.applies(Reduce.SUM, f32, (4, 8), (8, 1), 1)         # contiguous last dim
    assert not host_reduce.applies(Reduce.SUM, f32, (1, 8), (8, 1), 0)         # nothing to walk
    assert not host_reduce.applies(Reduce.MAX, f32, (4, 8), (8, 1), 0)         # max keeps the kernel's NaN rules
    assert not host_reduce.applies(Reduce.SUM, np.dtype(np.int64), (4, 8), (8, 1), 0)
    with SETTINGS.override(reduce="kernel"):
        assert not host_reduce.applies(Reduce.SUM, f32, (4, 8), (8, 1), 0)
    with pytest.raises(ValueError, match="reduce='gpu'"):
        with SETTINGS.override(reduce="gpu"):
            pass


def test_max_over_dim_0_with_a_nan_is_unchanged() -> None:
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    a[3, 2] = np.nan
    got = T.float_into_data(T.float_max_dim(T.float_from_data(a, DEV), 0))
    with SETTINGS.override(reduce="kernel"):
        kernel = T.float_into_data(T.float_max_dim(T.float_from_data(a, DEV), 0))
    np.testing.assert_array_equal(got, kernel)


@pytest.mark.parametrize("mean", [False, True])
def test_fusion_sums_a_lazy_source_over_dim_0_on_the_host(mean) -> None:
    _needs_host_buffers()
    a = RNG.standard_normal((64, 32, 24)).astype(np.float32)
    b = RNG.standard_normal((1, 1, 24)).astype(np.float32)
    op = F.float_mean_dim if mean else F.float_sum_dim
    x, y = F.float_from_data(a, DEV), F.float_from_data(b, DEV)
    z = F.float_mul(F.float_add(x, y), x)                    # lazy [64, 32, 24]
    got = F.float_into_data(op(z, 0))
    want = _expected((a + b) * a, 0, mean)
    np.testing.assert_allclose(got, want, rtol=3e-6, atol=1e-6)
    assert z.node is None                                    # the source ran as a map
    with SETTINGS.override(reduce="kernel"):
        z2 = F.float_mul(F.float_add(x, y), x)
        fused = F.float_into_data(op(z2, 0))
        assert z2.node is not None                           # fused: the source stays lazy
    np.testing.assert_allclose(got, fused, rtol=2e-7, atol=0)
    # along the last dim the fused kernel still runs
    z3 = F.float_mul(F.float_add(x, y), x)
    np.testing.assert_allclose(F.float_into_data(op(z3, 2)), _expected((a + b) * a, 2, mean), rtol=3e-6, atol=1e-6)
    assert z3.node is not None
