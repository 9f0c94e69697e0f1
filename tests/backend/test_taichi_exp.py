"""f32 `exp` on Taichi's CPU arch: burnbook's own routine (kernels/mathfn.exp32),
which LLVM vectorises where `ti.exp` calls scalar libm per element. Checked
against NumPy's exp in f64, rounded to f32, over the whole f32 range."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.tensor import Tensor

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def taichi_cpu():
    from burnbook.backend.taichi import Taichi, runtime

    Taichi.float_from_data(np.zeros(1, np.float32), Taichi.default_device())
    if runtime.current.settings.gpu:
        pytest.skip("exp32 is the CPU arch's routine; GPUs keep their native exp")
    return Taichi


def _exp(backend, x: np.ndarray) -> np.ndarray:
    t = Tensor[backend, 1].from_data(x, backend.default_device())
    return t.exp().to_numpy()


def test_taichi_exp32_within_one_ulp_over_the_f32_range(taichi_cpu):
    x = np.linspace(-87.3, 88.72, 2_000_003, dtype=np.float32)
    got = _exp(taichi_cpu, x).astype(np.float64)
    ref = np.exp(x.astype(np.float64))
    _, e = np.frexp(ref.astype(np.float32).astype(np.float64))
    ulps = np.abs(got - ref) / np.ldexp(1.0, e - 24)
    worst = int(ulps.argmax())
    assert ulps.max() <= 1.5, f"exp({x[worst]!r}) = {got[worst]!r}, want {ref[worst]!r}: {ulps.max():.2f} ulp"


def test_taichi_exp32_special_values(taichi_cpu):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.73, 1e30, -88.0, -104.0, -1e30, 1.0], np.float32)
    got = _exp(taichi_cpu, x)
    assert np.isnan(got[0])
    assert got[1] == np.inf and got[5] == np.inf and got[6] == np.inf
    assert got[2] == 0.0 and got[8] == 0.0 and got[9] == 0.0
    assert got[3] == 1.0 and got[4] == 1.0
    assert 0.0 <= got[7] < 1.2e-38           # below the normal range: flushed or subnormal
    assert got[10] == pytest.approx(np.e, rel=2e-7)
