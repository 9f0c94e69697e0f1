"""A cache keyed by the identity of NumPy arrays: what NdArray derives once
from a layer's weights (packed gate matrices, tiled depthwise taps) is
reused while those very arrays live.

NdArray never mutates a primitive, so the same arrays mean the same derived
value; an entry goes when any of its arrays is garbage-collected.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

# (tag, *ids) -> (weak references to the arrays, the value made from them)
_PACKED: dict = {}


def cached(tag: str, arrays: Sequence[Any], make: Callable[[], tuple]) -> tuple:
    """`make()`, or what it gave for these very arrays (`None` entries
    allowed) under `tag` before."""
    key = (tag, *map(id, arrays))
    hit = _PACKED.get(key)
    if hit is not None and all(r() is a for r, a in zip(hit[0], arrays)):
        return hit[1]
    value = make()

    def forget(_ref: Any, key: tuple = key) -> None:
        _PACKED.pop(key, None)
    refs = [(lambda: None) if a is None else weakref.ref(a, forget) for a in arrays]
    _PACKED[key] = (refs, value)
    return value
