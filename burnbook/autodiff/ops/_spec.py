"""How a differentiable op is declared: the single op table and its helpers.

Each family file declares its ops with one decorator per op, the forward's
shape (which arguments are tensors, what to save) on the decorator line and
the backward rule right below it:

    @unary("exp", save_out=True)
    def exp(F, g, n, x, out):
        return F.float_mul(g, out)

A rule gets the backend `F` to compute with, the output gradient `g`, the
node `n` (`n.parents`, `n.shape`, `n.args` = the op's static arguments) and
the saved tensors, and returns one gradient per parent (None where a parent
is untracked: check `n.parents[i]`). Rules use only protocol ops on `F`, so
they run on every backend and can be recorded for a second derivative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class OpSpec:
    """One row of the table: op `name` (e.g. `float_exp`), graph `label`,
    forward `kind` (unary / binary / general / cat), saving and the rule."""

    name: str
    label: str
    kind: str
    rule: Callable
    save: tuple = ()          # per tensor position: save that input?
    save_out: bool = False
    tensors: tuple = (0,)     # positions of tensor arguments (kind "general")
    state: Callable | None = None  # (inner, out, *args) -> extra static args


TABLE: dict[str, OpSpec] = {}


def _register(spec: OpSpec) -> None:
    if spec.name in TABLE:
        raise ValueError(f"autodiff op table: {spec.name} declared twice")
    TABLE[spec.name] = spec


def unary(label: str, save_x: bool = False, save_out: bool = False,
          state: Callable | None = None, name: str | None = None):
    """`float_<label>(x, *static)`; rule `(F, g, n, x, out)`."""
    def deco(rule):
        _register(OpSpec(name or f"float_{label}", label, "unary", rule,
                         (save_x,), save_out, (0,), state))
        return rule
    return deco


def binary(label: str, save: bool = False, name: str | None = None):
    """`float_<label>(x, y)`, broadcasting; rule `(F, g, n, x, y)`."""
    def deco(rule):
        _register(OpSpec(name or f"float_{label}", label, "binary", rule, (save, save)))
        return rule
    return deco


def general(label: str, tensors: tuple, save: tuple | None = None, name: str | None = None):
    """An op whose tensor arguments sit at `tensors` (positions); the other
    arguments are static, in `n.args`; rule `(F, g, n, *saved_tensors)`."""
    def deco(rule):
        _register(OpSpec(name or f"float_{label}", label, "general", rule,
                         save or (False,) * len(tensors), False, tensors))
        return rule
    return deco


def cat_op(label: str, state: Callable):
    """`float_cat(ps, dim)`: a list of tensors; rule `(F, g, n)`."""
    def deco(rule):
        _register(OpSpec(f"float_{label}", label, "cat", rule, (), False, (), state))
        return rule
    return deco


# -- helpers the rules share ----------------------------------------------------

def zeros(F: Any, shape: tuple, like: Any) -> Any:
    """Zeros of `shape` with the device and dtype of `like`."""
    return F.float_full(tuple(shape), 0.0, F.float_device(like), F.float_dtype(like))


def unbroadcast(F: Any, g: Any, gshape: tuple, shape: tuple) -> Any:
    """Sum `g` (of shape `gshape`) back to `shape`: over every dim where the
    input had size 1 and the output did not (broadcasting's backward)."""
    if gshape == shape:
        return g
    for d, (s, gs) in enumerate(zip(shape, gshape)):
        if s == 1 and gs != 1:
            g = F.float_sum_dim(g, d)
    return g


def grad_for(F: Any, g: Any, n: Any, i: int) -> Any:
    """`g` summed back to parent `i`'s shape, or None when it is untracked."""
    p = n.parents[i]
    if p is None:
        return None
    return unbroadcast(F, g, n.shape, p.shape)
