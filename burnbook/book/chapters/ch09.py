"""Checks for chapter 09, Module."""

from __future__ import annotations

import math

import numpy as np

from burnbook import Tensor
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.module import Module

TITLE = "Module"


def _pair(answer, what: str) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair {what}")
    return tuple(answer)


def _linear_params(d_in: int, d_out: int, bias: bool = True) -> int:
    """A Linear layer's [d_in, d_out] weight, plus a [d_out] bias."""
    return d_in * d_out + (d_out if bias else 0)


def _count(answer) -> str | None:
    with_bias, without = _pair(answer, "(num_params() with a bias, without one)")
    return (compare(with_bias, _linear_params(4, 3), "your count with a bias")
            or compare(without, _linear_params(4, 3, bias=False), "your count with bias=False"))


def _kernel(answer) -> str | None:
    shape, count = _pair(answer, "(the output's shape, the layer's num_params())")
    batch, c_in, c_out, side, k = 2, 3, 6, 16, 3  # the chapter's image and Conv2dConfig([3, 6], ...)
    got = as_array(shape, "your output shape")
    if got.shape == (4,) and np.array_equal(got[2:], [side - 5 + 1] * 2):
        return "your output shape is the 5 x 5 kernel's; the kernel is now 3 x 3"
    problem = compare(got, [batch, c_out, side - k + 1, side - k + 1], "your output shape", kind="int")
    if problem:
        return problem + " (a valid convolution trims kernel - 1 pixels per side)"
    params = as_array(count, "your parameter count")
    if params.size == 1 and float(params.reshape(())) == c_out * c_in * k * k:
        return "your parameter count has the weights but not the biases"
    return compare(params, c_out * c_in * k * k + c_out, "your parameter count")


def _params(model: Module, what: str) -> dict[str, np.ndarray]:
    try:
        return {name: as_array(p.val(), f"{what}'s {name}").astype(np.float64) for name, p in model.named_params()}
    except AnswerError:
        raise
    except Exception as err:
        raise AnswerError(f"{what}'s parameters could not be listed ({type(err).__name__}: {err})") from None


def _mlp_reference(p: dict[str, np.ndarray], prefix: str, x: np.ndarray) -> np.ndarray:
    hidden = np.maximum(x @ p[f"{prefix}hidden.weight"] + p[f"{prefix}hidden.bias"], 0.0)
    return hidden @ p[f"{prefix}output.weight"] + p[f"{prefix}output.bias"]


def _check_mlp(model, widths: tuple[int, int, int], what: str, prefix: str = "",
               wrap=lambda x, out: out) -> str | None:
    """The parts, names, count and forward of a d_in -> d_hidden -> d_out Mlp (inside `prefix`)."""
    if not isinstance(model, Module):
        return f"{what} is {describe(model)}; pass the module itself (an instance of your class)"
    d_in, d_hidden, d_out = widths
    params = _params(model, what)
    names = [f"{prefix}{layer}.{kind}" for layer in ("hidden", "output") for kind in ("weight", "bias")]
    if sorted(params) != sorted(names):
        return f"{what}'s parameters are named {sorted(params)}; the fields should be hidden, output and activation"
    shapes = {f"{prefix}hidden.weight": (d_in, d_hidden), f"{prefix}output.weight": (d_hidden, d_out)}
    for name, shape in shapes.items():
        if params[name].shape != shape:
            return f"{what}'s {name} has shape {list(params[name].shape)}; a {d_in} -> {d_hidden} -> {d_out} " \
                   f"network's has {list(shape)}"
    count = call_reader(model.num_params, what=f"{what}.num_params()")
    expected = _linear_params(d_in, d_hidden) + _linear_params(d_hidden, d_out)
    if count != expected:
        return f"{what}.num_params() is {count}, which does not count its two layers' weights and biases"
    backend = next(iter(model.named_params()))[1].val().backend
    x = np.random.default_rng(9).normal(size=(5, d_in))
    got = call_reader(model, Tensor[backend, 2].from_floats(x.tolist()), what=f"{what}'s forward",
                      on="on a [5, %d] input" % d_in)
    out = as_array(got.detach() if hasattr(got, "detach") else got, f"{what}'s output")
    linear_only = wrap(x, (x @ params[f"{prefix}hidden.weight"] + params[f"{prefix}hidden.bias"])
                       @ params[f"{prefix}output.weight"] + params[f"{prefix}output.bias"])
    right = wrap(x, _mlp_reference(params, prefix, x))
    if out.shape == right.shape and not np.allclose(right, linear_only, atol=1e-4) and \
            np.allclose(out, linear_only, atol=1e-4):
        return f"{what}'s forward skips the activation between the two layers"
    plain = _mlp_reference(params, prefix, x)
    if prefix and out.shape == plain.shape and np.allclose(out, plain, atol=1e-4):
        return f"{what}'s forward returns the inner Mlp's output without adding its input x"
    return compare(out, right, f"{what}'s output on a [5, {d_in}] input", rtol=1e-4, atol=1e-5)


def _mlp(answer) -> str | None:
    return _check_mlp(answer, (4, 8, 2), "your Mlp")


def _residual(answer) -> str | None:
    block, losses = _pair(answer, "(your trained Residual block, the list of its 20 losses)")
    problem = _check_mlp(block, (4, 16, 4), "your Residual", prefix="inner.", wrap=lambda x, out: x + out)
    if problem:
        return problem
    values = as_array(losses, "your losses").astype(np.float64).reshape(-1)
    if values.size != 20:
        return f"your losses hold {values.size} numbers; keep the loss of each of the 20 steps"
    if not np.isfinite(values).all():
        return "your losses are not all finite: is the learning rate too large?"
    if not values[-1] < values[0] or math.isclose(values[-1], values[0], rel_tol=1e-3):
        return "your loss does not fall over the 20 steps: does each step update the block the optimizer returns?"
    return None


EXERCISES = [
    Exercise("09", 1, "Count the parameters", _count,
             expects="a pair of integers (num_params() with a bias, with bias=False)",
             hints=("A Linear layer has a [d_in, d_out] weight and, unless bias=False, a [d_out] bias.",)),
    Exercise("09", 2, "A smaller kernel", _kernel,
             expects="a pair (the output's shape as a list, the layer's num_params())",
             hints=("A valid convolution with a k x k kernel trims k - 1 pixels per dimension.",
                    "The weight is [c_out, c_in, k, k], plus one bias per output channel.")),
    Exercise("09", 3, "A two-layer perceptron", _mlp,
             expects="your 4 -> 8 -> 2 Mlp, the module itself",
             hints=("Fields annotated with module types are its parts: hidden, output, activation.",
                    "forward sends x through the three parts in the order the data flows.")),
    Exercise("09", 4, "A residual block that learns", _residual,
             expects="a pair (your trained 4 -> 16 -> 4 Residual block, the list of its 20 losses)",
             hints=("The block's only field is inner, an Mlp; forward returns x + self.inner(x).",
                    "Each step: loss.backward(), GradientsParams.from_grads(grads, block), "
                    "block = optim.step(lr, block, grads); keep the block step returns.")),
]
