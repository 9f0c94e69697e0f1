"""Checks for chapter 28, Build your own backend.

Each step's check runs the conformance suite's families for that step on
the reader's backend class (`burnbook.testing.check_backend`) and reports
by op name: the ops still missing (absent, the protocol's stub, or still
raising NotImplementedError) and the first failing case. The last check
takes the reader's own conv2d: the module cases, then the guide model
(chapter 04's CNN) on the reader's backend and on `Autodiff[...]` of it,
against the same model on NdArray.
"""

from __future__ import annotations

import inspect

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.backend.base import Backend
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, call_reader, compare, describe
from burnbook.examples.guide.model import ModelConfig
from burnbook.testing import check_backend

TITLE = "Build your own backend"


def _backend_class(answer) -> type:
    if not (isinstance(answer, type) and issubclass(answer, Backend)):
        raise AnswerError(f"your answer is {describe(answer)}; pass your backend class (a subclass of Backend)")
    return answer


_FIRST = ("default_device", "float_from_data", "float_into_data", "int_from_data", "int_into_data",
          "bool_from_data", "bool_into_data")


def _names(ops: list, shown: int = 8) -> str:
    return ", ".join(ops[:shown]) + (f" and {len(ops) - shown} more" if len(ops) > shown else "")


def families(*names: str):
    """A judge: `check_backend(answer, families=names)` passes every case."""
    words = " and ".join(names)

    def judge(answer) -> str | None:
        B = _backend_class(answer)
        report = call_reader(lambda: check_backend(B, families=list(names), progress=False),
                             what="check_backend on your backend", timeout=20.0)
        if report.ok:
            return None
        parts = []
        if report.missing:
            # what every case needs first: the device, and moving data in and out
            ops = sorted(report.missing_ops, key=lambda op: (op not in _FIRST, op))
            verb = "op is missing or still raises" if len(ops) == 1 else "ops are missing or still raise"
            parts.append(f"{report.missing} of the {words} cases cannot run yet: {len(ops)} {verb} "
                         f"NotImplementedError ({_names(ops)})")
        if report.failed:
            first = report.failures[0]
            parts.append(f"{report.failed} {words} cases fail, on {_names(list(report.failed_ops), 5)}; "
                         f"the first, {first.case}: {first.message}")
        return "; ".join(parts)
    return judge


_STEPS = (("creation",), ("arithmetic",), ("math",), ("reductions", "layout"),
          ("comparison", "indexing", "int", "bool"))


def _squares(n: int, seed: int = 0) -> tuple:
    """n images [28, 28]: a bright 8x8 square in one of 9 places (the label) on noise."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 9, n)
    images = rng.normal(0.0, 0.3, (n, 28, 28)).astype(np.float32)
    for image, label in zip(images, labels):
        r, c = 2 + 9 * (label // 3), 2 + 9 * (label % 3)
        image[r:r + 8, c:c + 8] += 1.0
    return images, labels.astype(np.int64)


def _own_conv(answer) -> str | None:
    """The reader's conv2d: defined by their class (not the protocol's
    default), right on the module cases, and the guide model on it."""
    B = _backend_class(answer)
    for step, names in enumerate(_STEPS, 1):
        problem = families(*names)(B)
        if problem:
            return f"step {step} does not pass yet: {problem}"
    if inspect.getattr_static(B, "conv2d") is inspect.getattr_static(Backend, "conv2d"):
        return (f"{B.__name__} has no conv2d of its own: it still uses the protocol's default "
                "(define conv2d on a class in front of MyBackend)")
    problem = families("module")(B)
    if problem:
        return problem
    config = ModelConfig(num_classes=10, hidden_size=16, dropout=0.0)
    NdArray.seed(28)
    reference = config.init(NdArray.default_device(), NdArray)
    record = reference.into_record()
    images, labels = _squares(4, seed=28)

    def forward():
        model = config.init_with(record, B.default_device(), B)
        return model(Tensor[B, 3].from_data(images, B.default_device()))
    got = call_reader(forward, what="the guide model on your backend", on="(a forward pass)", timeout=10.0)
    problem = compare(got, reference(Tensor[NdArray, 3].from_data(images)).to_numpy(),
                      "the guide model's scores on your backend", rtol=1e-4, atol=1e-5)
    if problem:
        return problem

    def gradient(backend):
        model = config.init_with(record, backend.default_device(), backend)
        x = Tensor[backend, 3].from_data(images, backend.default_device())
        y = Tensor[backend, 1, Int].from_data(labels, backend.default_device())
        grads = model.forward_classification(x, y).loss.backward()
        return model.conv1.weight.val().grad(grads)
    got = call_reader(lambda: gradient(Autodiff[B]), what="a backward pass on Autodiff[your backend]",
                      on="(the guide model's loss)", timeout=10.0)
    return compare(got, gradient(Autodiff[NdArray]).to_numpy(),
                   "the gradient of conv1's weight on Autodiff[your backend]", rtol=1e-3, atol=1e-5)


EXERCISES = [
    Exercise("28", 1, "Creation", families(*_STEPS[0]),
             expects="your backend class (a Backend subclass)",
             hints=("check_backend(MyBackend, families=['creation']) names each missing op and each failure.",
                    "Each kind has its own element type: float32 by default (or the dtype asked for), int64, bool.")),
    Exercise("28", 2, "Arithmetic", families(*_STEPS[1]),
             expects="your backend class (a Backend subclass)",
             hints=("Most arithmetic ops are one NumPy ufunc; the scalar ones take a Python number.",
                    "clamp may get None for either bound; the result keeps the input's element type.")),
    Exercise("28", 3, "Math", families(*_STEPS[2]),
             expects="your backend class (a Backend subclass)",
             hints=("One NumPy function per op, keeping the element type (float32 in, float32 out).",
                    "NumPy has no erf: math.erf through np.vectorize, cast back to the input's type.")),
    Exercise("28", 4, "Reductions and layout", families(*_STEPS[3]),
             expects="your backend class (a Backend subclass)",
             hints=("Reductions keep the rank: a full sum has shape [1], sum_dim keeps the dim with size 1.",
                    "argmax/argmin return int64 with the dim kept; slice_assign returns a new array.")),
    Exercise("28", 5, "Comparison, indexing, Int and Bool", families(*_STEPS[4]),
             expects="your backend class (a Backend subclass), made with @share_layout_ops",
             hints=("Comparisons return bool arrays; scatter and select_assign add (np.add.at).",
                    "Int division truncates toward zero, as in Rust; NumPy's // floors.")),
    Exercise("28", 6, "A conv2d of your own", _own_conv,
             expects="your backend class with a conv2d of its own (MyFastBackend)",
             hints=("Every output pixel is a dot product of the weight with one window of the padded input: "
                    "NumPy can show all windows at once as a view.",
                    "np.lib.stride_tricks.sliding_window_view gives the windows; a stride or a dilation is a "
                    "step in slicing them; np.einsum or np.tensordot contracts channels and taps.",
                    "For options you do not handle (groups), return super().conv2d(x, weight, bias, options).")),
]
