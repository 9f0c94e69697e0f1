"""NdArray's matmul (`backend/ndarray/matmul.py`): one BLAS thread a call, a
large product as two halves on two Python threads; the values are
`np.matmul`'s either way, broadcast batch dims included."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook._blas import openblas_threads
from burnbook.backend import NdArray
from burnbook.backend.ndarray import matmul as mm


@pytest.mark.parametrize("ls, rs", [((6, 1, 5, 7), (1, 1, 7, 9)), ((1, 6, 5, 7), (6, 1, 7, 9)),
                                    ((9, 33), (33, 17)), ((2, 9, 33), (1, 33, 17)), ((1, 4), (4, 3)),
                                    ((3,), (3, 2))])
def test_halves_on_two_threads_equal_one_call(monkeypatch, ls, rs) -> None:
    found = openblas_threads()
    if found is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS: no thread count to read")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(ls).astype(np.float32), rng.standard_normal(rs).astype(np.float32)
    want = np.matmul(a, b)
    calls = []
    halves = mm.both
    monkeypatch.setattr(mm, "SPLIT_FROM", 0)
    monkeypatch.setattr(mm, "_OPENBLAS_SERIAL_BELOW", 0)
    monkeypatch.setattr(mm, "TWO_CORES", True)
    monkeypatch.setattr(mm, "both", lambda *args: calls.append(1) or halves(*args))
    before = int(found[0]())
    try:
        found[1](2)
        got = NdArray.float_matmul(a, b)
        assert int(found[0]()) == 2   # the count is restored after the call
    finally:
        found[1](before)
    splittable = len(ls) == len(rs) and (want.shape[-2] > 1 or (want.ndim > 2 and want.shape[0] > 1))
    assert len(calls) == (1 if splittable else 0)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_small_products_are_np_matmul_itself() -> None:
    a, b = np.eye(2, dtype=np.float32), np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(NdArray.float_matmul(a, b), b)
