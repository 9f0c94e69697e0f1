"""Chapter 28's checks accept a complete backend and refuse the skeleton and
the typical wrong ones, by op name: a wrong math op, NumPy's flooring Int
division, a reduction that drops the dim, a creation op with the wrong
element type, a wrong module op, a class that is not a backend."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.backend.base import Backend
from burnbook.book import exercises

ex = exercises("28")


def todo(what):
    def op(*args):
        raise NotImplementedError(f"your code: {what}")
    return staticmethod(op)


@pytest.mark.parametrize("n", range(1, 7))
def test_a_complete_backend_passes(n):
    class Complete(NdArray):
        """Every op NdArray's: a backend that passes the whole suite."""
    verdict = ex[n].verdict(Complete)
    assert verdict.ok, verdict.message


def test_the_skeleton_and_an_empty_class_are_reported_missing_by_name():
    class Skeleton(NdArray):
        float_full = todo("float_full(shape, value, device, dtype=np.float32)")
        float_exp = todo("float_exp(p)")
    message = ex[1].verdict(Skeleton).message
    assert message.startswith("not yet:") and "1 op is missing or still raises NotImplementedError (float_full)" \
        in message
    assert "(float_exp)" in ex[3].verdict(Skeleton).message
    assert "step 1 does not pass yet" in ex[6].verdict(Skeleton).message

    class Empty(Backend):
        pass
    for n in range(1, 7):
        message = ex[n].verdict(Empty).message
        assert message.startswith("not yet:") and "default_device" in message


def test_a_wrong_op_fails_by_name():
    class WrongExp(NdArray):
        float_exp = staticmethod(np.exp2)

    class FlooringDiv(NdArray):
        int_div = staticmethod(np.floor_divide)

    class DropsTheDim(NdArray):
        float_sum_dim = staticmethod(lambda p, dim: p.sum(axis=dim))

    class Float64Full(NdArray):
        float_full = staticmethod(lambda shape, value, device, dtype=np.float32: np.full(shape, value))
    assert "cases fail, on float_exp" in ex[3].verdict(WrongExp).message
    assert "int_div" in ex[5].verdict(FlooringDiv).message
    assert "float_sum_dim" in ex[4].verdict(DropsTheDim).message
    assert "float_full" in ex[1].verdict(Float64Full).message
    assert ex[1].verdict(WrongExp).ok and ex[2].verdict(FlooringDiv).ok   # other families are unaffected


def test_the_conv2d_check_catches_a_wrong_module_op_and_a_wrong_primitive():
    class WrongConv(NdArray):
        @staticmethod
        def conv2d(x, weight, bias, options):
            return NdArray.conv2d(x, weight, None, options)   # drops the bias

    class WrongMatmul(NdArray):
        float_matmul = staticmethod(lambda a, b: np.swapaxes(np.matmul(a, b), -1, -2) if a.shape[-2] ==
                                    b.shape[-1] else np.matmul(a, b) * 1.5)
    assert "module cases fail, on conv2d" in ex[6].verdict(WrongConv).message
    assert "step 2 does not pass yet" in ex[6].verdict(WrongMatmul).message


def test_a_backend_on_the_default_conv2d_has_no_conv2d_of_its_own():
    class DefaultConv(NdArray):
        conv2d = inspect.getattr_static(Backend, "conv2d")   # the protocol's default, made of primitives
    assert "DefaultConv has no conv2d of its own" in ex[6].verdict(DefaultConv).message
    assert ex[5].verdict(DefaultConv).ok


def test_a_class_that_is_not_a_backend_is_named():
    class NotABackend:
        float_exp = staticmethod(np.exp)
    message = ex[1].verdict(NotABackend).message
    assert "pass your backend class (a subclass of Backend)" in message
