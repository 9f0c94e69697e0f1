"""The one set of conformance cases, by op family (one module each):
`check_backend` runs them, and so does the project's own suite
(`tests/backend/test_conformance.py`), one pytest item per case.

- creation.py    from_data / into_data, full, empty, random, shape, device, dtype, cast, arange
- arithmetic.py  add, sub, mul, div, powf, scalar forms, neg, abs, clamp
- linalg.py      matmul (family "arithmetic")
- math.py        exp, log, log1p, erf, sqrt, recip, cos, sin, tanh, relu, sigmoid
- comparison.py  equal, greater, lower... and their `_elem` forms
- reductions.py  sum, mean_dim, max, min, arg-extremes
- indexing.py    gather, scatter, select, select_assign, mask_where, mask_fill
- layout.py      reshape, swap_dims, permute, expand, slice, slice_assign, cat
- int.py, bool.py  the Int and Bool ops (layout and indexing reuse the float builders)
- module.py      conv, transposed conv, pooling, embedding (family "module")
- empty.py       tensors with no elements, in several families
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ..case import Case
from ..report import FAMILIES
from . import arithmetic, bool as bool_cases, comparison, creation, empty, indexing, int as int_cases
from . import layout, linalg, math, module, reductions

CASES: tuple[Case, ...] = tuple(
    creation.CASES + arithmetic.CASES + linalg.CASES + math.CASES + comparison.CASES
    + reductions.CASES + indexing.CASES + layout.CASES + int_cases.CASES + bool_cases.CASES
    + module.CASES + empty.CASES)


def _unique(cases: tuple) -> None:
    seen: set[str] = set()
    for c in cases:
        if c.name in seen:
            raise ValueError(f"two conformance cases are named {c.name!r}")
        if c.family not in FAMILIES:
            raise ValueError(f"case {c.name!r}: unknown family {c.family!r}")
        seen.add(c.name)


_unique(CASES)


def select(cases: Iterable, families: Iterable[str] | str | None = None,
           ops: Iterable[str] | None = None) -> Iterator:
    """The cases of `cases` in `families` (all when None; one family may be
    given as a string) and, when `ops` is given, of those protocol ops only."""
    if isinstance(families, str):
        families = [families]
    wanted = None if families is None else set(families)
    if wanted is not None and (unknown := sorted(wanted - set(FAMILIES))):
        raise ValueError(f"unknown op families {unknown}; the families are {list(FAMILIES)}")
    op_set = None if ops is None else set(ops)
    for case in cases:
        if (wanted is None or case.family in wanted) and (op_set is None or case.op in op_set):
            yield case


def iter_cases(families: Iterable[str] | str | None = None, ops: Iterable[str] | None = None) -> Iterator[Case]:
    """The forward cases of `families` and `ops` (see `select`)."""
    return select(CASES, families, ops)
