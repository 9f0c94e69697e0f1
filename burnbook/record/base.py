"""Record types: `Record`, `ParamRecord` and `RecordError`.

A record is the saved state of something (a module, an optimizer): a nested,
read-only mapping from field names to

- another `Record` (a sub-module), given as a `Record` or any mapping;
- a `ParamRecord` (a module parameter: its id and its `TensorData`);
- a `TensorData` (a tensor that is not a parameter: a running mean, an
  optimizer moment); NumPy arrays are wrapped into `TensorData`;
- a plain value: `None`, `bool`, `int` (64-bit range), `float`, `str`;
- a list or tuple of any of these (a `Vec` of sub-modules, a shape...).

Records nest at most `MAX_DEPTH` levels (records, lists and tuples each
count one), far beyond any model, so a hostile file cannot make printing or
comparing a record overflow Python's stack. Fields read as attributes or
items: `record.conv1.weight` is `record["conv1"]["weight"]`. A field whose name is also a method of mappings
(`items`, `keys`, `values`, `get`) is read with `record["items"]`.
Records hold host data only, so one record loads onto any backend and device.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np

from burnbook.tensor import TensorData

__all__ = ["Record", "ParamRecord", "RecordError", "DTYPES", "MAX_DEPTH", "dtype_name"]

# How many records, lists and tuples may nest inside one another. Printing,
# comparing and flattening recurse over the levels, a few frames each, so
# this keeps them well inside Python's default recursion limit of 1000.
MAX_DEPTH = 100

# Element types a record can store, by Burn's short name; the order is the
# code used by the binary format, so only ever append to it.
DTYPES: dict[str, np.dtype] = {
    name: np.dtype(t) for name, t in (
        ("f16", np.float16), ("f32", np.float32), ("f64", np.float64),
        ("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("i64", np.int64),
        ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64),
        ("bool", np.bool_),
    )
}
_NAMES = {dt: name for name, dt in DTYPES.items()}


class RecordError(ValueError):
    """A record that cannot be loaded: a truncated, corrupted or foreign file,
    a format version this burnbook does not read, or data that does not fit.
    The message says what is wrong and names the file (or `<bytes>`)."""


def dtype_name(dtype: np.dtype) -> str:
    """Burn's short name (`"f32"`) of a storable element type; TypeError otherwise."""
    try:
        return _NAMES[np.dtype(dtype).newbyteorder("=")]
    except KeyError:
        raise TypeError(
            f"records store tensors of {', '.join(DTYPES)}; not {np.dtype(dtype)}"
        ) from None


class ParamRecord:
    """A module parameter in a record (Burn's `ParamSerde`): `id` and `data`."""

    __slots__ = ("id", "data")

    def __init__(self, id: str, data: TensorData | np.ndarray) -> None:
        if not isinstance(id, str):
            raise TypeError(f"ParamRecord: id must be a str, got {type(id).__name__}")
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "data", _as_tensor_data(data, "ParamRecord"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ParamRecord is read-only; build a new one")

    def __reduce__(self):
        return (ParamRecord, (self.id, self.data))

    @property
    def shape(self) -> list[int]:
        return self.data.shape

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParamRecord):
            return NotImplemented
        return self.id == other.id and tensor_equal(self.data, other.data)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ParamRecord(id={self.id!r}, {_tensor_summary(self.data)})"


class Record(Mapping):
    """A nested, read-only, attribute-accessible mapping of saved state.

    `Record({"conv1": {"weight": ParamRecord(...)}}, epoch=3)`: nested
    mappings become records; every leaf is checked (see the module doc), so
    a record that builds also saves. Equality compares tensors exactly
    (dtype, shape and values, NaN equal to NaN).
    """

    __slots__ = ("_fields", "_depth")

    def __init__(self, fields: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        if fields is not None and not isinstance(fields, Mapping):
            raise TypeError(f"Record() takes a mapping of field names, got {type(fields).__name__}")
        items = dict(fields.items() if fields is not None else ())
        items.update(kwargs)
        checked = {_key(k): normalize(v, k, 1) for k, v in items.items()}
        object.__setattr__(self, "_fields", checked)
        object.__setattr__(self, "_depth", _depth_below(checked.values()) + 1)

    @classmethod
    def _trusted(cls, fields: dict[str, Any]) -> "Record":
        """Wrap already-checked fields (used by the decoders, which limit the depth)."""
        record = cls.__new__(cls)
        object.__setattr__(record, "_fields", fields)
        object.__setattr__(record, "_depth", _depth_below(fields.values()) + 1)
        return record

    def depth(self) -> int:
        """How many levels of records, lists and tuples this record nests (1 when flat)."""
        return self._depth

    def __getitem__(self, key: str) -> Any:
        try:
            return self._fields[key]
        except KeyError:
            raise KeyError(f"record has no field {key!r} (its fields: {', '.join(self._fields) or 'none'})") from None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        raise AttributeError(f"record has no field {name!r} (its fields: {', '.join(fields) or 'none'})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Record is read-only; build a new one, e.g. Record({**record, name: value})")

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {k for k in self._fields if k.isidentifier()})

    def __reduce__(self):
        return (Record, (self._fields,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return _equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dicts (records inside lists too); leaves unchanged."""
        return _to_plain(self)

    def flatten(self, sep: str = ".") -> dict[str, Any]:
        """`{"conv1.weight": ParamRecord, "layers.0.bias": ..., "epoch": 3}`.

        Descends records, and lists/tuples holding records or tensors (their
        items named by index); other lists are leaves.
        """
        out: dict[str, Any] = {}
        _flatten(self, "", sep, out)
        return out

    def __repr__(self) -> str:
        return _format(self, 0)


# ---------------------------------------------------------------------------
# checking and comparing leaves


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"record field names must be str, got {type(key).__name__} {key!r}")
    return key


def _as_tensor_data(data: Any, where: str) -> TensorData:
    if isinstance(data, np.ndarray):
        data = TensorData.from_numpy(data)
    if not isinstance(data, TensorData):
        raise TypeError(f"{where}: expected TensorData, got {type(data).__name__}")
    dtype_name(data.array.dtype)  # refuses element types a file cannot hold
    return data


def normalize(value: Any, path: str = "", level: int = 0) -> Any:
    """`value` as a record node: mappings become `Record`s, arrays `TensorData`;
    a `TypeError` names the field holding anything a record cannot store, a
    `RecordError` one nested deeper than `MAX_DEPTH`. `level` counts the
    records, lists and tuples that already hold `value`."""
    if isinstance(value, Record):
        if level + value._depth > MAX_DEPTH:
            raise _too_deep(path)
        return value
    if isinstance(value, (Mapping, list, tuple)) and level >= MAX_DEPTH:
        raise _too_deep(path)
    if value is None or isinstance(value, (bool, float, str, ParamRecord)):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise TypeError(f"record field '{path}': int {value} does not fit in 64 bits")
        return value
    if isinstance(value, (TensorData, np.ndarray)):
        return _as_tensor_data(value, f"record field '{path}'")
    if isinstance(value, np.generic):
        return normalize(value.item(), path)
    if isinstance(value, Mapping):
        return Record._trusted({_key(k): normalize(v, f"{path}.{k}" if path else str(k), level + 1)
                                for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        items = [normalize(v, f"{path}[{i}]", level + 1) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise TypeError(
        f"record field '{path}': cannot store a {type(value).__name__}; records hold records/dicts, "
        "ParamRecord, TensorData, None, bool, int, float, str and lists/tuples of these"
    )


def _too_deep(path: str) -> "RecordError":
    shown = path if len(path) <= 80 else path[:60] + " ... " + path[-15:]
    return RecordError(f"record field '{shown}': records nest at most {MAX_DEPTH} levels deep "
                       "(records, lists and tuples each count one)")


def _depth_below(children: Any) -> int:
    """The deepest nesting among already-normalised `children`."""
    deepest = 0
    for node in children:
        if isinstance(node, Record):
            deepest = max(deepest, node._depth)
        elif isinstance(node, (list, tuple)):
            deepest = max(deepest, _depth_below(node) + 1)
    return deepest


def tensor_equal(a: TensorData, b: TensorData) -> bool:
    """Same dtype, shape and values (NaN equal to NaN)."""
    x, y = a.array, b.array
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    return bool(np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, Record) or isinstance(b, Record):
        return (isinstance(a, Record) and isinstance(b, Record) and a.keys() == b.keys()
                and all(_equal(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, TensorData) and isinstance(b, TensorData):
        return tensor_equal(a, b)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN
    return type(a) is type(b) and a == b


def _to_plain(node: Any) -> Any:
    if isinstance(node, Record):
        return {k: _to_plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_to_plain(v) for v in node)
    return node


def _flatten(node: Any, prefix: str, sep: str, out: dict) -> None:
    if isinstance(node, Record):
        for k, v in node.items():
            _flatten(v, f"{prefix}{sep}{k}" if prefix else k, sep, out)
    elif isinstance(node, (list, tuple)) and any(isinstance(v, (Record, ParamRecord, TensorData)) for v in node):
        for i, v in enumerate(node):
            _flatten(v, f"{prefix}{sep}{i}" if prefix else str(i), sep, out)
    else:
        out[prefix] = node


def _tensor_summary(data: TensorData) -> str:
    return f"{dtype_name(data.array.dtype)} {list(data.array.shape)}"


def _format(node: Any, depth: int) -> str:
    pad = "  " * (depth + 1)
    if isinstance(node, Record):
        if not node:
            return "Record {}"
        lines = [f"{pad}{k}: {_format(v, depth + 1)}," for k, v in node.items()]
        return "Record {\n" + "\n".join(lines) + "\n" + "  " * depth + "}"
    if isinstance(node, TensorData):
        return f"TensorData({_tensor_summary(node)})"
    if isinstance(node, (list, tuple)) and any(isinstance(v, (Record, list, tuple)) for v in node):
        open_, close = ("[", "]") if isinstance(node, list) else ("(", ")")
        lines = [f"{pad}{_format(v, depth + 1)}," for v in node]
        return open_ + "\n" + "\n".join(lines) + "\n" + "  " * depth + close
    if isinstance(node, (list, tuple)):
        inner = ", ".join(_format(v, depth) for v in node)
        return f"[{inner}]" if isinstance(node, list) else f"({inner}{',' if len(node) == 1 else ''})"
    return repr(node)
