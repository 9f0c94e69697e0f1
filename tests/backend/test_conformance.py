"""The conformance cases of `burnbook.testing` as pytest items: the same
cases `check_backend(B)` runs in a notebook, one item per case and backend,
so a failing case shows by name (`test_case[taichi-float_exp[3x4]]`).

NdArray and Taichi run every case of `CASES`; Autodiff[NdArray] runs every
backward case of `GRAD_CASES` against finite differences. (`Fusion[Taichi]`
and `Autodiff[...]` over the other backends are checked whole by
tests/test_testing_api.py's report tests and by the other files here.)
"""

from __future__ import annotations

import pytest

from burnbook.backend import NdArray
from burnbook.testing import CASES, GRAD_CASES, run_case, run_grad_case

from .conftest import _taichi

_BACKENDS = {"ndarray": lambda: NdArray, "taichi": _taichi}


@pytest.fixture(scope="module", params=list(_BACKENDS))
def conformance_backend(request):
    return _BACKENDS[request.param]()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(conformance_backend, case):
    outcome = run_case(conformance_backend, case)
    assert outcome.status == "passed", f"{case.op}: {outcome}" + (
        f"\n  inputs {outcome.failure.inputs}\n  expected {outcome.failure.expected}\n"
        f"  got      {outcome.failure.got}" if outcome.failure else "")


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_backward_case(case):
    from burnbook.autodiff import Autodiff

    outcome = run_grad_case(Autodiff[NdArray], case)
    assert outcome.status == "passed", f"{case.op}: {outcome}"
