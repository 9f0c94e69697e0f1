"""Checks for chapter 23, Seeing inside.

Expected values come from closed forms (the pixel bytes' range, the
batcher's normalisation formula), from a graph the check builds itself,
and from NumPy norms of the weights the reader hands over."""

from __future__ import annotations

import numpy as np

from burnbook import Tensor
from burnbook.autodiff import nodes_of
from burnbook.backend import Autodiff, NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, compare, describe
from burnbook.examples.guide import MNIST_MEAN, MNIST_STD
from burnbook.tensor import activation

TITLE = "Seeing inside"
_B = Autodiff[NdArray]


def _parts(answer, names: tuple[str, ...]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(names):
        raise AnswerError(f"your answer is {describe(answer)}; pass a {len(names)}-tuple ({', '.join(names)})")
    return tuple(answer)


def _normalisation(answer) -> str | None:
    raw_min, raw_max, normalised_min = _parts(answer, ("the raw minimum", "the raw maximum",
                                                       "the normalised batch's minimum"))
    pixels = np.iinfo(np.uint8)  # MNIST stores a pixel as one byte; every digit has black paper and full ink
    problem = (compare(raw_min, float(pixels.min), "your raw minimum", rtol=0, atol=1e-6)
               or compare(raw_max, float(pixels.max), "your raw maximum", rtol=0, atol=1e-6))
    if problem:
        return problem + " (the raw images are the stored bytes, before any scaling)"
    expected = (pixels.min / 255.0 - MNIST_MEAN) / MNIST_STD
    problem = compare(normalised_min, expected, "your normalised minimum", rtol=0, atol=1e-3)
    return problem and problem + " (apply the batcher's formula to a black pixel)"


def _view(value, what: str):
    if not callable(getattr(value, "flagged", None)) or not callable(getattr(value, "norms", None)):
        raise AnswerError(f"{what} is {describe(value)}; pass a GradientView")
    return value


def _explode(answer) -> str | None:
    loud, only = _parts(answer, ("the GradientView of loss * 1e6", "the GradientView with your exploding= threshold"))
    loud, only = _view(loud, "the first item"), _view(only, "the second item")
    names = set(loud.norms())
    flags = {name: flag for _, name, flag in loud.flagged()}
    if set(flags) != names:
        return (f"your first view flags {len(flags)} of {len(names)} parameters; with the loss times 1e6 every "
                "gradient norm is far above the default exploding=1e3")
    if set(flags.values()) != {"exploding"}:
        return f"your first view flags {sorted(set(flags.values()))}, where every flag should say exploding"
    ours, theirs = loud.norms(), only.norms()
    # dropout draws new masks at each forward, so a second loss * 1e6 gives norms of the same size, not equal ones
    if set(theirs) != names or not all(0.1 < theirs[k] / ours[k] < 10 for k in names if ours[k] > 0):
        return ("your second view's gradients are not of the size of the first view's: build both from loss * 1e6 "
                "of the same model")
    linear = {name for name in names if name.startswith("linear") and name.endswith(".weight")}
    flagged = {name for _, name, _ in only.flagged()}
    if flagged != linear:
        return (f"your threshold flags {sorted(flagged)}, where only the two linear weights should be flagged "
                "(compare the norms: the threshold goes between the largest other norm and the smaller of the two)")
    return None


def _graph(answer) -> str | None:
    count, with_grads = _parts(answer, ("the number of nodes", "the names among {'x', 'w', 'b'} that get gradients"))
    rng = np.random.default_rng(23)
    x = Tensor[_B, 2].from_data(rng.normal(size=(4, 3)).astype(np.float32))
    w = Tensor[_B, 2].from_data(rng.normal(size=(3, 2)).astype(np.float32)).require_grad()
    b = Tensor[_B, 2].from_data(rng.normal(size=(1, 2)).astype(np.float32)).require_grad()
    loss = activation.relu(x.matmul(w) + b).sum()
    problem = compare(count, len(nodes_of(loss)), "your node count", rtol=0, atol=0)
    if problem:
        return problem + " (a node for each tracked leaf and each operation; is x, with no gradient, a node?)"
    if isinstance(with_grads, str) or not isinstance(with_grads, (set, frozenset, list, tuple)):
        return f"the second item is {describe(with_grads)}; pass a set of names such as {{'x'}}"
    grads = loss.backward()
    expected = {name for name, t in (("x", x), ("w", w), ("b", b)) if t.grad(grads) is not None}
    got = {str(n) for n in with_grads}
    if got != expected:
        return ("a plain backward() returns gradients for the tracked leaves only"
                if got - expected else "a tensor that requires a gradient is missing from your set")
    return None


def _moved(answer) -> str | None:
    before, after, kernel = _parts(answer, ("conv1.weight before training", "conv1.weight after 5 steps",
                                            "the index of the kernel that moved most"))
    before, after = as_array(before, "your weights before"), as_array(after, "your weights after")
    if before.shape != after.shape or before.ndim != 4:
        return (f"your weights have shapes {list(before.shape)} and {list(after.shape)}; pass conv1.weight "
                "[8, 1, 3, 3] before and after, as arrays")
    change = after.astype(np.float64) - before
    if not np.abs(change).max() > 0:
        return "your weights did not move: are before and after the same tensor, read after training?"
    per_kernel = np.linalg.norm(change.reshape(len(change), -1), axis=1)
    index = as_array(kernel, "your kernel index")
    if index.size != 1 or not np.issubdtype(index.dtype, np.integer):
        return f"your kernel index is {describe(kernel)}; pass one int, 0 to {len(change) - 1}"
    if int(index) != int(per_kernel.argmax()):
        if 0 <= int(index) < len(change) and np.isclose(per_kernel[int(index)], per_kernel.min()):
            return "your kernel moved least, not most"
        return "that kernel is not the one whose weights moved most (the norm of its whole 1 x 3 x 3 change)"
    return None


EXERCISES = [
    Exercise("23", 1, "Skip the normalisation", _normalisation,
             expects="a triple (raw minimum, raw maximum, the normalised batch's minimum), numbers",
             hints=("The raw images are the stored pixel bytes; the batcher scales to [0, 1] before normalising.",
                    "Normalised = (pixel / 255 - mean) / std with the batcher's mean and std; black is 0.")),
    Exercise("23", 2, "Make it explode", _explode,
             expects="a pair (the GradientView of loss * 1e6, a GradientView of the same gradients with your "
                     "exploding= threshold)",
             hints=("Times 1e6, every gradient norm grows a millionfold: compare them with exploding=1e3.",
                    "Read the norms (view.norms()): the threshold goes between the largest norm that is not a "
                    "linear weight's and the smaller of the two linear weights'.")),
    Exercise("23", 3, "A graph you can count", _graph,
             expects="a pair (the number of nodes nodes_of finds, the set of names among 'x', 'w', 'b' that get "
                     "gradients)",
             hints=("Count a node for each tensor that requires a gradient and for each operation on the way to loss.",
                    "A tensor that requires no gradient builds no node; backward() returns gradients for leaves.")),
    Exercise("23", 4, "What did training change?", _moved,
             expects="a triple (conv1.weight before, conv1.weight after 5 Adam steps, the index of the kernel that "
                     "moved most)",
             hints=("Take after - before, one kernel per first index: [8, 1, 3, 3] is 8 kernels of 1 x 3 x 3.",
                    "The kernel that moved most has the largest norm of its change, over all of its 9 weights.")),
]
