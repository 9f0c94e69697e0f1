"""`check_autodiff(B)`: every differentiable op's backward rule on an
autodiff backend, against central finite differences (`GRAD_CASES`, through
`burnbook.autodiff.check_grad`, the one finite-difference routine of the
project). `check_autodiff`'s docstring lists the entry points it calls: what
a hand-written engine (the book's "Build your own autodiff") must provide.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import numpy as np

from ..autodiff.check import check_grad
from .case import GradCase
from .cases import select
from .grad_cases import GRAD_CASES
from .report import Failure, Missing, Report
from .runner import _NAMED_OP, Outcome, _record, backend_label, default_device, lacks, progress_bar

# what check_grad calls on every case, besides the case's own op
ENTRY_POINTS: tuple[str, ...] = (
    "float_from_data", "float_into_data", "float_shape", "float_dtype",
    "float_require_grad", "float_backward", "float_grad", "float_sum", "float_mul",
)
# finite differences in f32 (a backend with no f64): a larger step, looser tolerances
_F32 = {"eps": 1e-3, "rtol": 2e-2, "atol": 2e-3}


def iter_grad_cases(families: Iterable[str] | str | None = None,
                    ops: Iterable[str] | None = None) -> Iterator[GradCase]:
    """The cases of `check_autodiff` for `families` and `ops` (all when None)."""
    return select(GRAD_CASES, families, ops)


def supports_f64(B: type, device: Any) -> bool:
    """Whether `B` keeps float64 data as float64 (then the check runs in f64)."""
    try:
        p = B.float_from_data(np.zeros(1, np.float64), device)
        return np.dtype(B.float_dtype(p)) == np.float64
    except Exception:   # any failure means: not usable in f64; the cases say the rest
        return False


def run_grad_case(B: type, case: GradCase, device: Any = None, dtype: Any = None) -> Outcome:
    """Check one differentiable op of the autodiff backend `B` against finite
    differences; never raises for what the backend does. `dtype` (float64
    or float32) defaults to float64 where `B` supports it."""
    needs = list(dict.fromkeys((case.op,) + ENTRY_POINTS + case.uses))
    absent = [op for op in needs if lacks(B, op)]
    if lacks(B.InnerBackend, "float_into_data"):
        absent.append(f"{getattr(B.InnerBackend, '__name__', 'InnerBackend')}.float_into_data")
    arrays = case.arrays()
    if device is None:
        device, problem = default_device(B)
        if problem == "missing":
            absent = ["default_device"] + absent
        elif problem is not None:
            return Outcome(case, "failed", failure=Failure(
                case.name, case.op, case.family, ", ".join(f"f64{list(a.shape)}" for a in arrays),
                "a device", "an exception", f"default_device() {problem}"))
    if absent:
        return Outcome(case, "missing", missing=Missing(case.name, case.op, case.family, tuple(absent)))
    dtype = np.dtype(np.float64 if supports_f64(B, device) else np.float32) if dtype is None else np.dtype(dtype)
    arrays = [a.astype(dtype) for a in arrays]
    inputs = ", ".join(f"{'f64' if dtype == np.float64 else 'f32'}{list(a.shape)}" for a in arrays)
    tolerances = {} if dtype == np.float64 else _F32
    try:
        with np.errstate(all="ignore"):
            result = check_grad(lambda *xs: case.fn(B, *xs), *arrays, backend=B,
                                names=[f"input {i}" for i in range(len(arrays))],
                                raise_error=False, **tolerances)
    except NotImplementedError as err:
        named = _NAMED_OP.search(str(err))
        return Outcome(case, "missing", missing=Missing(case.name, case.op, case.family,
                                                       (named.group(1) if named else case.op,)))
    except Exception as err:   # the backend's exception is the finding, never an escape
        message = f"raised {type(err).__name__}: {err}".splitlines()[0][:300]
        return Outcome(case, "failed", failure=Failure(case.name, case.op, case.family, inputs,
                                                       "gradients", type(err).__name__, message))
    if result.ok:
        return Outcome(case, "passed")
    bad = next(c for c in result.inputs if not c.ok)
    if bad.max_abs == float("inf") and bad.worst_index == ():
        message = (f"the gradient of {bad.name} does not have the input's shape {list(bad.shape)} "
                   "(a broadcast input's gradient is summed back to its shape)")
    elif bad.missing:
        message = f"backward gave no gradient for {bad.name} {list(bad.shape)}"
    else:
        message = f"backward wrong for {bad.line()[5:]}"
    return Outcome(case, "failed", failure=Failure(
        case.name, case.op, case.family, inputs, f"finite differences {bad.numeric:.7g}",
        f"backward {bad.analytic:.7g}" + (" (no gradient)" if bad.missing else ""), message))


def check_autodiff(B: type, *, families: Iterable[str] | str | None = None,
                   ops: Iterable[str] | None = None, progress: bool = True, dtype: Any = None) -> Report:
    """Check the backward rule of every differentiable op of the autodiff
    backend `B` (`Autodiff[NdArray]`, `Autodiff[Taichi]`, or your own engine)
    against central finite differences; return a `Report` like
    `check_backend`'s (`families` and `ops` select cases as there;
    `failures` name the op and the input whose gradient is off).

    Runs in float64 where `B` keeps float64 data (`dtype` forces float64 or
    float32); float32 differences use a larger step and tolerances of 2e-2
    relative, 2e-3 absolute (float64: 1e-6 and 1e-7, check_grad's).

    Entry points it calls (Burn's `AutodiffBackend` and a few plain ops),
    all class attributes or class/static methods of `B` (`ENTRY_POINTS`):

    - `is_autodiff = True`; `InnerBackend`, the backend gradients live on;
      `default_device()`;
    - `float_from_data(array, device)`, `float_into_data(p)`,
      `float_shape(p)`, `float_dtype(p)`: make inputs, read outputs;
    - `float_require_grad(p)`: p, tracked as a leaf;
    - `float_backward(p)`: the gradients of p (a container of any type; the
      seed is ones of p's shape);
    - `float_grad(p, grads)`: p's gradient as an `InnerBackend` primitive,
      read with `InnerBackend.float_into_data`; None when p got none;
    - `float_sum(p)` (shape (1,)) and `float_mul(a, b)`: the checked scalar
      is `sum(f(xs) * w)` for a fixed random `w`, so a gradient sent to the
      wrong element is caught;
    - each case's own op (`float_exp`...) and the ops in its `uses`
      (`int_from_data` for indices, `bool_from_data` for masks).

    A case whose op or entry point is absent, still the protocol's stub, or
    raises NotImplementedError counts as missing: an engine with rules for
    a handful of ops gets a report of what it has and what it lacks. No
    Tensor method is used; everything goes through these class methods.

        >>> from burnbook.backend import Autodiff, NdArray
        >>> check_autodiff(Autodiff[NdArray], families=["math"], progress=False).ok
        True
    """
    if not isinstance(B, type):
        raise TypeError(f"check_autodiff takes a backend class (Autodiff[NdArray]...), got {B!r}")
    if not getattr(B, "is_autodiff", False):
        raise TypeError(f"check_autodiff: {backend_label(B)} has no autodiff (is_autodiff is False); "
                        f"check Autodiff[{backend_label(B)}], or set is_autodiff = True on your engine")
    cases = list(iter_grad_cases(families, ops))
    report = Report(backend=backend_label(B), title="check_autodiff")
    device, problem = default_device(B)   # None when it fails: each case then says why
    if dtype is None and problem is None:
        dtype = np.float64 if supports_f64(B, device) else np.float32
    for case in progress_bar(cases, f"check_autodiff({report.backend})", progress):
        _record(report, run_grad_case(B, case, device, dtype))
    return report
