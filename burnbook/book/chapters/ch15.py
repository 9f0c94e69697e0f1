"""Checks for chapter 15, Record.

Sizes and bounds come from counting (4 or 2 bytes a value, the chapter's
measured 336 bytes of overhead, f16's 11 significant bits); the reader's
`record_diff` is tried on record pairs whose differences are known because
the check made them."""

from __future__ import annotations

import numpy as np

from burnbook import nn
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, compare_function, describe
from burnbook.module import Module

TITLE = "Record"

_OVERHEAD = 336  # bytes besides the values in the chapter's BinFileRecorder files (3,672 - 3,336)


def _sizes(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AnswerError(f"your answer is {describe(answer)}; pass three numbers: (parameters, "
                          "bytes of model-full.bin, bytes of model-half.bin)")
    params, full, half = (float(as_array(v, w).reshape(-1)[0]) if as_array(v, w).size == 1 else None
                          for v, w in zip(answer, ("the parameters", "the full size", "the half size")))
    if None in (params, full, half):
        return "each of the three answers must be one number"
    right = 10 * 128 + 128 + 128 * 2 + 2
    if params == 10 * 128 + 128 * 2:
        return "your parameter count leaves out the biases"
    if params != right:
        return "your parameter count is not that of Linear(10, 128) and Linear(128, 2)"
    for got, width, name in ((full, 4, "model-full.bin"), (half, 2, "model-half.bin")):
        if abs(got - width * right) < 8:
            return f"your size of {name} counts the values only: the file also holds names, shapes and a checksum"
        if abs(got - (width * right + _OVERHEAD)) > 32:
            return f"your size of {name} is not about {width} bytes a value plus the overhead"
    return None


def _bound(answer) -> str | None:
    rng = np.random.default_rng(15)
    inputs = [(rng.uniform(-0.316, 0.316, (10, 64)).astype(np.float32),),
              (rng.normal(0.0, 3.0, (7,)).astype(np.float32),),
              (np.array([[-12.5, 0.25], [1e-3, 4.0]], np.float32),)]
    problem = compare_function(answer, lambda w: np.abs(w).max() * 2.0 ** -11, inputs,
                               what="your half_error_bound", rtol=1e-5, atol=1e-12)
    if problem is None:
        return None
    got = [as_array(call_reader(answer, *args, what="your half_error_bound")) for args in inputs]
    for says, rule in (
            ("your bound uses f32's precision (24 bits); the record keeps f16 (11 significant bits)",
             lambda w: np.abs(w).max() * 2.0 ** -24),
            ("your bound is twice the largest change: f16 keeps 11 significant bits, not 10",
             lambda w: np.abs(w).max() * 2.0 ** -10),
            ("your bound scales with the mean |w|; the largest change comes with the largest |w|",
             lambda w: np.abs(w).mean() * 2.0 ** -11)):
        if all(g.size == 1 and np.isclose(float(g.reshape(-1)[0]), rule(args[0]), rtol=1e-5, atol=0)
               for g, args in zip(got, inputs)):
            return says
    return problem


def _edit(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (the exception the edited file "
                          "gives, the loaded weight[0, 0] once the checksum is gone)")
    error, value = answer
    name = error.__name__ if isinstance(error, type) else error if isinstance(error, str) else None
    if name is None:
        return f"the first answer is {describe(error)}; pass the exception class or its name"
    name = name.strip()
    if name.lower() in ("none", "nothing"):
        return "the edited file does not load as it is: what guards the values against a change?"
    if name != "RecordError":
        return f"the edited file is not refused with {name}; records have their own error"
    return compare(value, 1.5, "the loaded weight[0, 0]", rtol=0, atol=1e-6)


class _Pair(Module):
    """Two Linear layers, the shape of the chapter's model."""

    linear_in: nn.Linear
    linear_out: nn.Linear


def _diff_cases() -> list[tuple[str, object, object, dict]]:
    """(what, record a, record b, {path: largest difference or None for a shape change})."""
    NdArray.seed(15)
    device = NdArray.default_device()
    model = _Pair(linear_in=nn.LinearConfig(6, 4).init(device), linear_out=nn.LinearConfig(4, 2).init(device))
    fresh = _Pair(linear_in=model.linear_in, linear_out=nn.LinearConfig(4, 2).init(device))
    wider = _Pair(linear_in=model.linear_in, linear_out=nn.LinearConfig(4, 3).init(device))

    def largest(a: Module, b: Module) -> dict:
        out = {}
        for (path, p), (_, q) in zip(a.named_params(), b.named_params()):
            x, y = p.val().to_numpy().astype(np.float64), q.val().to_numpy().astype(np.float64)
            if x.shape != y.shape:
                out[path] = None
            elif not np.array_equal(x, y):
                out[path] = float(np.abs(x - y).max())
        return out
    return [("a record and itself", model.into_record(), model.into_record(), {}),
            ("a record and one with a fresh linear_out", model.into_record(), fresh.into_record(),
             largest(model, fresh)),
            ("a record and one whose linear_out has 3 outputs", model.into_record(), wider.into_record(),
             largest(model, wider))]


def _record_diff(answer) -> str | None:
    if not callable(answer):
        raise AnswerError(f"your answer is {describe(answer)}; pass the function record_diff(a, b)")
    for what, a, b, expected in _diff_cases():
        got = call_reader(answer, a, b, what="your record_diff", on=f"on {what}")
        if not isinstance(got, dict):
            return (f"your record_diff returned {describe(got)} on {what}; return a dict "
                    "{path: largest difference, or None where the shapes differ}")
        if set(got) != set(expected):
            missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected), key=str)
            return (f"on {what}, your record_diff names {sorted(got, key=str)}"
                    + (f"; it misses {len(missing)} parameter(s) that differ" if missing else "")
                    + (f"; it names {len(extra)} that do not differ" if extra else ""))
        for path, largest in expected.items():
            if largest is None:
                if got[path] is not None:
                    return f"on {what}, {path} changes shape: give None there, not a difference"
                continue
            problem = compare(got[path], largest, f"the difference of {path} on {what}", rtol=1e-5, atol=1e-7)
            if problem:
                return problem + " (the largest absolute difference)"
    return None


EXERCISES = [
    Exercise("15", 1, "Predict the file sizes", _sizes,
             expects="three numbers (parameters, bytes of model-full.bin, bytes of model-half.bin) for 128 "
                     "hidden units",
             hints=("A Linear(d_in, d_out) holds d_in * d_out weights and d_out biases.",
                    "f32 takes 4 bytes a value, f16 2; the names, shapes and checksum add the same "
                    "overhead as before.")),
    Exercise("15", 2, "How large is the half-precision error?", _bound,
             expects="a function half_error_bound(w) giving the bound for a NumPy array of weights",
             hints=("Rounding to f16 changes a value by at most a relative 2^-11.",
                    "The largest absolute change goes with the largest |w| in the array.")),
    Exercise("15", 3, "Edit a JSON record", _edit,
             expects="a pair (the exception the edited file gives, the loaded weight[0, 0] once the checksum "
                     "is deleted)",
             hints=("The record carries a checksum of its values.",
                    "Without a checksum field the file is read as it is, edit included.")),
    Exercise("15", 4, "Compare two records", _record_diff,
             expects="a function record_diff(a, b) returning {path: largest difference, or None where the "
                     "shapes differ}",
             hints=("flatten() gives {path: ParamRecord}; .data.to_numpy() gives its values.",
                    "Compare shapes first; only same-shaped values have a largest difference.")),
]
