"""Checks for chapter 04, Guide."""

from __future__ import annotations

import math

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe

TITLE = "Guide"
# The guide's model, as ModelConfig.init builds it: two valid convolutions
# 1 -> 8 -> 16 channels, an adaptive pool to 8 x 8, then two linear layers.
_CHANNELS, _POOL, _SIDE, _CLASSES = (1, 8, 16), (8, 8), 28, 10


def _conv_side(side: int, kernel: int) -> int:
    """A valid convolution (no padding, stride 1) trims kernel - 1 pixels."""
    return side - kernel + 1


def _shapes(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 4:
        raise AnswerError(f"your answer is {describe(answer)}; pass four things: (shape after conv1, "
                          "shape after conv2, shape after the pooling layer, True or False)")
    *shapes, needs_new_size = answer
    side1 = _conv_side(_SIDE, 5)
    side2 = _conv_side(side1, 5)
    expected = ([2, _CHANNELS[1], side1, side1], [2, _CHANNELS[2], side2, side2], [2, _CHANNELS[2], *_POOL])
    for given, right, where in zip(shapes, expected, ("after conv1", "after conv2", "after the pooling layer")):
        got = as_array(given, f"the shape {where}")
        if where == "after conv1" and got.shape == (4,) and np.array_equal(got[2:], [_conv_side(_SIDE, 3)] * 2):
            return f"the shape {where} is the 3 x 3 kernels' one: the kernels are now 5 x 5"
        problem = compare(got, right, f"the shape {where}", kind="int")
        if problem:
            return problem
    if not isinstance(needs_new_size, (bool, np.bool_)):
        return f"whether linear1 needs a new input size is {describe(needs_new_size)}; pass True or False"
    if needs_new_size:
        return "linear1 sees what the pooling layer outputs; does that shape depend on the kernels?"
    return None


def _param_count(hidden: int) -> int:
    conv1 = _CHANNELS[1] * _CHANNELS[0] * 3 * 3 + _CHANNELS[1]
    conv2 = _CHANNELS[2] * _CHANNELS[1] * 3 * 3 + _CHANNELS[2]
    flat = _CHANNELS[2] * _POOL[0] * _POOL[1]
    return conv1 + conv2 + (flat * hidden + hidden) + (hidden * _CLASSES + _CLASSES)


def _num_params(answer) -> str | None:
    got = as_array(answer, "your count")
    if got.size != 1:
        return f"your count holds {got.size} numbers; pass one integer"
    count = float(got.reshape(()))
    if count == _param_count(512):
        return "that is the chapter's model, with hidden_size=512"
    weights_only = _param_count(256) - (_CHANNELS[1] + _CHANNELS[2] + 256 + _CLASSES)
    if count == weights_only:
        return "your count has the weights but not the biases (one per output of each layer)"
    if count != _param_count(256):
        return "your count is off; count each layer's weight and bias"
    return None


def _untrained_loss(answer) -> str | None:
    got = as_array(answer, "your loss")
    if got.size != 1:
        return f"your loss holds {got.size} numbers; pass one"
    loss = float(got.reshape(()))
    if math.isclose(loss, 1 / _CLASSES, rel_tol=1e-3):
        return "that is each class's probability; the loss is the cross-entropy, -ln of the target's probability"
    if abs(loss - math.log(_CLASSES)) > 0.1:
        return "your loss is not what a model that guesses every class equally gets"
    return None


def _confusion_reference(predicted: np.ndarray, targets: np.ndarray) -> np.ndarray:
    counts = np.zeros((_CLASSES, _CLASSES), dtype=np.int64)
    for t, p in zip(targets, predicted):
        counts[t, p] += 1
    return counts


def _confusion(answer) -> str | None:
    rng = np.random.default_rng(4)
    cases = [([0, 1, 1, 2], [0, 1, 2, 2])]  # (predicted, targets): one 2 read as a 1
    for n in (50, 7, 300):
        targets = rng.integers(0, _CLASSES, n)
        wrong = rng.random(n) < 0.3
        cases.append((np.where(wrong, rng.integers(0, _CLASSES, n), targets).tolist(), targets.tolist()))
    for i, (predicted, targets) in enumerate(cases):
        on = f"on {len(targets)} digits" + (" (new to you)" if i else "")
        args = (Tensor[NdArray, 1, Int].from_ints(predicted), Tensor[NdArray, 1, Int].from_ints(targets))
        got = as_array(call_reader(answer, *args, what="your confusion", on=on), f"your table {on}")
        expected = _confusion_reference(np.asarray(predicted), np.asarray(targets))
        if got.shape == expected.shape and not np.array_equal(got, expected) and np.array_equal(got, expected.T):
            return f"your table {on} has rows and columns swapped: entry [t, p] counts targets t predicted as p"
        problem = compare(got, expected, f"your table {on}")
        if problem:
            return problem
    return None


EXERCISES = [
    Exercise("04", 1, "5×5 kernels", _shapes,
             expects="(shape after conv1, shape after conv2, shape after the pool, whether linear1 needs a new "
                     "input size) for a batch [2, 1, 28, 28]",
             hints=("A valid convolution with a k x k kernel trims k - 1 pixels per dimension.",
                    "AdaptiveAvgPool2d outputs the size it was configured with, whatever comes in.")),
    Exercise("04", 2, "A smaller hidden layer", _num_params,
             expects="the integer num_params() of ModelConfig(num_classes=10, hidden_size=256)",
             hints=("A layer's parameters are its weights plus one bias per output.",
                    "Conv2d [c_in, c_out] with a k x k kernel has c_out * c_in * k * k + c_out; "
                    "Linear(d_in, d_out) has d_in * d_out + d_out.")),
    Exercise("04", 3, "The loss of an untrained model", _untrained_loss,
             expects="the loss you expect, a float",
             hints=("An untrained model gives every class about the same probability.",
                    "Cross-entropy is -ln(probability of the target); with 10 equal classes, what is it?")),
    Exercise("04", 4, "A confusion matrix", _confusion,
             expects="a function confusion(predicted, targets) taking two Int tensors [n] and returning a "
                     "[10, 10] table (array or tensor)",
             hints=("Each pair (target t, prediction p) adds one to entry [t, p].",
                    "to_numpy() the two tensors, then count with a loop or np.add.at.")),
]
