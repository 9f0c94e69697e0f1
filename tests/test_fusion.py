"""Fusion[Taichi]: recording is lazy, a chain runs as one kernel compiled once
per shape-free signature, shape errors stay eager, and fused results equal
the unfused Taichi backend's (random op graphs), reductions included."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest

from burnbook.autodiff import Autodiff
from burnbook.backend import NdArray
from burnbook.backend.fusion import Fusion, FusionTensor, explain
from burnbook.backend.fusion import executor
from burnbook.backend.taichi import Taichi as T
from burnbook.backend.taichi import kernel_stats

F = Fusion[T]
DEV = T.default_device()
RNG = np.random.default_rng(2024)


def f(a) -> FusionTensor:
    return F.float_from_data(np.asarray(a), DEV)


def t(a):
    return T.float_from_data(np.asarray(a), DEV)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BURNBOOK_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def test_recording_launches_nothing_and_a_chain_is_one_kernel() -> None:
    x, y = f(RNG.standard_normal((64, 33), np.float32)), f(RNG.standard_normal((1, 33), np.float32))
    launches, runs = kernel_stats()["launches"], F.stats()["executed"]
    z = F.float_add_scalar(F.float_mul(x, y), 1.0)
    z = F.float_clamp(F.float_sub(F.float_mul(F.float_exp(F.float_neg(z)), x), F.float_mul_scalar(y, 0.5)), 0.0)
    assert kernel_stats()["launches"] == launches and z.node is not None and z.node.size == 8
    out = F.float_into_data(z)
    assert F.stats()["executed"] == runs + 1 and z.node is None
    xa, ya = F.float_into_data(x), F.float_into_data(y)
    np.testing.assert_allclose(out, np.maximum(np.exp(-(xa * ya + 1)) * xa - 0.5 * ya, 0), rtol=1e-6, atol=1e-7)


def test_a_second_shape_and_broadcast_pattern_reuse_the_compiled_kernel() -> None:
    def chain(x, y):
        return F.float_into_data(F.float_tanh(F.float_add(F.float_mul_scalar(x, 3.0), y)))

    chain(f(np.ones((4, 5), np.float32)), f(np.ones((4, 5), np.float32)))
    compiled = F.stats()["compiled"]
    a = RNG.standard_normal((7, 3, 9), np.float32)
    b = RNG.standard_normal((7, 1, 9), np.float32)
    got = chain(f(a), f(b))
    q = T.float_permute(t(a.transpose(2, 1, 0).copy()), (2, 1, 0))  # a strided leaf
    got_strided = chain(F.float_permute(f(a.transpose(2, 1, 0).copy()), (2, 1, 0)), f(b))
    assert F.stats()["compiled"] == compiled
    np.testing.assert_allclose(got, np.tanh(3 * a + b), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got_strided, got)
    del q


def test_shape_and_dtype_errors_are_raised_at_the_op_that_was_written() -> None:
    x, y = f(np.ones((3, 4), np.float32)), f(np.ones((2, 4), np.float32))
    z = F.float_exp(x)
    with pytest.raises(ValueError, match=r"float_add: shapes \[3, 4\] and \[2, 4\] do not broadcast"):
        F.float_add(z, y)
    with pytest.raises(ValueError, match="mask_where"):
        F.float_mask_where(z, F.float_greater_elem(y, 0.0), x)
    with pytest.raises(TypeError, match="float_cast: int64 is not a float dtype"):
        F.float_cast(z, np.int64)
    assert z.node is not None  # nothing ran


# -- random op graphs: fused against the unfused Taichi backend ------------------------------
UNARY = ["float_exp", "float_neg", "float_abs", "float_tanh", "float_sin", "float_cos", "float_erf",
         "float_sqrt", "float_log1p", "float_recip", "float_relu"]
BINARY = ["float_add", "float_sub", "float_mul", "float_div", "float_powf"]
SCALAR = ["float_add_scalar", "float_sub_scalar", "float_mul_scalar", "float_div_scalar", "float_powf_scalar"]
REDUCE = ["float_sum", "float_max", "float_min", "float_sum_dim", "float_mean_dim", "float_max_dim",
          "float_min_dim", None]


def _random_program(seed: int):
    """A random DAG of element-wise ops over broadcasting leaves, maybe ending
    in a reduction; returns a function of a backend running it."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    shape = tuple(int(s) for s in rng.integers(1, 6, rank))
    dtype = [np.float32, np.float64, np.float16][seed % 3]
    leaves = []
    for _ in range(int(rng.integers(1, 4))):
        s = tuple(1 if rng.random() < 0.3 else n for n in shape)
        leaves.append(rng.uniform(0.2, 2.0, s).astype(dtype))
    steps = []
    for _ in range(int(rng.integers(1, 12))):
        kind = rng.integers(0, 6)
        if kind < 2:
            steps.append(("u", UNARY[rng.integers(len(UNARY))]))
        elif kind < 4:
            steps.append(("b", BINARY[rng.integers(len(BINARY))], int(rng.integers(0, 100))))
        elif kind == 4:
            steps.append(("s", SCALAR[rng.integers(len(SCALAR))], float(rng.uniform(0.5, 1.5))))
        else:
            steps.append(("m", float(rng.uniform(0.5, 1.5)), int(rng.integers(0, 100))))
    reduce = REDUCE[rng.integers(len(REDUCE))]
    dim = int(rng.integers(0, rank))

    def run(B):
        vals = [B.float_from_data(a, DEV) for a in leaves]
        for step in steps:
            cur = vals[-1]
            if step[0] == "u":
                out = getattr(B, step[1])(cur)
                if step[1] in ("float_sqrt", "float_log1p", "float_recip"):
                    out = getattr(B, step[1])(B.float_add_scalar(B.float_abs(cur), 0.5))
            elif step[0] == "b":
                other = vals[step[2] % len(vals)]
                out = getattr(B, step[1])(B.float_add_scalar(B.float_abs(cur), 0.5), other) \
                    if step[1] in ("float_powf", "float_div") else getattr(B, step[1])(cur, other)
            elif step[0] == "s":
                out = getattr(B, step[1])(cur, step[2])
            else:  # a mask from one value picks between two others
                other = vals[step[2] % len(vals)]
                out = B.float_mask_where(cur, B.float_greater_elem(other, step[1]), other)
            out = B.float_clamp(out, -1e3, 1e3)  # keep f16 finite
            vals.append(out)
        last = vals[-1]
        if reduce is None:
            return B.float_into_data(last)
        if reduce in ("float_sum", "float_max", "float_min"):
            return B.float_into_data(getattr(B, reduce)(last))
        return B.float_into_data(getattr(B, reduce)(last, min(dim, len(B.float_shape(last)) - 1)))

    return run, dtype


@pytest.mark.parametrize("seed", range(36))
def test_random_graphs_fused_equal_unfused(seed: int) -> None:
    run, dtype = _random_program(seed)
    fused, unfused = run(F), run(T)
    assert fused.shape == unfused.shape and fused.dtype == unfused.dtype
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(fused.astype(np.float64), unfused.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_reductions_against_numpy_with_nan(dtype) -> None:
    a = RNG.standard_normal((37, 300)).astype(dtype)
    a[5, 7] = np.nan
    x = f(a)
    e = np.exp(a)
    close = dict(rtol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(F.float_into_data(F.float_max_dim(F.float_exp(x), 1))[:, 0], e.max(1), **close)
    np.testing.assert_allclose(F.float_into_data(F.float_min_dim(F.float_exp(x), 0))[0], e.min(0), **close)
    np.testing.assert_allclose(F.float_into_data(F.float_sum_dim(F.float_exp(x), 0))[0], e.sum(0), **close)
    np.testing.assert_allclose(F.float_into_data(F.float_mean_dim(F.float_exp(x), 1))[:, 0], e.mean(1), **close)
    assert np.isnan(F.float_into_data(F.float_max(F.float_exp(x)))[0])
    b = a[:, :50].copy()
    b[5, 7] = 0
    np.testing.assert_allclose(F.float_into_data(F.float_sum(F.float_exp(f(b))))[0], np.exp(b).sum(), **close)


def test_a_referenced_intermediate_is_written_by_the_same_kernel_and_others_never() -> None:
    x = f(RNG.standard_normal(1000).astype(np.float32))
    kept = F.float_exp(x)
    dropped = F.float_neg(kept)
    out = F.float_mul_scalar(dropped, 2.0)
    dropped_node = dropped.node
    del dropped
    assert explain(out).group == ["v3", "v1"]  # out and kept, not the negation
    runs = F.stats()["executed"]
    F.float_into_data(out)
    assert kept.node is None and F.stats()["executed"] == runs + 1
    np.testing.assert_allclose(F.float_into_data(kept), np.exp(F.float_into_data(x)), rtol=1e-6)
    assert F.stats()["executed"] == runs + 1  # kept was not computed again
    del dropped_node


def test_explain_shows_the_stream_and_the_kernel_that_is_then_cached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BURNBOOK_CACHE", str(tmp_path))
    x = f(np.ones((2, 3), np.float32))
    z = F.float_sqrt(F.float_add_scalar(x, 3.0))
    e = explain(z)
    assert e.stream == ["x0: ready [2, 3] float32", "v1 = add_s(x0, 3)  -> [2, 3] float32",
                        "v2 = sqrt(v1)  -> [2, 3] float32"]
    assert "def fused(" in e.source and "UnaryOp.SQRT" in e.source and "sqrt" in str(e)
    assert not e.path.exists()
    np.testing.assert_allclose(F.float_into_data(z), np.full((2, 3), 2.0))
    if e.path.parent == executor.cache_dir():  # a fresh cache folder: the file is written now
        assert e.path.exists() or any(tmp_path.rglob("fused_*.py"))
    assert str(explain(z)) == "ready: nothing recorded"


def test_sync_runs_every_live_stream() -> None:
    z = F.float_exp(f(np.zeros(3, np.float32)))
    F.sync()
    assert z.node is None and z.value is not None


def test_memory_stays_flat_over_ten_thousand_steps() -> None:
    """A training-like loop: parameters updated lazily, read every step."""
    B = Autodiff[F]
    w = B.float_from_data(np.full(8, 0.5, np.float32), DEV)
    x = B.float_from_data(np.linspace(-1, 1, 8).astype(np.float32), DEV)

    def live() -> int:
        gc.collect()
        return sum(type(o) is FusionTensor for o in gc.get_objects())

    counts = []
    for step in range(10_000):
        wr = B.float_require_grad(w)
        loss = B.float_sum(B.float_mul(B.float_sub(B.float_mul(wr, x), x), B.float_sub(B.float_mul(wr, x), x)))
        grads = B.float_backward(loss)
        g = B.float_grad(wr, grads)
        w = B.float_from_inner(F.float_sub(B.float_inner(B.float_detach(wr)), F.float_mul_scalar(g, 0.1)))
        if step in (1000, 9999):
            counts.append(live())
    assert counts[1] <= counts[0] + 5, counts
    np.testing.assert_allclose(B.float_into_data(w), np.ones(8), atol=1e-3)  # w x = x is learnt: w -> 1


def test_fusion_takes_the_taichi_backend_only_and_is_cached() -> None:
    assert Fusion[T] is F and F.name() == "fusion<taichi>" and repr(F) == "Fusion[Taichi]"
    with pytest.raises(TypeError, match="Taichi backend only"):
        Fusion[NdArray]
    with pytest.raises(TypeError, match=r"Autodiff\[Fusion\[B\]\]"):
        Fusion[Autodiff[T]]
    assert math.isfinite(F.float_into_data(F.float_sum(f(np.ones(3, np.float32))))[0])


def test_a_reduction_writes_only_its_result_and_spares_a_referenced_value_once() -> None:
    """`z` is still referenced when the sum runs: it stays lazy (computed
    again, to the same values, when read); a value whose graph holds a spared
    node is written by the next reduction instead, so no lazy chain grows."""
    xa = RNG.standard_normal(5000, np.float32)
    x = f(xa)
    z = F.float_clamp(F.float_exp(F.float_neg(x)), 0.5)
    total = F.float_sum(F.float_add(F.float_mul(z, z), x))
    expected_z = np.maximum(np.exp(-xa), 0.5)
    np.testing.assert_allclose(F.float_into_data(total)[0], (expected_z * expected_z + xa).sum(), rtol=1e-5)
    assert z.node is not None and z.node.spared
    w = F.float_mul_scalar(z, 2.0)                 # its graph holds the spared z
    F.float_sum(F.float_add(w, x))
    assert w.node is None                          # written by that second reduction
    np.testing.assert_allclose(F.float_into_data(w), 2 * expected_z, rtol=1e-6)
    np.testing.assert_allclose(F.float_into_data(z), expected_z, rtol=1e-6)


# -- SIMD lanes: dense maps run 8 elements per index, with the same results ------------------
@pytest.mark.parametrize("seed", range(12))
def test_lanes_give_the_scalar_kernels_results_on_dense_maps(seed: int) -> None:
    """Dense operands and a multiple of 8 elements take `fused_lanes`; turning
    lanes off gives the scalar kernel. Lane by lane the same ops, so equal."""
    from burnbook.backend.taichi.settings import SETTINGS

    if not SETTINGS.lanes:
        pytest.skip("lanes are off on this arch")
    rng = np.random.default_rng(seed)
    dtype = [np.float32, np.float64][seed % 2]
    shape = (8 * int(rng.integers(1, 40)), int(rng.integers(1, 4)))
    leaves = [rng.uniform(0.2, 2.0, shape).astype(dtype) for _ in range(3)]

    def run():
        a, b, c = (F.float_from_data(x, DEV) for x in leaves)
        z = F.float_div(F.float_mul_scalar(F.float_add(a, b), 0.9), F.float_add_scalar(F.float_sqrt(c), 1e-5))
        z = F.float_mask_where(z, F.float_greater_elem(a, 1.0), F.float_exp(F.float_neg(b)))
        z = F.float_sub(F.float_powf_scalar(F.float_abs(z), 1.5), F.float_tanh(c))
        mask = F.float_lower_elem(z, 0.25)  # a bool output beside the float one
        return F.float_into_data(z), F.bool_into_data(mask)

    before = F.stats()["lanes"]
    z, mask = run()
    assert F.stats()["lanes"] == before + 2
    with SETTINGS.override(lanes=0):
        z0, mask0 = run()
    assert F.stats()["lanes"] == before + 2
    np.testing.assert_array_equal(z, z0)
    np.testing.assert_array_equal(mask, mask0)
    a, b, c = leaves
    want = np.where(a > 1.0, np.exp(-b), (a + b) * dtype(0.9) / (np.sqrt(c) + dtype(1e-5)))
    want = np.abs(want) ** dtype(1.5) - np.tanh(c)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(z, want, rtol=tol, atol=tol)


def test_lanes_leave_strided_broadcast_and_ragged_maps_to_the_scalar_kernel() -> None:
    from burnbook.backend.taichi.settings import SETTINGS

    if not SETTINGS.lanes:
        pytest.skip("lanes are off on this arch")
    x = RNG.standard_normal((16, 8), np.float32)
    cases = {
        "ragged": (RNG.standard_normal((5, 3), np.float32), RNG.standard_normal((5, 3), np.float32)),
        "broadcast": (x, RNG.standard_normal((1, 8), np.float32)),
    }
    for name, (a, b) in cases.items():
        before = F.stats()["lanes"]
        got = F.float_into_data(F.float_mul(F.float_add_scalar(f(a), 1.0), f(b)))
        assert F.stats()["lanes"] == before, name
        np.testing.assert_allclose(got, (a + 1) * b, rtol=1e-6)
    before = F.stats()["lanes"]
    strided = F.float_permute(f(x.T.copy()), (1, 0))
    got = F.float_into_data(F.float_exp(F.float_mul_scalar(strided, 0.5)))
    assert F.stats()["lanes"] == before
    np.testing.assert_allclose(got, np.exp(0.5 * x), rtol=1e-6)


@pytest.mark.parametrize("n", [8, 4096, 4096 * 3 + 8 * 5])
def test_a_dense_sum_in_lanes_equals_the_scalar_kernels(n: int) -> None:
    """A full f64-accumulated sum over dense operands runs as `fused_lanes`,
    each task folding its block into 8 lane sums in the scalar loop's order:
    the same bits as with lanes off, and NumPy's sum to rounding."""
    from burnbook.backend.taichi.settings import SETTINGS

    if not SETTINGS.lanes:
        pytest.skip("lanes are off on this arch")
    rng = np.random.default_rng(n)
    xs, ys = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)

    def total():
        x, y = f(xs), f(ys)
        z = F.float_clamp(F.float_sub(F.float_mul(F.float_exp(F.float_neg(F.float_add_scalar(F.float_mul(x, y), 1.0))),
                                                  x), F.float_mul_scalar(y, 0.5)), 0.0, 1e30)
        return F.float_into_data(F.float_sum(F.float_add(F.float_mul(z, z), x)))

    before = F.stats()["lanes"]
    got = total()
    assert F.stats()["lanes"] == before + 1
    with SETTINGS.override(lanes=0):
        scalar = total()
    np.testing.assert_array_equal(got, scalar)
    z = np.maximum(np.exp(-(xs * ys + 1)) * xs - 0.5 * ys, 0)
    np.testing.assert_allclose(got, (z.astype(np.float64) ** 2 + xs).sum(), rtol=1e-6)
