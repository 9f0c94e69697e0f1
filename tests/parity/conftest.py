"""The `B` fixture: every parity case runs on Autodiff[NdArray] (id
`ndarray`) and Autodiff[Taichi] (id `taichi`, on the arch
BURNBOOK_TAICHI_ARCH names), so `-k taichi` selects the Taichi half as in
tests/backend."""

from __future__ import annotations

import pytest

from ..backend.conftest import BACKENDS

PARITY_BACKENDS = {"ndarray": "autodiff-ndarray", "taichi": "autodiff-taichi"}


@pytest.fixture(scope="session", params=list(PARITY_BACKENDS), ids=list(PARITY_BACKENDS))
def B(request):
    """The autodiff backend under test."""
    return BACKENDS[PARITY_BACKENDS[request.param]]()
