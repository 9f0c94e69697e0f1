"""Checks for chapter 26, Inside a tensor.

The oracle is NumPy: a view of `np.arange(n)` holds, in each element, the
storage cell it reads, and its strides (in bytes, divided by the item size)
and C-contiguity flag are NumPy's own, computed without burnbook."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, call_reader, compare, describe

TITLE = "Inside a tensor"


def _parts(answer, names: tuple[str, ...]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(names):
        raise AnswerError(f"your answer is {describe(answer)}; pass a {len(names)}-tuple ({', '.join(names)})")
    return tuple(answer)


def _ints(value, what: str) -> list[int]:
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, np.integer)) for v in value):
        return [int(v) for v in value]
    raise AnswerError(f"{what} is {describe(value)}; pass a list of ints")


def _layout(view: np.ndarray) -> tuple[list[int], list[int], int, list[int]]:
    """(shape, strides in elements, offset, cells in row-major order) of a view of np.arange."""
    strides = [s // view.itemsize for s in view.strides]
    cells = [int(c) for c in view.reshape(-1)]  # arange: every element's value is its storage cell
    offset = int(view.reshape(-1)[0]) if view.size else 0
    return list(view.shape), strides, offset, cells


def _permutation(answer) -> str | None:
    strides, permuted, cell = _parts(answer, ("the strides of [2, 3, 4]", "the strides after permute([2, 0, 1])",
                                              "the storage cell of element [1, 0, 2] of the permuted tensor"))
    c = np.arange(24).reshape(2, 3, 4)
    p = c.transpose(2, 0, 1)
    problem = compare(_ints(strides, "your strides"), _layout(c)[1], "your strides of [2, 3, 4]", rtol=0, atol=0)
    if problem:
        return problem + (" (row-major: the last dimension's stride is 1, each one before it the product of the "
                          "sizes after)")
    problem = compare(_ints(permuted, "your permuted strides"), _layout(p)[1], "your strides after permute",
                      rtol=0, atol=0)
    if problem:
        return problem + " (permute moves the strides with their dimensions: the new dim i is the old dims[i])"
    return compare(cell, int(p[1, 0, 2]), "your storage cell", rtol=0, atol=0)


def _slice(answer) -> str | None:
    shape, strides, offset, cells = _parts(answer, ("the shape", "the strides", "the offset", "the storage cells read"))
    expected = _layout(np.arange(12).reshape(3, 4)[1:3, 0:4:3])
    for given, right, what in zip((shape, strides, offset), expected, ("shape", "strides", "offset")):
        value = _ints(given, f"your {what}") if what != "offset" else given
        problem = compare(value, right, f"your {what}", rtol=0, atol=0)
        if problem:
            return problem + {"shape": " (a slice start:stop:step keeps ceil((stop - start) / step) entries)",
                              "strides": " (a step multiplies the stride of its dimension)",
                              "offset": " (the offset is the cell of the slice's first element)"}[what]
    problem = compare(_ints(cells, "your cells"), expected[3], "your cells", rtol=0, atol=0)
    return problem and problem + " (list them in row-major order: offset + i * stride0 + j * stride1)"


# The chapter's five reshapes, as (name, NumPy view of x's 12 cells, new shape).
_RESHAPES = [("x.reshape([6, 2])", lambda x: x, (6, 2)), ("x[0:2].reshape([8])", lambda x: x[0:2], (8,)),
             ("x[1:3].reshape([4, 2])", lambda x: x[1:3], (4, 2)),
             ("x[:, 0:2].T.reshape([6])", lambda x: x[:, 0:2].T, (6,)),
             ("x[:, 1:3].reshape([6])", lambda x: x[:, 1:3], (6,))]


def _copy_or_view(answer) -> str | None:
    sizes = _ints(answer, "your answer") if isinstance(answer, (list, tuple)) else None
    if sizes is None or len(sizes) != len(_RESHAPES):
        return (f"your answer is {describe(answer)}; pass the {len(_RESHAPES)} storage sizes "
                "(layout_of(...).storage) in the exercise's order")
    x = np.arange(12).reshape(3, 4)
    for given, (name, view, _) in zip(sizes, _RESHAPES):
        source = view(x)
        expected = x.size if source.flags["C_CONTIGUOUS"] else source.size  # a view keeps x's storage
        if given != expected:
            return (f"{name} is not a {'copy' if given == source.size else 'view'}: is its input contiguous? "
                    "(reshape views exactly the contiguous inputs)")
    return None


def _cases() -> list[tuple[str, np.ndarray]]:
    """Views of NumPy storage: the chapter's, then ones the reader has not seen."""
    x = np.arange(12).reshape(3, 4)
    y = np.arange(60).reshape(3, 4, 5)
    return [("x.T", x.T), ("x[1:3, 1:4]", x[1:3, 1:4]), ("x[:, 0:4:2]", x[:, 0:4:2]), ("x[1]", x[1]),
            ("x[:, 1:3]", x[:, 1:3]), ("x unsqueezed at 1", x[:, None, :]), ("x.reshape([2, 6])", x.reshape(2, 6)),
            ("x[0:1] expanded to [3, 4]", np.broadcast_to(x[0:1], (3, 4))),
            ("x[1:2]", x[1:2]), ("x[:, 2:3]", x[:, 2:3]), ("a [3, 4, 5] permuted to [2, 0, 1]", y.transpose(2, 0, 1)),
            ("a [3, 4, 5] sliced [1:, ::2, 3:]", y[1:, ::2, 3:]), ("a [3, 4, 5] row [2]", y[2]),
            ("a [3, 4, 5] sliced [:, 1:2, :]", y[:, 1:2, :]), ("a [3, 4, 5] sliced [0:1, :, 1:2]", y[0:1, :, 1:2])]


def _by_hand(answer) -> str | None:
    offsets, contiguous = _parts(answer, ("offsets(shape, strides, offset)", "contiguous(shape, strides)"))
    for i, (name, view) in enumerate(_cases()):
        shape, strides, offset, cells = _layout(view)
        on = f"on {name} (shape {shape}, strides {strides}, offset {offset})" + (" (new to you)" if i >= 8 else "")
        got = call_reader(offsets, tuple(shape), tuple(strides), offset, what="your offsets", on=on)
        problem = compare(list(got) if isinstance(got, (tuple, list, range)) else got, cells,
                          f"your offsets {on}", rtol=0, atol=0)
        if problem:
            return problem + " (every element in row-major order, the last index fastest, the offset included)"
        flag = call_reader(contiguous, tuple(shape), tuple(strides), what="your contiguous", on=on)
        if not isinstance(flag, (bool, np.bool_)):
            return f"your contiguous returned {describe(flag)} {on}; it should return True or False"
        if bool(flag) != bool(view.flags["C_CONTIGUOUS"]):
            return (f"your contiguous says {bool(flag)} {on}" + (" (a size-1 dimension is never stepped: its stride "
                                                                 "does not matter)" if 1 in shape else ""))
    return None


EXERCISES = [
    Exercise("26", 1, "Predict a permutation", _permutation,
             expects="a triple (the strides of [2, 3, 4], the strides after permute([2, 0, 1]), the storage cell of "
                     "element [1, 0, 2] of the permuted tensor)",
             hints=("Row-major strides: the last is 1, each one before it the product of the sizes after it.",
                    "permute reorders sizes and strides alike; an element's cell is offset + sum(index * stride).")),
    Exercise("26", 2, "Predict a slice", _slice,
             expects="a 4-tuple (shape, strides, offset, the storage cells read in row-major order) of x[1:3, 0:4:3]",
             hints=("Slicing never copies: it changes the shape, the offset and (with a step) the strides.",
                    "The offset is the cell of x[1, 0]; a step of 3 multiplies the column stride by 3.")),
    Exercise("26", 3, "Copy or view?", _copy_or_view,
             expects="a list of the five storage sizes, layout_of(...).storage of each reshape in order",
             hints=("reshape is a view exactly when its input is contiguous; otherwise it copies.",
                    "A view keeps x's storage of 12; a copy has a storage of its own size.")),
    Exercise("26", 4, "The offsets by hand", _by_hand,
             expects="a pair of functions (offsets(shape, strides, offset) -> list of cells, "
                     "contiguous(shape, strides) -> bool)",
             hints=("Walk every index in row-major order; its cell is offset + sum(index * stride).",
                    "Contiguous means the strides equal the row-major ones, skipping dimensions of size 1.")),
]
