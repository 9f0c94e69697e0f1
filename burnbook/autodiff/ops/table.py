"""The op table: `TABLE` maps each differentiable op to its `OpSpec` (forward
kind, what to save, the backward rule), filled by one decorator per rule.

Each family file declares its ops with one decorator per op, the forward's
shape (which arguments are tensors, what to save) on the decorator line and
the backward rule right below it:

    @unary("exp", save_out=True)
    def exp(B, g, n, x, out):
        return B.float_mul(g, out)

The `Autodiff` class body (autodiff/backend.py) names each op with its rule,
`float_exp = tracked(unary.exp)`; `Autodiff[B]` reads the op's row here to
build its forward on B (autodiff/declarations.py).

A rule gets the backend `B` to compute with, the output gradient `g`, the
node `n` (`n.parents`, `n.shape`, `n.args` = the op's static arguments) and
the saved tensors, and returns one gradient per parent (None where a parent
is untracked: check `n.parents[i]`). Rules use only protocol ops on `B`, so
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


def register(spec: OpSpec) -> None:
    """Add a row to `TABLE` (each op once)."""
    if spec.name in TABLE:
        raise ValueError(f"autodiff op table: {spec.name} declared twice")
    TABLE[spec.name] = spec


def unary(label: str, save_x: bool = False, save_out: bool = False,
          state: Callable | None = None, name: str | None = None):
    """`float_<label>(x, *static)`; rule `(B, g, n, x, out)`."""
    def deco(rule):
        register(OpSpec(name or f"float_{label}", label, "unary", rule,
                         (save_x,), save_out, (0,), state))
        return rule
    return deco


def binary(label: str, save: bool = False, name: str | None = None):
    """`float_<label>(x, y)`, broadcasting; rule `(B, g, n, x, y)`."""
    def deco(rule):
        register(OpSpec(name or f"float_{label}", label, "binary", rule, (save, save)))
        return rule
    return deco


def general(label: str, tensors: tuple, save: tuple | None = None, name: str | None = None):
    """An op whose tensor arguments sit at `tensors` (positions); the other
    arguments are static, in `n.args`; rule `(B, g, n, *saved_tensors)`."""
    def deco(rule):
        register(OpSpec(name or f"float_{label}", label, "general", rule,
                         save or (False,) * len(tensors), False, tensors))
        return rule
    return deco


def cat_op(label: str, state: Callable):
    """`float_cat(ps, dim)`: a list of tensors; rule `(B, g, n)`."""
    def deco(rule):
        register(OpSpec(f"float_{label}", label, "cat", rule, (), False, (), state))
        return rule
    return deco


# -- helpers the rules share ----------------------------------------------------

def zeros(B: Any, shape: tuple, like: Any) -> Any:
    """Zeros of `shape` with the device and dtype of `like`."""
    return B.float_full(tuple(shape), 0.0, B.float_device(like), B.float_dtype(like))


def unbroadcast(B: Any, g: Any, gshape: tuple, shape: tuple) -> Any:
    """Sum `g` (of shape `gshape`) back to `shape`: over every dim where the
    input had size 1 and the output did not (broadcasting's backward)."""
    if gshape == shape:
        return g
    for d, (s, gs) in enumerate(zip(shape, gshape)):
        if s == 1 and gs != 1:
            g = B.float_sum_dim(g, d)
    return g


def grad_for(B: Any, g: Any, n: Any, i: int) -> Any:
    """`g` summed back to parent `i`'s shape, or None when it is untracked."""
    p = n.parents[i]
    if p is None:
        return None
    return unbroadcast(B, g, n.shape, p.shape)
