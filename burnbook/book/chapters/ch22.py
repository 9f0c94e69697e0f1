"""Checks for chapter 22, Custom Taichi Kernel.

Exercise 1's shapes follow the broadcasting rule written out here, not the
kernel's own `output_shape`; exercise 3 runs the reader's kernel (compiled
once by the reader already) on shapes it has not seen."""

from __future__ import annotations

import numpy as np

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray, Taichi
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe

TITLE = "Custom Taichi Kernel"
_CASES = [((1, 2, 3), (4, 3, 2), (1, 1, 2)),
          ((3, 2, 3), (1, 3, 5), (1, 2, 1)),
          ((2, 2, 3), (3, 3, 2), (1, 2, 2))]


def _fused_shape(lhs, rhs, bias) -> tuple[int, ...] | None:
    """[b, n, k] @ [b, k, m] + bias -> [b, n, m]: a batch of 1 broadcasts, k must agree,
    each dim of bias is 1 or the output's. None when the kernel must refuse."""
    (bl, n, k), (br, k2, m) = lhs, rhs
    if k != k2 or (bl != br and 1 not in (bl, br)):
        return None
    out = (max(bl, br), n, m)
    return out if all(b in (1, o) for b, o in zip(bias, out)) else None


def _shapes(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(_CASES):
        raise AnswerError(f"your answer is {describe(answer)}; pass a list of {len(_CASES)} results, each a shape "
                          "tuple or None where output_shape refuses")
    for i, (given, case) in enumerate(zip(answer, _CASES), 1):
        expected = _fused_shape(*case)
        if given is None:
            if expected is not None:
                return f"case {i} is not refused: every batch, k and bias dimension there broadcasts"
            continue
        if not isinstance(given, (tuple, list)) or not all(isinstance(d, (int, np.integer)) for d in given):
            return f"case {i} is {describe(given)}; pass a shape tuple such as (2, 3, 4), or None for a refusal"
        if expected is None:
            return f"case {i} is refused: look at the batch dimensions of lhs and rhs"
        problem = compare(list(given), list(expected), f"your shape for case {i}", rtol=0, atol=0)
        if problem:
            return problem + " (the output takes the larger batch, lhs's rows and rhs's columns)"
    return None


def _no_reference(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (the error caught on NdArray, the output "
                          "on inputs(Taichi))")
    error, out = answer
    if not isinstance(error, BaseException):
        return f"the first item is {describe(error)}; pass the exception you caught (`except ... as err`)"
    if not isinstance(error, NotImplementedError):
        return (f"the error is a {type(error).__name__}: on NdArray the operation has no kernel, so it cannot be "
                "implemented there")
    if "reference" not in str(error):
        return "the error you passed does not say what is missing: is it the one apply raised on NdArray?"
    rng = np.random.default_rng(1)  # the chapter's inputs(B, seed=1)
    lhs, rhs, bias = (rng.normal(size=s).astype(np.float32) for s in ([2, 2, 3], [2, 3, 2], [1, 2, 2]))
    expected = np.maximum(np.matmul(lhs.astype(np.float64), rhs) + bias, 0.0)
    problem = compare(out, expected, "your output on inputs(Taichi)", rtol=1e-5, atol=1e-5)
    return problem and problem + " (on Taichi the kernel runs as before, reference or not)"


def _kernel(answer) -> str | None:
    rng = np.random.default_rng(22)
    for i, shape in enumerate(((2, 3), (5, 4), (1, 7))):
        data = rng.normal(size=shape).astype(np.float32)
        on = "on the chapter's [2, 3] input" if i == 0 else f"on a {list(shape)} input (new to you)"
        expected = data.astype(np.float64) ** 2 + 1.0
        for B in (Taichi, NdArray):
            out = call_reader(answer, Tensor[B, 2].from_data(data), what="your operation", on=f"{on} on {B.name()}")
            where = "the kernel" if B is Taichi else "the reference composition"
            problem = compare(out, expected, f"your output {on} on {B.name()} ({where})", rtol=1e-5, atol=1e-5)
            if problem:
                return problem
        tracked = Tensor[Autodiff[Taichi], 2].from_data(data).require_grad()
        weights = rng.normal(size=shape).astype(np.float32)
        out = call_reader(answer, tracked, what="your operation", on=f"{on} on Autodiff[Taichi]")
        loss = out * Tensor[Autodiff[Taichi], 2].from_data(weights)
        grads = call_reader(loss.sum().backward, what="the backward through your kernel", on=on)
        grad = tracked.grad(grads)
        if grad is None:
            return f"x gets no gradient {on}: is the operation recorded on Autodiff[Taichi]?"
        problem = compare(as_array(grad), weights * 2.0 * data, f"the gradient of x {on}", rtol=1e-4, atol=1e-5)
        if problem:
            return problem + " (kernel.grad is right only if each out element is stored once and never read back)"
    return None


EXERCISES = [
    Exercise("22", 1, "Predict the shapes", _shapes,
             expects="a list of three results, each the shape tuple output_shape returns or None where it refuses",
             hints=("The output is [batch, rows of lhs, columns of rhs]; a batch of 1 serves every batch entry.",
                    "Two batches broadcast only if they are equal or one of them is 1; the bias's dims must be 1 or "
                    "the output's.")),
    Exercise("22", 2, "Without a reference", _no_reference,
             expects="a pair (the exception apply raises on inputs(NdArray), the output on inputs(Taichi))",
             hints=("Without a reference, a Taichi kernel has nothing to run on a backend other than Taichi.",
                    "Catch the error with `except NotImplementedError as err`; on Taichi the kernel runs as before.")),
    Exercise("22", 3, "Your own kernel", _kernel,
             expects="a function f(x) -> tensor for rank-2 x, your taichi_op's apply (Taichi, Autodiff[Taichi] "
                     "and, through the reference, NdArray)",
             hints=("One parallel task per element: out[i, j] = x[i, j] * x[i, j] + 1, each out element written once.",
                    "Give taichi_op the shape function lambda shape: tuple(shape) and "
                    "reference=lambda x: x * x + 1.0.")),
]
