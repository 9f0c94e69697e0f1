"""Layout ops of one kind (float here; `int.py` and `bool.py` reuse
`layout_cases` for theirs): reshape, swap_dims, permute, expand, slice with
steps (negative too), slice_assign (the input stays unchanged), cat."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..case import Case, shape_id as _t, uniform

F = "layout"

_RESHAPES = (((3, 4), (2, 6)), ((2, 3, 4), (24,)), ((6,), (1, 6, 1)), ((2, 3, 4), (4, 1, 6)))
_SWAPS = (((3, 4), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), 1, 1))
_PERMS = (((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (1, 2, 0)), ((3, 4), (1, 0)))
_EXPANDS = (((3, 1), (3, 4)), ((1, 4), (2, 4)), ((2, 1, 4), (2, 3, 4)), ((1,), (5,)))
# ranges as the protocol gets them: resolved slices, one per leading dim
_SLICES = (((4, 5), (slice(1, 3, 1),)),
           ((4, 5), (slice(3, 0, -1), slice(0, 5, 2))),
           ((4, 5), (slice(3, None, -2), slice(4, 5, 1))),
           ((2, 3, 4), (slice(0, 2, 1), slice(1, 2, 1), slice(0, 4, 3))))
_CATS = (((2, 3), (4, 3), 0), ((3, 1), (3, 2), 1), ((2, 1, 4), (2, 3, 4), 1))


def _slice_assigned(x, ranges, values):
    out = x.copy()
    out[ranges] = values
    return out, x


def layout_cases(kind: str, family: str, make: Callable) -> list[Case]:
    """The layout cases of `kind` ("float", "int" or "bool"), inputs from `make(rng, shape)`."""
    k = kind
    cases = [Case(f"{k}_reshape[{_t(a)}->{_t(b)}]", family, f"{k}_reshape",
                  (lambda a: lambda rng: (make(rng, a),))(a),
                  (lambda b: lambda B, d, x: getattr(B, f"{k}_reshape")(x, b))(b),
                  (lambda b: lambda x: x.reshape(b))(b)) for a, b in _RESHAPES]
    cases += [Case(f"{k}_swap_dims[{_t(s)},{i},{j}]", family, f"{k}_swap_dims",
                   (lambda s: lambda rng: (make(rng, s),))(s),
                   (lambda i, j: lambda B, d, x: getattr(B, f"{k}_swap_dims")(x, i, j))(i, j),
                   (lambda i, j: lambda x: np.swapaxes(x, i, j))(i, j)) for s, i, j in _SWAPS]
    cases += [Case(f"{k}_permute[{_t(s)},{_t(p)}]", family, f"{k}_permute",
                   (lambda s: lambda rng: (make(rng, s),))(s),
                   (lambda p: lambda B, d, x: getattr(B, f"{k}_permute")(x, p))(p),
                   (lambda p: lambda x: np.transpose(x, p))(p)) for s, p in _PERMS]
    cases += [Case(f"{k}_expand[{_t(a)}->{_t(b)}]", family, f"{k}_expand",
                   (lambda a: lambda rng: (make(rng, a),))(a),
                   (lambda b: lambda B, d, x: getattr(B, f"{k}_expand")(x, b))(b),
                   (lambda b: lambda x: np.broadcast_to(x, b).copy())(b)) for a, b in _EXPANDS]
    cases += [Case(f"{k}_slice[{_t(s)},{_ranges_id(r)}]", family, f"{k}_slice",
                   (lambda s: lambda rng: (make(rng, s),))(s),
                   (lambda r: lambda B, d, x: getattr(B, f"{k}_slice")(x, r))(r),
                   (lambda r: lambda x: x[r])(r)) for s, r in _SLICES]
    for s, r in _SLICES:
        region = np.empty(s)[r].shape
        cases.append(Case(
            f"{k}_slice_assign[{_t(s)},{_ranges_id(r)}]", family, f"{k}_slice_assign",
            (lambda s, region: lambda rng: (make(rng, s), make(rng, region)))(s, region),
            (lambda r: lambda B, d, x, v: (getattr(B, f"{k}_slice_assign")(x, r, v), x))(r),
            (lambda r: lambda x, v: _slice_assigned(x, r, v))(r),
            note="returns a new primitive: the second output is the input, unchanged"))
    cases += [Case(f"{k}_cat[{_t(a)}+{_t(b)},dim={dim}]", family, f"{k}_cat",
                   (lambda a, b: lambda rng: (make(rng, a), make(rng, b), make(rng, a)))(a, b),
                   (lambda dim: lambda B, d, x, y, z: getattr(B, f"{k}_cat")([x, y, z], dim))(dim),
                   (lambda dim: lambda x, y, z: np.concatenate([x, y, z], dim))(dim))
              for a, b, dim in _CATS]
    return cases


def _ranges_id(ranges: tuple) -> str:
    return "[" + ",".join(f"{r.start}:{'' if r.stop is None else r.stop}:{r.step}" for r in ranges) + "]"


CASES: list[Case] = layout_cases("float", F, uniform)
