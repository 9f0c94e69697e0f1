"""Reading safetensors files with NumPy.

A safetensors file is an 8-byte little-endian header length `n`, then `n`
bytes of JSON, then one buffer of raw little-endian tensor bytes. The header
maps each tensor name to `{"dtype": "F32", "shape": [2, 3], "data_offsets":
[begin, end]}` (offsets into the buffer), plus an optional `__metadata__`
table of strings. Nothing in the format can run code.

The `safetensors` package is not used because its NumPy loader has no
bfloat16 (NumPy has no such type); this reader widens bf16 to float32 exactly
(see `_dtypes`), and checks every size and offset against the file so that a
damaged file gives a `RecordError` naming the tensor rather than garbage.

As the format requires (and the reference reader enforces), the tensors'
byte ranges must tile the buffer exactly: no two overlap, none leaves a
gap, none runs past the end. The whole header is checked before any tensor
is copied, so a header pointing ten thousand tensors at one gigabyte is
refused without copying it ten thousand times.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

from burnbook.record import RecordError
from ._dtypes import bf16_bits_to_f32

__all__ = ["read_safetensors", "looks_like_safetensors"]

_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}
# The reference implementation refuses headers larger than this.
_MAX_HEADER = 100_000_000


def looks_like_safetensors(head: bytes, file_size: int) -> bool:
    """Whether a file starting with `head` (at least 9 bytes) is framed as safetensors."""
    if len(head) < 9:
        return False
    (n,) = struct.unpack("<Q", head[:8])
    return 2 <= n <= min(_MAX_HEADER, file_size - 8) and head[8:9] == b"{"


def read_safetensors(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file, by name, as NumPy arrays in the
    order the header lists them (bf16 widened to float32)."""
    source = os.fspath(path)
    with open(source, "rb") as f:
        data = f.read()
    try:
        return _decode(data)
    except RecordError as err:
        raise RecordError(f"{source}: {err}") from None


def _decode(data: bytes) -> dict[str, np.ndarray]:
    if len(data) < 8:
        raise RecordError(f"not a safetensors file: {len(data)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > min(_MAX_HEADER, len(data) - 8):
        raise RecordError(f"not a safetensors file (or truncated): the header length {n} exceeds the "
                          f"{len(data) - 8} bytes after it")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"the safetensors header is not valid JSON ({err})") from None
    except RecursionError:
        raise RecordError("the safetensors header nests too deeply to be a header") from None
    if not isinstance(header, dict):
        raise RecordError(f"the safetensors header is a JSON {type(header).__name__}, not an object")
    buffer = memoryview(data)[8 + n:]
    entries = [(name, *_entry(name, entry, len(buffer))) for name, entry in header.items() if name != "__metadata__"]
    _check_tiling(entries, len(buffer))
    out: dict[str, np.ndarray] = {}
    for name, dtype_name, shape, begin, end in entries:
        dtype = np.dtype(_DTYPES[dtype_name])
        array = np.frombuffer(buffer[begin:end], dtype=dtype).reshape(shape)
        array = array.astype(dtype.newbyteorder("="), copy=True)
        out[name] = bf16_bits_to_f32(array) if dtype_name == "BF16" else array
    return out


def _check_tiling(entries: list[tuple[str, str, list, int, int]], size: int) -> None:
    """The byte ranges, in order, must cover [0, size) once each."""
    at, last = 0, None
    for name, _, _, begin, end in sorted(entries, key=lambda e: (e[3], e[4])):
        if begin < at:
            raise RecordError(f"tensor {name!r}: data_offsets [{begin}, {end}] overlap those of tensor {last!r}, "
                              f"which end at {at}")
        if begin > at:
            raise RecordError(f"tensor {name!r}: data_offsets [{begin}, {end}] leave bytes {at}..{begin} of the "
                              "data buffer to no tensor (the format allows no gaps)")
        at, last = end, name
    if at != size:
        raise RecordError(f"the tensors cover {at} bytes of the {size}-byte data buffer; the rest belongs to no "
                          "tensor (the format allows no trailing bytes)")


def _entry(name: str, entry: object, size: int) -> tuple[str, list, int, int]:
    """A header entry checked against the `size`-byte buffer: (dtype, shape, begin, end)."""
    if not isinstance(entry, dict):
        raise RecordError(f"tensor {name!r}: header entry is not an object")
    dtype_name, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype_name not in _DTYPES:
        raise RecordError(f"tensor {name!r}: element type {dtype_name!r} is not supported "
                          f"(supported: {', '.join(_DTYPES)})")
    if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
        raise RecordError(f"tensor {name!r}: invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)):
        raise RecordError(f"tensor {name!r}: invalid data_offsets {offsets!r}")
    begin, end = offsets
    itemsize = np.dtype(_DTYPES[dtype_name]).itemsize
    if not begin <= end <= size:
        raise RecordError(f"tensor {name!r}: data_offsets {offsets} fall outside the {size}-byte data buffer")
    numel = _numel(shape, (end - begin) // itemsize + 1)
    if end - begin != numel * itemsize:
        needs = f"{numel * itemsize}" if numel <= (end - begin) // itemsize else f"more than {end - begin}"
        raise RecordError(f"tensor {name!r}: {end - begin} bytes for shape {shape[:16]} of {dtype_name}, "
                          f"which needs {needs}")
    return dtype_name, shape, begin, end


def _numel(shape: list[int], cap: int) -> int:
    """The product of `shape`, or `cap` as soon as it reaches `cap` (a
    hostile shape of a million huge dims is not multiplied out)."""
    if 0 in shape:
        return 0
    numel = 1
    for d in shape:
        numel *= d
        if numel >= cap:
            return cap
    return numel


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
