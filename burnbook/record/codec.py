"""The record file formats: encoding a record to bytes and back.

Every file is one document: a header map and the record under `item`::

    {"format": "burnbook-record", "version": 1, "encoding": "named-mpk",
     "precision": "full", "producer": "burnbook 0.1.0", "item": <record>}

then, last, `"checksum": "crc32:..."` (see the `checksum` module; files
written before it still load). Three encodings of the item (gzip, when a
recorder uses it, wraps the whole document):

- `named-mpk` (MessagePack, self-describing): a record is a map of its field
  names; a tensor is `{"$tensor": {"dtype": "f16", "orig": "f32", "shape":
  [2, 3], "bytes": <raw little-endian bytes>}}`, a parameter `{"$param":
  {"id": "...", "tensor": {...}}}`, a tuple `{"$tuple": [...]}`; a field name
  starting with `$` is written with one more `$`.
- `bin` (MessagePack, compact): records stay maps of field names (Python has
  no struct type to decode positional fields into, unlike Burn's bincode), but
  tensors, parameters and tuples are MessagePack extension types: 1 = tensor
  (`u8 dtype code, u8 orig code, u8 ndim, ndim x u64 dims`, raw bytes; codes
  index `DTYPES`), 2 = parameter (`u32 id length`, UTF-8 id, tensor), 3 =
  tuple (a packed array).
- `json`: as `named-mpk`, with `"values": [flat list]` instead of `"bytes"`
  (NaN and infinities as Python's json writes them).

`dtype` is the stored element type (set by the precision settings for
floats) and `orig` the tensor's own, restored on load. Decoding checks every
part and raises `RecordError`; MessagePack lengths are capped by the size of
the input, so a corrupted length cannot allocate more than the file holds.
"""

from __future__ import annotations

import json
import math
import struct
import warnings
from typing import Any, Iterator

import msgpack
import numpy as np

from burnbook.tensor import TensorData

from . import checksum
from .base import DTYPES, MAX_DEPTH, ParamRecord, Record, RecordError, dtype_name
from .precision import PrecisionSettings, precision_settings

FORMAT = "burnbook-record"
VERSION = 1
ENCODINGS = ("named-mpk", "bin", "json")
_CODES = list(DTYPES)
_EXT_TENSOR, _EXT_PARAM, _EXT_TUPLE = 1, 2, 3
_TAGS = ("$tensor", "$param", "$tuple")


def encode(item: Any, encoding: str, precision: type[PrecisionSettings], pretty: bool = False) -> Iterator[bytes]:
    """The document for `item` (a normalised record node), in pieces to write."""
    from burnbook import __version__

    header = {"format": FORMAT, "version": VERSION, "encoding": encoding,
              "precision": precision.name, "producer": f"burnbook {__version__}"}
    if encoding == "json":
        doc = dict(header, item=_json_node(item, precision, ""))
        doc[checksum.KEY] = checksum.json_checksum(doc)
        encoder = json.JSONEncoder(indent=2 if pretty else None, separators=None if pretty else (",", ":"))
        for piece in encoder.iterencode(doc):
            yield piece.encode("utf-8")
        yield b"\n"
        return
    yield from checksum.seal_mpk(_mpk_document(header, item, precision, encoding == "bin"))


def _mpk_document(header: dict, item: Any, precision, binary: bool) -> Iterator[bytes]:
    packer = msgpack.Packer(autoreset=True, use_bin_type=True)
    yield packer.pack_map_header(len(header) + 2)  # the header, the item and the checksum seal_mpk appends
    for key, value in header.items():
        yield packer.pack(key) + packer.pack(value)
    yield packer.pack("item")
    yield from _mpk_node(item, precision, packer, "", binary)


def decode(data: bytes, encoding: str) -> Any:
    """The item of a document; `RecordError` (without the file name) when bad."""
    if encoding == "json":
        doc = json.loads(data)
    else:
        n = len(data)
        try:
            doc = msgpack.unpackb(data, raw=False, strict_map_key=True, max_str_len=n, max_bin_len=n,
                                  max_array_len=n, max_map_len=n, max_ext_len=n)
        except Exception:
            checksum.verify_unparsed(data)
            raise
    checksum.verify(data, doc, encoding)  # before the header, so damage there reads as damage
    _check_header(doc, encoding)
    item = doc["item"]
    return _from_bin(item, "", 1) if encoding == "bin" else _from_tagged(item, "", encoding == "json", 1)


def _check_header(doc: Any, encoding: str) -> None:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RecordError(f"not a burnbook record: no '{FORMAT}' header")
    if doc.get("version") != VERSION:
        raise RecordError(f"record format version {doc.get('version')!r}; this burnbook reads version {VERSION}")
    if doc.get("encoding") != encoding:
        raise RecordError(f"the record is in the {doc.get('encoding')!r} encoding, not {encoding!r}: "
                          "load it with the recorder that saved it")
    try:
        precision_settings(doc.get("precision"))
    except TypeError:
        raise RecordError(f"unknown precision {doc.get('precision')!r} in the header") from None
    if "item" not in doc:
        raise RecordError("the header has no 'item'")


# ---------------------------------------------------------------------------
# encoding


def _stored(data: TensorData, precision: type[PrecisionSettings], path: str) -> tuple[np.ndarray, str, str]:
    """The array as written (floats in the settings' type, little-endian), its dtype name, and the original's."""
    array = data.array
    orig = dtype_name(array.dtype)
    target = precision.float_dtype if array.dtype.kind == "f" else array.dtype
    with np.errstate(over="ignore"):
        out = array.astype(target.newbyteorder("<"), order="C", copy=False)
    if out.dtype.itemsize < array.dtype.itemsize and out.dtype.kind == "f":
        lost = int(np.count_nonzero(np.isinf(out) & np.isfinite(array)))
        if lost:
            warnings.warn(f"record field '{path}': {lost} value(s) exceed the range of "
                          f"{dtype_name(target)} and were saved as infinities", stacklevel=4)
    return out, dtype_name(target), orig


def _escape(key: str) -> str:
    return "$" + key if key.startswith("$") else key


def _json_node(node: Any, precision: type[PrecisionSettings], path: str) -> Any:
    if isinstance(node, Record):
        return {_escape(k): _json_node(v, precision, _join(path, k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_json_node(v, precision, f"{path}[{i}]") for i, v in enumerate(node)]
    if isinstance(node, tuple):
        return {"$tuple": [_json_node(v, precision, f"{path}[{i}]") for i, v in enumerate(node)]}
    if isinstance(node, ParamRecord):
        return {"$param": {"id": node.id, "tensor": _json_tensor(node.data, precision, path)}}
    if isinstance(node, TensorData):
        return {"$tensor": _json_tensor(node, precision, path)}
    return node


def _json_tensor(data: TensorData, precision: type[PrecisionSettings], path: str) -> dict:
    out, stored, orig = _stored(data, precision, path)
    return {"dtype": stored, "orig": orig, "shape": list(out.shape), "values": out.reshape(-1).tolist()}


def _mpk_node(node: Any, precision, packer: msgpack.Packer, path: str, binary: bool) -> Iterator[bytes]:
    if isinstance(node, Record):
        yield packer.pack_map_header(len(node))
        for key, value in node.items():
            yield packer.pack(key if binary else _escape(key))
            yield from _mpk_node(value, precision, packer, _join(path, key), binary)
    elif isinstance(node, list):
        yield packer.pack_array_header(len(node))
        for i, value in enumerate(node):
            yield from _mpk_node(value, precision, packer, f"{path}[{i}]", binary)
    elif isinstance(node, tuple) and binary:
        items = [_mpk_node(v, precision, packer, f"{path}[{i}]", binary) for i, v in enumerate(node)]
        payload = packer.pack_array_header(len(node)) + b"".join(b"".join(parts) for parts in items)
        yield _ext_header(_EXT_TUPLE, len(payload)) + payload
    elif isinstance(node, tuple):
        yield packer.pack_map_header(1) + packer.pack("$tuple")
        yield from _mpk_node(list(node), precision, packer, path, binary)
    elif isinstance(node, ParamRecord) and binary:
        ident = node.id.encode("utf-8")
        head, raw = _bin_tensor(node.data, precision, path)
        prefix = struct.pack("<I", len(ident)) + ident
        yield _ext_header(_EXT_PARAM, len(prefix) + len(head) + raw.nbytes) + prefix + head
        yield memoryview(raw)
    elif isinstance(node, ParamRecord):
        yield packer.pack_map_header(1) + packer.pack("$param") + packer.pack_map_header(2)
        yield packer.pack("id") + packer.pack(node.id) + packer.pack("tensor")
        yield from _named_tensor(node.data, precision, packer, path)
    elif isinstance(node, TensorData) and binary:
        head, raw = _bin_tensor(node, precision, path)
        yield _ext_header(_EXT_TENSOR, len(head) + raw.nbytes) + head
        yield memoryview(raw)
    elif isinstance(node, TensorData):
        yield packer.pack_map_header(1) + packer.pack("$tensor")
        yield from _named_tensor(node, precision, packer, path)
    else:
        yield packer.pack(node)


def _named_tensor(data: TensorData, precision, packer: msgpack.Packer, path: str) -> Iterator[bytes]:
    out, stored, orig = _stored(data, precision, path)
    raw = out.reshape(-1).view(np.uint8)
    yield (packer.pack_map_header(4) + packer.pack("dtype") + packer.pack(stored) + packer.pack("orig")
           + packer.pack(orig) + packer.pack("shape") + packer.pack(list(out.shape)) + packer.pack("bytes")
           + _bin_header(raw.nbytes))
    yield memoryview(raw)


def _bin_tensor(data: TensorData, precision, path: str) -> tuple[bytes, np.ndarray]:
    out, stored, orig = _stored(data, precision, path)
    head = struct.pack(f"<BBB{out.ndim}Q", _CODES.index(stored), _CODES.index(orig), out.ndim, *out.shape)
    return head, out.reshape(-1).view(np.uint8)


def _bin_header(n: int) -> bytes:
    if n >= 2**32:
        raise ValueError(f"a tensor of {n} bytes exceeds MessagePack's 4 GiB limit")
    return b"\xc6" + struct.pack(">I", n)


def _ext_header(code: int, n: int) -> bytes:
    if n >= 2**32:
        raise ValueError(f"a tensor of {n} bytes exceeds MessagePack's 4 GiB limit")
    return b"\xc9" + struct.pack(">Ib", n, code)


# ---------------------------------------------------------------------------
# decoding


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _where(path: str) -> str:
    return f"field '{path}'" if path else "the top level"


def _plain(node: Any, path: str) -> Any:
    if node is None or isinstance(node, (bool, float, str)):
        return node
    if isinstance(node, int) and -(2**63) <= node < 2**64:
        return node
    raise RecordError(f"unexpected {type(node).__name__} value at {_where(path)}")


def _check_depth(depth: int, path: str) -> None:
    """Refuse a record, list or tuple nested deeper than `MAX_DEPTH` (`depth`
    counts them from the item, which is 1)."""
    if depth > MAX_DEPTH:
        shown = path if len(path) <= 80 else path[:60] + " ... " + path[-15:]
        raise RecordError(f"{_where(shown)}: the record nests {depth} levels deep; records nest at most "
                          f"{MAX_DEPTH} levels (records, lists and tuples each count one)")


def _fields(node: Any, names: tuple[str, ...], what: str, path: str) -> list[Any]:
    if not isinstance(node, dict) or set(node) != set(names):
        raise RecordError(f"{_where(path)}: a {what} must be a map of {', '.join(names)}")
    return [node[n] for n in names]


def _from_tagged(node: Any, path: str, json_values: bool, depth: int) -> Any:
    if isinstance(node, dict):
        if len(node) == 1 and next(iter(node)) in _TAGS:
            tag, body = next(iter(node.items()))
            if tag == "$tuple":
                if not isinstance(body, list):
                    raise RecordError(f"{_where(path)}: a $tuple must hold an array")
                _check_depth(depth, path)
                return tuple(_from_tagged(v, f"{path}[{i}]", json_values, depth + 1) for i, v in enumerate(body))
            if tag == "$param":
                ident, tensor = _fields(body, ("id", "tensor"), "$param", path)
                if not isinstance(ident, str):
                    raise RecordError(f"{_where(path)}: a parameter id must be a string")
                return ParamRecord(ident, _tagged_tensor(tensor, path, json_values))
            return _tagged_tensor(body, path, json_values)
        _check_depth(depth, path)
        fields = {}
        for key, value in node.items():
            if not isinstance(key, str):
                raise RecordError(f"{_where(path)}: field names must be strings, found {key!r}")
            if key.startswith("$"):
                if not key.startswith("$$"):
                    raise RecordError(f"{_where(path)}: unknown tag {key!r}")
                key = key[1:]
            fields[key] = _from_tagged(value, _join(path, key), json_values, depth + 1)
        return Record._trusted(fields)
    if isinstance(node, list):
        _check_depth(depth, path)
        return [_from_tagged(v, f"{path}[{i}]", json_values, depth + 1) for i, v in enumerate(node)]
    return _plain(node, path)


def _tagged_tensor(body: Any, path: str, json_values: bool) -> TensorData:
    last = "values" if json_values else "bytes"
    stored, orig, shape, content = _fields(body, ("dtype", "orig", "shape", last), "$tensor", path)
    if json_values:
        return _tensor(stored, orig, shape, None, content, path)
    return _tensor(stored, orig, shape, content, None, path)


def _from_bin(node: Any, path: str, depth: int) -> Any:
    if isinstance(node, dict):
        _check_depth(depth, path)
        fields = {}
        for key, value in node.items():
            if not isinstance(key, str):
                raise RecordError(f"{_where(path)}: field names must be strings, found {key!r}")
            fields[key] = _from_bin(value, _join(path, key), depth + 1)
        return Record._trusted(fields)
    if isinstance(node, list):
        _check_depth(depth, path)
        return [_from_bin(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]
    if isinstance(node, msgpack.ExtType):
        payload = memoryview(node.data)
        if node.code == _EXT_TENSOR:
            return _bin_tensor_from(payload, path)
        if node.code == _EXT_PARAM:
            if len(payload) < 4:
                raise RecordError(f"{_where(path)}: truncated parameter")
            (size,) = struct.unpack_from("<I", payload)
            if len(payload) < 4 + size:
                raise RecordError(f"{_where(path)}: truncated parameter id")
            try:
                ident = bytes(payload[4:4 + size]).decode("utf-8")
            except UnicodeDecodeError:
                raise RecordError(f"{_where(path)}: parameter id is not UTF-8") from None
            return ParamRecord(ident, _bin_tensor_from(payload[4 + size:], path))
        if node.code == _EXT_TUPLE:
            n = len(payload)
            items = msgpack.unpackb(payload, raw=False, strict_map_key=True, max_str_len=n, max_bin_len=n,
                                    max_array_len=n, max_map_len=n, max_ext_len=n)
            if not isinstance(items, list):
                raise RecordError(f"{_where(path)}: a tuple must hold an array")
            _check_depth(depth, path)
            return tuple(_from_bin(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items))
        raise RecordError(f"{_where(path)}: unknown extension type {node.code}")
    return _plain(node, path)


def _bin_tensor_from(payload: memoryview, path: str) -> TensorData:
    if len(payload) < 3:
        raise RecordError(f"{_where(path)}: truncated tensor header")
    stored, orig, ndim = payload[0], payload[1], payload[2]
    if len(payload) < 3 + 8 * ndim:
        raise RecordError(f"{_where(path)}: truncated tensor header")
    shape = list(struct.unpack_from(f"<{ndim}Q", payload, 3))
    name = lambda code: _CODES[code] if code < len(_CODES) else f"code {code}"  # noqa: E731
    return _tensor(name(stored), name(orig), shape, payload[3 + 8 * ndim:], None, path)


def _tensor(stored: Any, orig: Any, shape: Any, raw: Any, values: Any, path: str) -> TensorData:
    """Check one tensor's parts and build its `TensorData` in the original dtype."""
    where = _where(path)
    if stored not in DTYPES or orig not in DTYPES:
        raise RecordError(f"{where}: unknown element type {stored!r}/{orig!r}")
    st, og = DTYPES[stored], DTYPES[orig]
    if st != og and not (st.kind == "f" and og.kind == "f"):
        raise RecordError(f"{where}: a {orig} tensor cannot be stored as {stored}")
    if (not isinstance(shape, list) or len(shape) > 32
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise RecordError(f"{where}: invalid tensor shape {shape!r}")
    n = math.prod(shape)
    if raw is not None:
        if not isinstance(raw, (bytes, memoryview)):
            raise RecordError(f"{where}: tensor bytes missing")
        if len(raw) != n * st.itemsize:
            raise RecordError(f"{where}: {len(raw)} bytes do not match shape {shape} of {stored} "
                              f"({n * st.itemsize} bytes expected)")
        array = np.frombuffer(raw, np.uint8) != 0 if st.kind == "b" else np.frombuffer(raw, st.newbyteorder("<"))
    else:
        array = _json_values(values, st, n, stored, shape, where)
    return TensorData._wrap(array.reshape(shape).astype(og, copy=True))


def _json_values(values: Any, st: np.dtype, n: int, stored: str, shape: list, where: str) -> np.ndarray:
    if not isinstance(values, list) or len(values) != n:
        count = len(values) if isinstance(values, list) else "no"
        raise RecordError(f"{where}: {count} values do not match shape {shape} ({n} expected)")
    allowed = {"b": {bool}, "f": {int, float}}.get(st.kind, {int})
    kinds = set(map(type, values))
    if not kinds <= allowed:
        found = ", ".join(sorted(t.__name__ for t in kinds - allowed))
        raise RecordError(f"{where}: a {stored} tensor holds {found} values")
    try:
        with np.errstate(over="raise", invalid="raise"):
            return np.array(values, dtype=st)
    except (OverflowError, FloatingPointError):
        raise RecordError(f"{where}: values out of range for {stored}") from None
