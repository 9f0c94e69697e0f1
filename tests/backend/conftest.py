"""The `backend` fixture: every test of tests/backend runs once per backend,
as Burn's backend-tests crate does.

Taichi and Autodiff are imported lazily: a backend whose module is not
importable (yet) is skipped with the import error as the reason, so the rest
of the suite still runs.
"""

from __future__ import annotations

import pytest

from burnbook.backend import NdArray


def _taichi():
    try:
        from burnbook.backend.taichi import Taichi
    except ImportError as err:
        pytest.skip(f"Taichi backend not importable: {err}")
    return Taichi


def _autodiff(inner):
    try:
        from burnbook.autodiff import Autodiff
    except ImportError as err:
        pytest.skip(f"Autodiff not importable: {err}")
    return Autodiff[inner]


BACKENDS = {
    "ndarray": lambda: NdArray,
    "taichi": _taichi,
    "autodiff-ndarray": lambda: _autodiff(NdArray),
    "autodiff-taichi": lambda: _autodiff(_taichi()),
}


@pytest.fixture(scope="session", params=list(BACKENDS), ids=list(BACKENDS))
def backend(request):
    """The backend class under test (NdArray, Taichi, Autodiff[...])."""
    return BACKENDS[request.param]()


@pytest.fixture(scope="session")
def device(backend):
    return backend.default_device()
