"""Builders for the common shapes of cases: unary, binary (broadcasting),
with-a-scalar, along-a-dim. Shapes are small and few ranks are used, so a
compiling backend (Taichi compiles a kernel per dtype and rank) stays quick;
each family adds its own edge cases by hand.
"""

from __future__ import annotations

from typing import Callable

from ..case import Case, shape_id, uniform

# rank 1, 2, 3, with size-1 dims and a single element among them
SHAPES: tuple = ((7,), (3, 4), (1, 5), (2, 3, 4), (1,))
# same-rank pairs that broadcast (size 1 on either side), as the protocol promises
PAIRS: tuple = (((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((2, 1, 4), (1, 3, 1)),
                ((5,), (1,)))


def _call(op: str, *static) -> Callable:
    return lambda B, device, *xs: getattr(B, op)(*xs, *static)


def unary(family: str, op: str, reference: Callable, make: Callable = uniform,
          shapes: tuple = SHAPES, **kw) -> list[Case]:
    """`op(x)` against `reference(x)` on each shape."""
    return [Case(f"{op}[{shape_id(s)}]", family, op, (lambda s: lambda rng: (make(rng, s),))(s),
                 _call(op), reference, **kw) for s in shapes]


def binary(family: str, op: str, reference: Callable, make_a: Callable = uniform,
           make_b: Callable = uniform, pairs: tuple = PAIRS, **kw) -> list[Case]:
    """`op(a, b)` on broadcasting pairs of shapes."""
    return [Case(f"{op}[{shape_id(a, b)}]", family, op,
                 (lambda a, b: lambda rng: (make_a(rng, a), make_b(rng, b)))(a, b),
                 _call(op), reference, **kw) for a, b in pairs]


def with_scalar(family: str, op: str, reference: Callable, scalars: tuple,
                make: Callable = uniform, shapes: tuple = ((3, 4), (7,)), **kw) -> list[Case]:
    """`op(x, s)` for each scalar `s` (`reference(x, s)`)."""
    return [Case(f"{op}[{shape_id(shape)},{s}]", family, op,
                 (lambda shape: lambda rng: (make(rng, shape),))(shape),
                 _call(op, s), (lambda s: lambda x: reference(x, s))(s), **kw)
            for shape in shapes for s in scalars]


def along_dim(family: str, op: str, reference: Callable, make: Callable = uniform,
              shapes: tuple = ((7,), (3, 4), (2, 3, 4)), **kw) -> list[Case]:
    """`op(x, dim)` for every dim of each shape (`reference(x, dim)`)."""
    return [Case(f"{op}[{shape_id(shape)},dim={d}]", family, op,
                 (lambda shape: lambda rng: (make(rng, shape),))(shape),
                 _call(op, d), (lambda d: lambda x: reference(x, d))(d), **kw)
            for shape in shapes for d in range(len(shape))]
