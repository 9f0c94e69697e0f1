"""One step of `BackwardStepper` and its formula.

`Step` is what the engine did at one node (the gradient that arrived, what
the node's rule returned for each parent); `step_formula` writes that rule in
one line with the actual numbers: a template per op (element-wise ops with
their local derivative computed in NumPy, for display only; layout, reduction,
matmul and conv ops in words with shapes) and a fallback for any other op that
still shows the numbers in and out. `format_array` keeps a number short and
a big tensor to its shape and a few values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["ELEMENTWISE", "STRUCTURAL", "Step", "array_text", "format_array", "step_formula"]


# -- numbers as text -------------------------------------------------------------------

def _num(v: float) -> str:
    s = f"{float(v):.4g}"
    return s + ".0" if re.fullmatch(r"-?\d+", s) else s


def _shape_text(shape: tuple) -> str:
    return "x".join(str(int(d)) for d in shape) or "scalar"


def format_array(a: Any) -> str:
    """An array in a few characters: a one-element array as its number
    (`3.0`), up to 6 elements in full (nested brackets show the shape), a
    bigger one as its shape and first and last values (`<2x3: 0.1, 0.2, ..., 0.6>`)."""
    if a is None:
        return "none"
    a = np.asarray(a)
    if a.size == 1:
        return _num(a.reshape(-1)[0])
    if a.size == 0:
        return f"<{_shape_text(a.shape)}: empty>"
    if a.size <= 6:
        return np.array2string(a, separator=", ", formatter={"all": _num}, max_line_width=10**6).replace("\n", "")
    flat = a.reshape(-1)
    return f"<{_shape_text(a.shape)}: {_num(flat[0])}, {_num(flat[1])}, ..., {_num(flat[-1])}>"


def array_text(a: np.ndarray | None) -> str:
    """The array for the info panel: shape, then values (NumPy abbreviates big ones)."""
    if a is None:
        return "none"
    a = np.asarray(a)
    body = np.array2string(a, precision=4, separator=", ", threshold=64, edgeitems=3,
                           max_line_width=100, formatter={"all": _num} if a.size <= 64 else None)
    return f"shape {list(a.shape)}\n{body}"


# -- the record of one step ---------------------------------------------------------------

@dataclass
class Step:
    """What the engine did at one node.

    `op` the node's label ("leaf" for a leaf); `name` its display name (the
    input's keyword for a leaf, the op label numbered when it repeats:
    `mul1`, `mul2`); `parents` one entry per parent: a leaf's keyword, an
    op's label, or "const" for an untracked input; `output_grad` the
    gradient that arrived (None when none did); `input_grads` what the rule
    returned for each parent (None where a parent gets nothing; empty for a
    leaf); `incoming` the contributions that were summed into `output_grad`,
    as `(step index of the child, array)`; `formula` the rule in one line
    with the numbers.
    """

    index: int
    node: int
    op: str
    name: str
    shape: tuple
    parents: tuple
    parent_names: tuple
    parent_nodes: tuple
    output_grad: np.ndarray | None
    input_grads: tuple
    value: np.ndarray | None
    args: tuple = ()
    incoming: list = field(default_factory=list)
    formula: str = ""


# -- formulas ---------------------------------------------------------------------------------

def _ew(expr: str, *locals_: tuple[str, Callable]) -> tuple:
    return ("ew", expr, locals_)


# Element-wise rules: the expression, and per parent the local derivative's
# text and its value from the parents' values `x`, the output `y` and the
# node's static arguments `a`. The engine's gradient is g times this (summed
# back over broadcast dims).
ELEMENTWISE: dict[str, tuple] = {
    "add": _ew("{0}+{1}", ("1", lambda x, y, a: 1.0), ("1", lambda x, y, a: 1.0)),
    "sub": _ew("{0}-{1}", ("1", lambda x, y, a: 1.0), ("-1", lambda x, y, a: -1.0)),
    "mul": _ew("{0}*{1}", ("{1}", lambda x, y, a: x[1]), ("{0}", lambda x, y, a: x[0])),
    "div": _ew("{0}/{1}", ("1/{1}", lambda x, y, a: 1.0 / x[1]),
               ("-{0}/{1}^2", lambda x, y, a: -x[0] / x[1] ** 2)),
    "powf": _ew("{0}^{1}", ("{1}*{0}^({1}-1)", lambda x, y, a: x[1] * x[0] ** (x[1] - 1)),
                ("{0}^{1}*ln({0})", lambda x, y, a: y * np.log(np.where(x[0] > 0, x[0], 1.0)))),
    "add_scalar": _ew("{0}+c", ("1", lambda x, y, a: 1.0)),
    "sub_scalar": _ew("{0}-c", ("1", lambda x, y, a: 1.0)),
    "mul_scalar": _ew("{0}*c", ("c", lambda x, y, a: a[0])),
    "div_scalar": _ew("{0}/c", ("1/c", lambda x, y, a: 1.0 / a[0])),
    "powf_scalar": _ew("{0}^c", ("c*{0}^(c-1)", lambda x, y, a: a[0] * x[0] ** (a[0] - 1.0))),
    "neg": _ew("-{0}", ("-1", lambda x, y, a: -1.0)),
    "abs": _ew("|{0}|", ("sign({0})", lambda x, y, a: np.sign(x[0]))),
    "clamp": _ew("clamp({0})", ("1 inside the bounds, else 0", lambda x, y, a: (
        (True if a[0] is None else x[0] >= a[0]) & (True if a[1] is None else x[0] <= a[1])) * 1.0)),
    "exp": _ew("exp({0})", ("exp({0})", lambda x, y, a: y)),
    "log": _ew("log({0})", ("1/{0}", lambda x, y, a: 1.0 / x[0])),
    "log1p": _ew("log(1+{0})", ("1/(1+{0})", lambda x, y, a: 1.0 / (1.0 + x[0]))),
    "erf": _ew("erf({0})", ("2/sqrt(pi)*exp(-{0}^2)", lambda x, y, a: 2.0 / np.sqrt(np.pi) * np.exp(-x[0] ** 2))),
    "sqrt": _ew("sqrt({0})", ("1/(2*sqrt({0}))", lambda x, y, a: 0.5 / y)),
    "recip": _ew("1/{0}", ("-1/{0}^2", lambda x, y, a: -(y * y))),
    "cos": _ew("cos({0})", ("-sin({0})", lambda x, y, a: -np.sin(x[0]))),
    "sin": _ew("sin({0})", ("cos({0})", lambda x, y, a: np.cos(x[0]))),
    "tanh": _ew("tanh({0})", ("1-tanh({0})^2", lambda x, y, a: 1.0 - y * y)),
    "relu": _ew("relu({0})", ("1 if {0}>0 else 0", lambda x, y, a: (y > 0) * 1.0)),
    "sigmoid": _ew("sigmoid({0})", ("s*(1-s), s=sigmoid({0})", lambda x, y, a: y * (1.0 - y))),
}

# Every other op: per parent, what the rule does to g, in words ({0}, {1}: the
# parents' names; {g}: g's shape; {s}: the parent's shape; {a0}, {a1}: args).
STRUCTURAL: dict[str, tuple[str, ...]] = {
    "sum": ("d(sum {0})/d{0} = 1 per element: g copied to {s}",),
    "sum_dim": ("d(sum_dim({0}, {a0}))/d{0} = 1: g {g} copied along dim {a0} to {s}",),
    "mean_dim": ("d(mean_dim({0}, {a0}))/d{0} = 1/n: g {g} / n copied along dim {a0} to {s}",),
    "max": ("d(max {0})/d{0} = 1 at the max (ties share it), 0 elsewhere: g put there in {s}",),
    "min": ("d(min {0})/d{0} = 1 at the min (ties share it), 0 elsewhere: g put there in {s}",),
    "max_dim": ("d(max_dim({0}, {a0}))/d{0} = 1 at each arg-max along dim {a0}: g {g} scattered to {s}",),
    "min_dim": ("d(min_dim({0}, {a0}))/d{0} = 1 at each arg-min along dim {a0}: g {g} scattered to {s}",),
    "matmul": ("d({0}@{1})/d{0} = g @ {1}^T: {g} @ {t1} -> {s}",
               "d({0}@{1})/d{1} = {0}^T @ g: {t0} @ {g} -> {s}"),
    "reshape": ("d(reshape {0})/d{0} = 1: g {g} reshaped back to {s}",),
    "swap_dims": ("d(swap_dims({0}, {a0}, {a1}))/d{0}: g {g} with dims {a0}, {a1} swapped back -> {s}",),
    "permute": ("d(permute({0}, {a0}))/d{0}: g {g} permuted back -> {s}",),
    "expand": ("d(expand {0})/d{0}: g {g} summed over the expanded dims -> {s}",),
    "slice": ("d(slice {0})/d{0}: g {g} put at its slice in zeros {s}",),
    "slice_assign": ("d/d{0}: g {g} with the assigned region zeroed -> {s}",
                     "d/d{1}: g's assigned region -> {s}"),
    "cat": ("d(cat)/d{i}: g {g}'s part for this input -> {s}",),
    "gather": ("d(gather({0}))/d{0} = 1 at each gathered place: g {g} scattered into zeros {s}",),
    "scatter": ("d/d{0} = 1: g {g} -> {s}", "d/d{1}: g gathered at the scattered places -> {s}"),
    "select": ("d(select({0}))/d{0}: g {g} added back at the selected rows of zeros {s}",),
    "select_assign": ("d/d{0} = 1: g {g} -> {s}", "d/d{1}: g's selected rows -> {s}"),
    "mask_where": ("d/d{0}: g {g} where the mask is off, 0 where on -> {s}",
                   "d/d{1}: g {g} where the mask is on, 0 elsewhere -> {s}"),
    "mask_fill": ("d(mask_fill {0})/d{0}: g {g} with the filled places zeroed -> {s}",),
    "cast": ("d(cast {0})/d{0} = 1: g {g} cast back -> {s}",),
    "to_device": ("d(to_device {0})/d{0} = 1: g {g} moved back -> {s}",),
    "conv1d": ("d(conv1d)/d{0} = conv_transpose1d(g, {1}): {g} -> {s}",
               "d(conv1d)/d{1} = g correlated with {0}: {g} -> {s}",
               "d(conv1d)/d{2} = g summed over batch and positions: {g} -> {s}"),
    "conv2d": ("d(conv2d)/d{0} = conv_transpose2d(g, {1}): {g} -> {s}",
               "d(conv2d)/d{1} = g correlated with {0}: {g} -> {s}",
               "d(conv2d)/d{2} = g summed over batch and positions: {g} -> {s}"),
    "conv_transpose2d": ("d(conv_transpose2d)/d{0} = conv2d(g, {1}): {g} -> {s}",
                         "d(conv_transpose2d)/d{1} = {0} correlated with g: {g} -> {s}",
                         "d(conv_transpose2d)/d{2} = g summed over batch and positions: {g} -> {s}"),
    "avg_pool2d": ("d(avg_pool2d {0})/d{0} = 1/window: g {g} spread over each window -> {s}",),
    "adaptive_avg_pool2d": ("d(adaptive_avg_pool2d {0})/d{0} = 1/window: g {g} spread over each window -> {s}",),
    "max_pool2d": ("d(max_pool2d {0})/d{0} = 1 at each window's max: g {g} put there -> {s}",),
    "max_pool2d_with_indices": ("d(max_pool2d {0})/d{0} = 1 at each window's max: g {g} put there -> {s}",),
    "embedding": ("d(embedding)/d{0}: g {g} added to the rows of the looked-up ids -> {s}",),
}


def _broadcast_note(g: np.ndarray, gi: np.ndarray) -> str:
    return "" if g.shape == gi.shape else f", summed over broadcast dims to {list(gi.shape)}"


def step_formula(step: Step, values: list) -> str:
    """The step's rule in one line with its numbers."""
    g = step.output_grad
    if step.op == "leaf":
        if g is None:
            return f"{step.name}: no gradient arrives"
        parts = [format_array(a) for _, a in step.incoming]
        if len(parts) > 1:
            return (f"{step.name}: {len(parts)} contributions arrive, summed: {' + '.join(parts)} = "
                    f"{format_array(g)}; stored as its gradient")
        how = "the seed" if step.index == 0 else "gradient"
        return f"{step.name}: {how} {format_array(g)} arrives; stored as its gradient"
    if g is None:
        return f"{step.name} ({step.op}): no gradient arrives, nothing to pass on"
    prefix = ""
    if step.index == 0:
        prefix = f"seed: d{step.name}/d{step.name} = {format_array(g)}; "
    elif len(step.incoming) > 1:
        prefix = (f"g = {' + '.join(format_array(a) for _, a in step.incoming)} = {format_array(g)}; ")
    names = step.parent_names
    rule = ELEMENTWISE.get(step.op)
    parts = []
    if rule is not None and len(names) >= len(rule[2]):
        _, expr, locals_ = rule
        e = expr.format(*names)
        for i, (text, local) in enumerate(locals_):
            gi = step.input_grads[i] if i < len(step.input_grads) else None
            if gi is None:
                continue
            local_text = text.format(*names)
            try:
                with np.errstate(all="ignore"):
                    lv = np.asarray(local([np.asarray(v, dtype=np.float64) for v in values], np.asarray(
                        step.value, dtype=np.float64), step.args), dtype=np.float64)
                shown = format_array(lv)
            except Exception:  # a value was not kept: the text says what, the numbers say the result
                shown = "?"
            head = f"d({e})/d{names[i]} = {local_text}"
            if shown != local_text and not re.fullmatch(r"-?\d+", local_text):
                head += f" = {shown}"
            parts.append(f"{head}; {format_array(g)} x {shown} = {format_array(gi)}{_broadcast_note(g, gi)}")
        return prefix + " | ".join(parts)
    templates = STRUCTURAL.get(step.op)
    fields = {"g": list(g.shape)}
    for k, a in enumerate(step.args[:2]):
        fields[f"a{k}"] = a if isinstance(a, (int, float, tuple, list, str)) else type(a).__name__
    for k, v in enumerate(values[:2]):
        if v is not None:
            fields[f"t{k}"] = list(np.swapaxes(np.asarray(v), -1, -2).shape) if np.ndim(v) >= 2 else list(np.shape(v))
    for i, gi in enumerate(step.input_grads):
        if gi is None:
            continue
        if templates is not None:
            template = templates[min(i, len(templates) - 1)]
            try:
                text = template.format(*names, s=list(gi.shape), i=names[i], **fields)
            except (IndexError, KeyError):
                text = f"d({step.op})/d{names[i]}: its rule maps g {list(g.shape)} -> {list(gi.shape)}"
        else:
            text = f"d({step.op})/d{names[i]}: its rule maps g {format_array(g)} -> {list(gi.shape)}"
        parts.append(f"{text} = {format_array(gi)}")
    if not parts:
        return prefix + f"{step.name} ({step.op}): g = {format_array(g)}; no parent gets a gradient"
    return prefix + " | ".join(parts)
