"""The MessagePack encoding of dataset items (used by `SqliteDataset`).

MessagePack holds dicts, lists, ints, floats, strings, bytes, booleans and
`None` natively. On top of that:

- NumPy arrays (and anything NumPy can view as an array: objects with
  `__array__` or `__array_interface__`, such as PIL images or tensors) are
  stored as extension type 1, whose payload is the MessagePack list
  `[dtype.str, shape, raw bytes]` (C order, the dtype's own byte order), so
  an array comes back with its dtype and shape. Decoded arrays are writable
  copies, owned by the caller.
- NumPy scalars are stored as the Python number they hold.
- Tuples become lists; dataclass instances become dicts of their fields
  (read back as dicts; `SqliteDataset(item_type=...)` rebuilds the class).

Never pickle: a dataset file is data, not code.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgpack
import numpy as np

EXT_NDARRAY = 1


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return _pack_array(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if hasattr(obj, "__array__") or hasattr(obj, "__array_interface__"):
        return _pack_array(np.asarray(obj))
    raise TypeError(
        f"cannot store a {type(obj).__name__} in a dataset item: use dicts, lists, "
        "numbers, strings, bytes, None, NumPy arrays or dataclasses of those"
    )


def _pack_array(array: np.ndarray) -> msgpack.ExtType:
    if array.dtype.hasobject:
        raise TypeError("cannot store a NumPy array of Python objects in a dataset item")
    array = np.ascontiguousarray(array)
    payload = msgpack.packb([array.dtype.str, list(array.shape), array.tobytes()], use_bin_type=True)
    return msgpack.ExtType(EXT_NDARRAY, payload)


def _ext_hook(code: int, data: bytes) -> Any:
    if code != EXT_NDARRAY:
        raise ValueError(f"unknown MessagePack extension type {code} in a dataset item")
    dtype, shape, raw = msgpack.unpackb(data, raw=False)
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()


def encode_item(item: Any) -> bytes:
    """An item as MessagePack bytes (see the module docstring for the types)."""
    return msgpack.packb(item, default=_default, use_bin_type=True, strict_types=False)


def decode_item(data: bytes) -> Any:
    """The item that `encode_item` wrote (maps with non-string keys allowed)."""
    return msgpack.unpackb(data, raw=False, ext_hook=_ext_hook, strict_map_key=False)
