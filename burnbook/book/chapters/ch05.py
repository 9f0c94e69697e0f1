"""Checks for chapter 05, Backend."""

from __future__ import annotations

import numpy as np

from burnbook import Distribution, Tensor
from burnbook.backend import NdArray, Taichi, TaichiDevice, base
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, call_reader, compare, describe, kept_random_state

TITLE = "Backend"


def _pair(answer, what: str) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair {what}")
    return tuple(answer)


def _draws() -> tuple[bool, bool]:
    """(NdArray's two draws after one seed are equal, NdArray's first draw equals Taichi's after the same seed),
    as the backends really behave; the reader's generators are left as they were."""
    normal = Distribution.Normal(0.0, 1.0)
    with kept_random_state(NdArray, Taichi):
        NdArray.seed(42)
        first = Tensor[NdArray, 1].random([4], normal).to_numpy()
        second = Tensor[NdArray, 1].random([4], normal).to_numpy()
        Taichi.seed(42)
        on_taichi = Tensor[Taichi, 1].random([4], normal, TaichiDevice.cpu()).to_numpy()
    return bool(np.array_equal(first, second)), bool(np.array_equal(first, on_taichi))


def _seeds(answer) -> str | None:
    answers = _pair(answer, "of booleans (the two draws are equal, the first equals Taichi's)")
    for given, what in zip(answers, ("whether the two draws are equal", "whether NdArray's and Taichi's agree")):
        if not isinstance(given, (bool, np.bool_)):
            return f"{what} is {describe(given)}; pass True or False"
    same, same_as_taichi = _draws()
    if bool(answers[0]) != same:
        return "the two draws after one seed: " + ("a seed resets the generator once; does the second draw restart?"
                                                   if answers[0] else "they are, after all, one generator")
    if bool(answers[1]) != same_as_taichi:
        return "NdArray's and Taichi's first draws after the same seed: where does each backend draw?"
    return None


def _op_names(given, what: str) -> set[str]:
    if isinstance(given, str) or not isinstance(given, (list, tuple, set, frozenset)):
        raise AnswerError(f"{what} is {describe(given)}; pass a list of operation names")
    if not all(isinstance(op, str) for op in given):
        raise AnswerError(f"{what} holds something that is not an operation name (a str)")
    return set(given)


def _kinds(answer) -> str | None:
    exps, lowers = _pair(answer, "(the ops ending in _exp, the ops ending in _lower)")
    for given, suffix in ((exps, "_exp"), (lowers, "_lower")):
        names = _op_names(given, f"your {suffix} list")
        right = {op for op in base.ALL_OPS if op.endswith(suffix)}
        unknown = sorted(names - set(base.ALL_OPS))
        if unknown:
            return f"your {suffix} list names {unknown[0]!r}, which the backend protocol does not have"
        if names - right:
            return f"your {suffix} list holds an operation that does not end in {suffix}"
        if right - names:
            return f"your {suffix} list misses {len(right - names)} operation(s) of another kind"
    return None


_X = np.array([[1.0, -2.0], [3.0, 0.5]])  # dense_softmax's fixed inputs, from the chapter
_W = np.array([[0.5, -1.0], [1.5, 2.0]])
_BIAS = np.array([[0.1, -0.2]])


def _dense_sigmoid(answer) -> str | None:
    z = _X @ _W + _BIAS
    expected = 1.0 / (1.0 + np.exp(-z))
    for B, device in ((NdArray, NdArray.default_device()), (Taichi, TaichiDevice.cpu())):
        on = f"on {B.name()}"
        got = call_reader(answer, B, device, what="your dense_sigmoid", on=on, timeout=30.0)
        if not hasattr(got, "to_numpy"):
            return f"your dense_sigmoid returned {describe(got)} {on}; return the tensor"
        if got.backend is not B:
            return f"your dense_sigmoid's result {on} lives on {got.backend.name()}: use the B it is given"
        values = got.to_numpy()
        if values.shape == expected.shape and np.allclose(values, 1.0 / (1.0 + np.exp(-np.maximum(z, 0))), atol=1e-5):
            return f"your dense_sigmoid {on} still applies relu before the sigmoid"
        problem = compare(values, expected, f"your dense_sigmoid's result {on}", rtol=1e-4, atol=1e-6)
        if problem:
            return problem
    return None


def _count_adds(backend: type, build) -> tuple[int, np.ndarray]:
    """How many float_add calls `build(x)` makes on `backend` (its `calls`), and its result."""
    backend.calls = 0
    x = Tensor[backend, 1].from_floats([1.0, 2.0])
    result = build(x).to_numpy()
    return backend.calls, result


class _Reference(NdArray):
    """The check's own counting backend: the count it compares against."""
    calls = 0

    @classmethod
    def float_add(cls, lhs, rhs):
        cls.calls += 1
        return super().float_add(lhs, rhs)


def _counting(answer) -> str | None:
    cls, predicted = _pair(answer, "(your CountingNdArray class, the number of calls you predict)")
    if not isinstance(cls, type) or not issubclass(cls, NdArray):
        return f"the first of your pair is {describe(cls)}; pass the class itself, a subclass of NdArray"
    owner = next(c for c in cls.__mro__ if "float_add" in vars(c))
    if issubclass(NdArray, owner):  # float_add is still NdArray's (or its parents')
        return "your class does not define its own float_add"
    had, before = "calls" in vars(cls), vars(cls).get("calls")
    try:
        return _judge_counting(cls, predicted)
    finally:  # the reader's counter is theirs: put it back as it was
        if had:
            cls.calls = before
        elif "calls" in vars(cls):
            delattr(cls, "calls")


def _judge_counting(cls: type, predicted) -> str | None:
    chapter = ("(x + x + 1.0) + x", lambda x: (x + x + 1.0) + x)
    unseen = ("x + x * 2.0 + x + x - 1.0", lambda x: x + x * 2.0 + x + x - 1.0)
    for text, build in (chapter, unseen):
        right, values = _count_adds(_Reference, build)
        try:
            got, result = call_reader(_count_adds, cls, build, what=f"running {text} on your class")
        except AnswerError as err:
            return str(err) + " (does your float_add return the parent's result?)"
        if not isinstance(got, (int, np.integer)) or isinstance(got, bool):
            return f"your class's `calls` is {describe(got)} after {text}; count in an int class attribute `calls`"
        problem = compare(result, values, f"the result of {text} on your class")
        if problem:
            return problem + " (call the parent's float_add and return what it returns)"
        if got != right:
            return f"your class counts {got} call(s) of float_add for {text}: count only float_add's own calls, once each"
    problem = compare(predicted, _count_adds(_Reference, chapter[1])[0], "your predicted number of calls")
    return problem and problem + "; which of + x and + 1.0 reach float_add?"


EXERCISES = [
    Exercise("05", 1, "One seed, two draws", _seeds,
             expects="a pair of booleans (the two draws are equal, the first draw equals Taichi's after "
                     "Taichi.seed(42))",
             hints=("A seed sets a generator's starting point; each draw moves it on.",
                    "Both backends draw their random numbers on the host, with NumPy.")),
    Exercise("05", 2, "Which kinds have exp?", _kinds,
             expects="a pair of lists (the op names ending in _exp, those ending in _lower)",
             hints=("The protocol names each op after the kind it works on: float_, int_, bool_.",
                    "exp only makes sense for real numbers; comparisons make sense for any numbers.")),
    Exercise("05", 3, "dense_sigmoid", _dense_sigmoid,
             expects="a function dense_sigmoid(B, device) that returns the tensor sigmoid(x @ w + b) "
                     "for dense_softmax's x, w and b",
             hints=("Keep dense_softmax's inputs and the backend argument; change only the last lines.",
                    "No relu, no softmax: activation.sigmoid(x.matmul(w) + b).")),
    Exercise("05", 4, "A backend that counts its additions", _counting,
             expects="a pair (your CountingNdArray class, counting in a class attribute `calls`; "
                     "the number of float_add calls you predict for (x + x + 1.0) + x)",
             hints=("A backend's ops are class methods; override float_add and call super().float_add(lhs, rhs).",
                    "Adding a number and adding a tensor are two different operations of the protocol.")),
]
