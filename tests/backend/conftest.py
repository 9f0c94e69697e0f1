"""The `backend` fixture: every test of tests/backend runs once per backend,
as Burn's backend-tests crate does.

Taichi and Autodiff are imported lazily: a backend whose module is not
importable (yet) is skipped with the import error as the reason, so the rest
of the suite still runs.
"""

from __future__ import annotations

import functools

import pytest

from burnbook.backend import NdArray


@functools.cache
def _taichi_start_error() -> str | None:
    """Why Taichi cannot start on the arch BURNBOOK_TAICHI_ARCH names (None if it can)."""
    import numpy as np
    from burnbook.backend.taichi import Taichi

    try:
        Taichi.float_from_data(np.zeros(1, np.float32), Taichi.default_device())
    except RuntimeError as err:
        if "cannot start" in str(err):
            return str(err)
        raise
    return None


def _taichi():
    """The Taichi backend on the arch BURNBOOK_TAICHI_ARCH names (cpu by
    default); skipped only where that device does not exist here."""
    try:
        from burnbook.backend.taichi import Taichi
    except ImportError as err:
        pytest.skip(f"Taichi backend not importable: {err}")
    error = _taichi_start_error()
    if error is not None:
        pytest.skip(error)
    return Taichi


def _autodiff(inner):
    try:
        from burnbook.autodiff import Autodiff
    except ImportError as err:
        pytest.skip(f"Autodiff not importable: {err}")
    return Autodiff[inner]


def _fusion():
    from burnbook.backend.fusion import Fusion

    return Fusion[_taichi()]


BACKENDS = {
    "ndarray": lambda: NdArray,
    "taichi": _taichi,
    "fusion-taichi": _fusion,
    "autodiff-ndarray": lambda: _autodiff(NdArray),
    "autodiff-taichi": lambda: _autodiff(_taichi()),
    "autodiff-fusion-taichi": lambda: _autodiff(_fusion()),
}


@pytest.fixture(scope="session", params=list(BACKENDS), ids=list(BACKENDS))
def backend(request):
    """The backend class under test (NdArray, Taichi, Autodiff[...])."""
    return BACKENDS[request.param]()


@pytest.fixture(scope="session")
def device(backend):
    return backend.default_device()
