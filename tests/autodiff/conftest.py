"""Fixtures of the autodiff suite: `backend` runs each test on Autodiff[NdArray],
Autodiff[Taichi], Autodiff[Fusion[Taichi]] and
Autodiff[Strict] (NdArray behind opaque primitives that check the protocol, so
a backward rule that is not backend-agnostic fails here)."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.autodiff import Autodiff, AutodiffTensor
from burnbook.backend.ndarray import NdArray


def _inner(name: str):
    if name == "ndarray":
        return NdArray
    if name == "strict":
        from .strict import Strict
        return Strict
    from ..backend.conftest import _fusion, _taichi

    if name == "fusion-taichi":
        return _fusion()
    return _taichi()  # skipped where the device BURNBOOK_TAICHI_ARCH names does not exist


@pytest.fixture(params=["ndarray", "taichi", "fusion-taichi", "strict"])
def backend(request):
    """The Autodiff backend under test."""
    return Autodiff[_inner(request.param)]


@pytest.fixture
def nd():
    return Autodiff[NdArray]


def make(B, values, dtype=np.float32, grad=False):
    """A Float primitive of B from nested lists or an array (optionally tracked)."""
    p = B.float_from_data(np.asarray(values, dtype=dtype), B.default_device())
    return B.float_require_grad(p) if grad else p


def host(B, p):
    """Host NumPy copy of a Float primitive of B or of its inner backend."""
    if isinstance(p, AutodiffTensor) or not B.is_autodiff:
        return np.asarray(B.float_into_data(p))
    return np.asarray(B.InnerBackend.float_into_data(p))
