"""`check_backend(B)` and `run_case(B, case)`: run the conformance cases on a
backend class and collect a `Report`.

A case never lets an exception escape: an op the backend lacks (its method
is still the protocol's stub, or it raises NotImplementedError) makes the
case *missing*; any other exception makes it *failed*, with the exception's
message. So an empty `Backend` subclass gets a report with everything
missing, and a half-written backend a report that says which op is next.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..backend.protocol import is_stub
from .case import Case
from .cases import iter_cases
from .compare import compare, describe
from .report import Failure, Missing, Report

_KIND = {"f": "float", "i": "int", "u": "int", "b": "bool"}
_NAMED_OP = re.compile(r"does not implement (\w+)")


@dataclass(frozen=True)
class Outcome:
    """How one case ended: `status` is "passed", "failed" or "missing";
    `failure` or `missing` says why."""

    case: Any
    status: str
    failure: Failure | None = None
    missing: Missing | None = None

    def __str__(self) -> str:
        if self.failure is not None:
            return f"{self.case.name}: failed: {self.failure.message}"
        if self.missing is not None:
            return f"{self.case.name}: missing: needs {', '.join(self.missing.needs)}"
        return f"{self.case.name}: {self.status}"


def lacks(B: type, op: str) -> bool:
    """Whether backend class `B` has no implementation of `op`: absent, or
    only the protocol's stub (see `burnbook.backend.protocol.is_stub`)."""
    fn = getattr(B, op, None)
    return not callable(fn) or is_stub(fn)


def backend_label(B: type) -> str:
    """`B`'s name for a report: its repr (`NdArray`, `Autodiff[NdArray]`)."""
    text = repr(B)
    return getattr(B, "__name__", text) if text.startswith("<") else text


def default_device(B: type) -> tuple[Any, str | None]:
    """`(device, None)`; `(None, "missing")` when B has no `default_device`
    (NotImplementedError, as `Backend`'s own); `(None, "raised ...")` when
    it fails otherwise."""
    try:
        return B.default_device(), None
    except NotImplementedError:
        return None, "missing"
    except Exception as err:   # a broken backend is reported, never raised
        return None, f"raised {type(err).__name__}: {err}".splitlines()[0][:200]


def needed_ops(case: Case, arrays: tuple, expected: Any = None) -> list[str]:
    """The protocol ops a case calls: its op, what moves its inputs in and its
    outputs out (`float_from_data`, `float_into_data`...), and its `uses`."""
    ops = [case.op]
    for a in arrays:
        ops.append(f"{_KIND[a.dtype.kind]}_from_data")
    outs = expected if isinstance(expected, tuple) else (expected,)
    for e in outs:
        if isinstance(e, np.ndarray):
            ops.append(f"{_KIND[e.dtype.kind]}_into_data")
    ops += list(case.uses)
    return list(dict.fromkeys(ops))


def ops_needed(families: Iterable[str] | str | None = None) -> list[str]:
    """Every protocol op the cases of `families` call (all families when
    None), sorted: what a backend implements for all of them to be
    attempted, besides `default_device()`."""
    ops: set[str] = set()
    for case in iter_cases(families):
        arrays = case.arrays()
        with np.errstate(all="ignore"):
            expected = case.reference(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
        ops.update(needed_ops(case, arrays, expected))
    return sorted(ops)


def run_case(B: type, case: Case, device: Any = None) -> Outcome:
    """Run one case on backend class `B` (on `device`, default B's own) and
    say how it ended. Never raises for what the backend does."""
    arrays = case.arrays()
    with np.errstate(all="ignore"):
        expected = case.reference(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
    needs = needed_ops(case, arrays, expected)
    absent = [op for op in needs if lacks(B, op)]
    inputs = ", ".join(describe(a) for a in arrays)
    if device is None:
        device, problem = default_device(B)
        if problem == "missing":
            absent = ["default_device"] + absent
        elif problem is not None:
            return Outcome(case, "failed", failure=Failure(case.name, case.op, case.family, inputs,
                                                           "a device", "an exception",
                                                           f"default_device() {problem}"))
    if absent:
        return Outcome(case, "missing", missing=Missing(case.name, case.op, case.family, tuple(absent)))
    try:
        with np.errstate(all="ignore"):   # overflow to inf is part of what the cases check
            prims = [_to_backend(B, a, device) for a in arrays]
            got = case.run(B, device, *prims)
            problem = _check(B, expected, got, case)
    except NotImplementedError as err:
        named = _NAMED_OP.search(str(err))
        op = named.group(1) if named else case.op
        return Outcome(case, "missing", missing=Missing(case.name, case.op, case.family, (op,)))
    except Exception as err:   # the backend's exception is the finding, never an escape
        message = f"raised {type(err).__name__}: {err}".strip()
        first = message.splitlines()[0] if message else type(err).__name__
        return Outcome(case, "failed", failure=Failure(case.name, case.op, case.family, inputs,
                                                       "a result", type(err).__name__, first[:300]))
    if problem is None:
        return Outcome(case, "passed")
    message, want, have = problem
    if case.note:
        message = f"{message} [this case: {case.note}]"
    return Outcome(case, "failed", failure=Failure(case.name, case.op, case.family, inputs,
                                                   want, have, message))


def _to_backend(B: type, a: np.ndarray, device: Any) -> Any:
    kind = _KIND[a.dtype.kind]
    p = getattr(B, f"{kind}_from_data")(a, device)
    if kind == "float" and getattr(B, "is_autodiff", False) and not lacks(B, "float_require_grad"):
        p = B.float_require_grad(p)   # an autodiff backend runs its graph-building path
    return p


def _check(B: type, expected: Any, got: Any, case: Case) -> tuple | None:
    """Compare an output (or a tuple of them) with the reference."""
    if isinstance(expected, tuple) and expected and isinstance(expected[0], np.ndarray):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return (f"expected {len(expected)} outputs, got {type(got).__name__}",
                    f"{len(expected)} outputs", repr(got)[:80])
        for i, (e, g) in enumerate(zip(expected, got)):
            problem = _check(B, e, g, case)
            if problem is not None:
                return (f"output {i}: {problem[0]}",) + problem[1:]
        return None
    if isinstance(expected, np.ndarray):
        got = np.asarray(getattr(B, f"{_KIND[expected.dtype.kind]}_into_data")(got))
    return compare(expected, got, case.out_dtype, case.rtol, case.atol)


def progress_bar(items: list, desc: str, progress: bool) -> Iterable:
    """`items` behind a tqdm bar on stderr (cleared when done), or as they are
    when `progress` is False or tqdm is not installed."""
    if not progress:
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=desc, file=sys.stderr, leave=False, unit="case")


def check_backend(B: type, *, families: Iterable[str] | str | None = None,
                  ops: Iterable[str] | None = None, progress: bool = True) -> Report:
    """Run the conformance cases (`burnbook.testing.CASES`) on the backend
    class `B` and return a `Report` (`passed`, `failed`, `missing`,
    `failures`, per-family counts, `missing_ops`, `ok`).

    `B` is any backend class: `NdArray`, `Taichi`, `Fusion[Taichi]`,
    `Autodiff[NdArray]`, or your own `Backend` subclass, however few ops it
    has. `families` limits the run to some of `FAMILIES` ("creation",
    "arithmetic", "math", "comparison", "reductions", "indexing", "layout",
    "int", "bool", "module"), `ops` to the cases of some protocol ops
    (`ops=["float_exp"]`). Each case calls backend methods directly on
    primitives (`B.float_exp(B.float_from_data(array, device))`) and reads
    results back with `B.float_into_data` (`int_`, `bool_` for those kinds),
    so a backend needs `default_device()`, the `*_from_data`/`*_into_data`
    of a kind and the op itself for a case to be attempted. A case whose op
    is missing counts as missing, never as an error.

        >>> from burnbook.backend import NdArray
        >>> check_backend(NdArray, families=["math"], progress=False).ok
        True
    """
    if not isinstance(B, type):
        raise TypeError(f"check_backend takes a backend class (NdArray, Autodiff[NdArray]...), got {B!r}")
    cases = list(iter_cases(families, ops))
    report = Report(backend=backend_label(B), title="check_backend")
    device, _ = default_device(B)   # None when it fails: each case then says why
    for case in progress_bar(cases, f"check_backend({report.backend})", progress):
        _record(report, run_case(B, case, device))
    return report


def _record(report: Report, outcome: Outcome) -> None:
    if outcome.status == "passed":
        report.add_pass(outcome.case.name, outcome.case.family)
    elif outcome.status == "failed":
        report.add_failure(outcome.failure)
    else:
        report.add_missing(outcome.missing)
