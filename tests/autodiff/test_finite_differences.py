"""Every differentiable float op's backward against central finite differences
(float64), on every backend, in f32 (rtol 1e-3) and f64 (rtol 1e-6)."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.autodiff import GradCheckError, check_grad
from burnbook.backend.base import FLOAT_OPS

from .cases import CASES, NOT_DIFFERENTIABLE


def test_every_float_op_has_a_rule():
    """Autodiff's class body declares every Float op: tracked (its rule in the
    op table) or one of the kinds with no gradient."""
    from burnbook.autodiff import Autodiff
    from burnbook.autodiff.declarations import compares, creates, reads
    from burnbook.autodiff.ops import TABLE
    declared = Autodiff._declarations()
    no_gradient = (creates, reads, compares)
    assert [op for op in FLOAT_OPS if not (op in TABLE or any(declared.get(op) is d for d in no_gradient))] == []
    assert [op for op in FLOAT_OPS if op not in declared] == []


def test_every_float_op_has_a_case():
    covered = {c.op for c in CASES}
    missing = [op for op in FLOAT_OPS if op not in covered and op not in NOT_DIFFERENTIABLE]
    assert missing == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_gradient_matches_finite_differences(backend, case, dtype):
    rng = np.random.default_rng(0)
    arrays, ctx = case.gen(rng)
    arrays = [a.astype(dtype) for a in arrays]
    result = check_grad(lambda *xs: case.fn(backend, ctx, *xs), *arrays, backend=backend,
                        names=[f"{case.id} input {i}" for i in range(len(arrays))])
    assert result.ok


def test_check_grad_reports_a_wrong_gradient(nd):
    """A deliberately wrong backward is caught, naming the input and the error."""
    from burnbook.autodiff import Backward, Tracked, Untracked

    class WrongSquare(Backward):
        op = "wrong_square"

        def backward(self, ops, grads):
            B = ops.backend
            (x,) = ops.state
            g = grads.consume(ops.node)
            grads.register(ops.parents[0], B.float_mul_scalar(B.float_mul(g, x), 3.0))  # should be 2

    def square(x):
        inner = nd.InnerBackend
        match WrongSquare().prepare([x.node], nd).stateful():
            case Tracked() as prep:
                return prep.finish((x.primitive,), inner.float_mul(x.primitive, x.primitive))
            case Untracked() as prep:
                return prep.finish(inner.float_mul(x.primitive, x.primitive))

    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(GradCheckError) as err:
        check_grad(square, x, backend=nd, names=["x"])
    msg = str(err.value)
    assert "FAIL x [3]" in msg and "max abs err" in msg and "max rel err" in msg
    result = check_grad(square, x, backend=nd, raise_error=False)
    assert not result.ok and result.inputs[0].max_rel == pytest.approx(0.5)


def test_check_grad_with_reference(nd):
    """A composition checked against a reference: forward and gradients agree."""
    def softplus(x):
        return nd.float_log1p(nd.float_exp(x))

    def reference(x):
        return nd.float_log(nd.float_add_scalar(nd.float_exp(x), 1.0))

    res = check_grad(softplus, np.linspace(-2, 2, 5), backend=nd, reference=reference)
    assert res.ok and len(res.inputs) == 2
