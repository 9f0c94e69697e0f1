"""The `B` fixture: every parity case runs on Autodiff[NdArray] (id
`ndarray`) and Autodiff[Taichi] (id `taichi`, on the arch
BURNBOOK_TAICHI_ARCH names), so `-k taichi` selects the Taichi half as in
tests/backend. B is seeded before each test, so the layers' random initial
weights (which the torch twins copy) are the same in every run."""

from __future__ import annotations

import pytest

from ..backend.conftest import BACKENDS

PARITY_BACKENDS = {"ndarray": "autodiff-ndarray", "taichi": "autodiff-taichi"}


@pytest.fixture(scope="session", params=list(PARITY_BACKENDS), ids=list(PARITY_BACKENDS))
def parity_backend(request):
    return BACKENDS[PARITY_BACKENDS[request.param]]()


@pytest.fixture
def B(parity_backend):
    """The autodiff backend under test, seeded."""
    parity_backend.seed(0)
    return parity_backend
