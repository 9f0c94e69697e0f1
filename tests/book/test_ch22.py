"""Chapter 22's checks accept right answers and refuse the typical wrong ones.
The kernels here are compiled once each (three small element-wise kernels)."""

import numpy as np
import taichi as ti

from burnbook.autodiff import taichi_op
from burnbook.backend import Taichi
from burnbook.book import exercises

ex = exercises("22")
Array2 = ti.types.ndarray(ndim=2)


def test_predict_the_shapes():
    assert ex[1].verdict([(4, 2, 2), (3, 2, 5), None]).ok
    assert ex[1].verdict(([4, 2, 2], [3, 2, 5], None)).ok
    assert "larger batch" in ex[1].verdict([(1, 2, 2), (3, 2, 5), None]).message       # lhs's batch of one kept
    assert "off at" in ex[1].verdict([(4, 2, 2), (3, 5, 2), None]).message             # rows and columns swapped
    assert "is refused" in ex[1].verdict([(4, 2, 2), (3, 2, 5), (3, 2, 2)]).message   # batches 2 and 3 broadcast?
    assert "not refused" in ex[1].verdict([(4, 2, 2), None, None]).message


def test_without_a_reference():
    rng = np.random.default_rng(1)
    lhs, rhs, bias = (rng.normal(size=s).astype(np.float32) for s in ([2, 2, 3], [2, 3, 2], [1, 2, 2]))
    out = np.maximum(lhs @ rhs + bias, 0)
    error = NotImplementedError("op 'fused_matmul_add_relu' is a Taichi kernel ...; 'ndarray' needs a reference "
                                "composition: taichi_op(..., reference=fn)")
    assert ex[2].verdict((error, out)).ok
    assert "ValueError" in ex[2].verdict((ValueError("reference"), out)).message
    assert "what is missing" in ex[2].verdict((NotImplementedError("no"), out)).message
    assert "as before" in ex[2].verdict((error, lhs @ rhs + bias)).message       # the ReLU left out
    assert "exception you caught" in ex[2].verdict(("NotImplementedError", out)).message


def _make(kernel, reference=lambda x: x * x + 1.0):
    Taichi.default_device()  # Taichi initialised before a kernel is defined
    return taichi_op(ti.kernel(kernel), output_shape=lambda shape: tuple(shape), reference=reference).apply


def square_plus_one(x: Array2, out: Array2, dtype: ti.template()):
    for i, j in ti.ndrange(out.shape[0], out.shape[1]):
        v = x[i, j]
        out[i, j] = v * v + ti.cast(1, dtype)


def square_plus_two(x: Array2, out: Array2, dtype: ti.template()):
    for i, j in ti.ndrange(out.shape[0], out.shape[1]):
        v = x[i, j]
        out[i, j] = v * v + ti.cast(2, dtype)


def rows_only(x: Array2, out: Array2, dtype: ti.template()):
    for i in range(out.shape[0]):  # only the first column: misses every shape wider than one
        out[i, 0] = x[i, 0] * x[i, 0] + ti.cast(1, dtype)


def test_your_own_kernel():
    assert ex[3].verdict(_make(square_plus_one)).ok
    assert "the same amount" in ex[3].verdict(_make(square_plus_two)).message
    assert "reference composition" in ex[3].verdict(_make(square_plus_one, reference=lambda x: x * x)).message
    assert "off at" in ex[3].verdict(_make(rows_only)).message
    detached = ex[3].verdict(lambda t: (t * t + 1.0).detach() if t._B.is_autodiff else t * t + 1.0)
    assert "backward through your kernel" in detached.message or "no gradient" in detached.message
    assert "gradient of x" in ex[3].verdict(lambda t: t * t.detach() + 1.0).message  # one path to x cut
