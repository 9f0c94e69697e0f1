"""Burn's backend tests as a public API: check any backend, from a notebook
or a test, against one shared set of conformance cases.

    from burnbook.testing import check_backend, check_autodiff
    report = check_backend(MyBackend)      # per family: passed / failed / missing
    report.failures[0].op                  # "float_exp"
    check_autodiff(Autodiff[MyBackend])    # backward rules against finite differences

- case.py      `Case` / `GradCase`: one op, seeded inputs, a NumPy reference
- cases/       the conformance cases, one module per op family (`CASES`, `iter_cases`)
- grad_cases.py  the differentiable-op cases of `check_autodiff` (`GRAD_CASES`)
- compare.py   comparing a result with the reference, in words
- report.py    `Report` and its text and HTML tables
- runner.py    `check_backend`, `run_case`
- autodiff.py  `check_autodiff`, `run_grad_case`
"""

from .autodiff import ENTRY_POINTS, check_autodiff, iter_grad_cases, run_grad_case
from .case import Case, GradCase
from .cases import CASES, iter_cases
from .report import FAMILIES, Failure, FamilyCount, Missing, Report
from .grad_cases import GRAD_CASES
from .runner import Outcome, check_backend, ops_needed, run_case

__all__ = ["CASES", "Case", "ENTRY_POINTS", "FAMILIES", "Failure", "FamilyCount", "GRAD_CASES",
           "GradCase", "Missing", "Outcome", "Report", "check_autodiff", "check_backend",
           "iter_cases", "iter_grad_cases", "ops_needed", "run_case", "run_grad_case"]
