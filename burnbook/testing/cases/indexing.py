"""Indexing ops of one kind (float here; `int.py` and `bool.py` reuse
`indexing_cases`): gather, scatter (adds), select, select_assign (adds),
mask_where, mask_fill. Indices repeat on purpose: scatter and select_assign
must add every contribution, not keep the last."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..case import Case, bools, shape_id as _t, uniform

F = "indexing"


def _index(rng, shape, size):
    return rng.integers(0, size, size=shape).astype(np.int64)


def _scatter_ref(dim, x, idx, v):
    out = x.copy()
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        out[tuple(target)] += v[pos]
    return out


def _select_assign_ref(dim, x, idx, v):
    out = np.moveaxis(x.copy(), dim, 0)
    np.add.at(out, idx, np.moveaxis(v, dim, 0))
    return np.moveaxis(out, 0, dim)


# (shape of x, dim, shape of the indices)
_GATHERS = (((3, 4), 1, (3, 2)), ((3, 4), 0, (5, 4)), ((2, 3, 4), 2, (2, 3, 6)))
_SELECTS = (((3, 4), 0, 5), ((3, 4), 1, 2), ((2, 3, 4), 2, 6))
_MASKS = ((3, 4), (2, 3, 4), (7,))


def indexing_cases(kind: str, family: str, make: Callable, adds: bool = True,
                   fill: object = 1.5) -> list[Case]:
    """The indexing cases of `kind`; `adds` includes gather, scatter and
    select_assign (not for Bool), `fill` is mask_fill's value (None: no mask_fill)."""
    k = kind
    cases = []
    for s, dim, ishape in _GATHERS if adds else ():
        cases.append(Case(f"{k}_gather[{_t(s)},dim={dim},{_t(ishape)}]", family, f"{k}_gather",
                          (lambda s, dim, ishape: lambda rng: (make(rng, s), _index(rng, ishape, s[dim])))(s, dim, ishape),
                          (lambda dim: lambda B, d, x, i: getattr(B, f"{k}_gather")(dim, x, i))(dim),
                          (lambda dim: lambda x, i: np.take_along_axis(x, i, dim))(dim)))
        cases.append(Case(
            f"{k}_scatter[{_t(s)},dim={dim},{_t(ishape)}]", family, f"{k}_scatter",
            (lambda s, dim, ishape: lambda rng: (make(rng, s), _index(rng, ishape, s[dim]),
                                                 make(rng, ishape)))(s, dim, ishape),
            (lambda dim: lambda B, d, x, i, v: getattr(B, f"{k}_scatter")(dim, x, i, v))(dim),
            (lambda dim: lambda x, i, v: _scatter_ref(dim, x, i, v))(dim), atol=1e-5,
            note="repeated indices add up"))
    for s, dim, n in _SELECTS:
        cases.append(Case(f"{k}_select[{_t(s)},dim={dim},{n}]", family, f"{k}_select",
                          (lambda s, dim, n: lambda rng: (make(rng, s), _index(rng, (n,), s[dim])))(s, dim, n),
                          (lambda dim: lambda B, d, x, i: getattr(B, f"{k}_select")(x, dim, i))(dim),
                          (lambda dim: lambda x, i: np.take(x, i, axis=dim))(dim)))
        if adds:
            vshape = tuple(n if j == dim else size for j, size in enumerate(s))
            cases.append(Case(
                f"{k}_select_assign[{_t(s)},dim={dim},{n}]", family, f"{k}_select_assign",
                (lambda s, dim, n, vshape: lambda rng: (make(rng, s), _index(rng, (n,), s[dim]),
                                                        make(rng, vshape)))(s, dim, n, vshape),
                (lambda dim: lambda B, d, x, i, v: getattr(B, f"{k}_select_assign")(x, dim, i, v))(dim),
                (lambda dim: lambda x, i, v: _select_assign_ref(dim, x, i, v))(dim), atol=1e-5,
                note="repeated indices add up"))
    for s in _MASKS:
        cases.append(Case(f"{k}_mask_where[{_t(s)}]", family, f"{k}_mask_where",
                          (lambda s: lambda rng: (make(rng, s), bools(rng, s), make(rng, s)))(s),
                          lambda B, d, x, m, v: getattr(B, f"{k}_mask_where")(x, m, v),
                          lambda x, m, v: np.where(m, v, x)))
        if fill is not None:
            cases.append(Case(f"{k}_mask_fill[{_t(s)},{fill}]", family, f"{k}_mask_fill",
                              (lambda s: lambda rng: (make(rng, s), bools(rng, s)))(s),
                              lambda B, d, x, m: getattr(B, f"{k}_mask_fill")(x, m, fill),
                              lambda x, m: np.where(m, np.asarray(fill, x.dtype), x)))
    return cases


CASES: list[Case] = indexing_cases("float", F, uniform)
