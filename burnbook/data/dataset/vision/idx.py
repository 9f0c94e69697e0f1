"""A reader for the IDX format (MNIST's files), gzip-compressed or raw.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the
number of dimensions), one big-endian uint32 per dimension, then the values
in C order, big-endian. The whole file is read at once and viewed with
`np.frombuffer` (no per-item Python loop): reading the 60,000 MNIST training
images takes a few tens of milliseconds plus the gzip decompression.

Every malformed file raises `IdxError` naming the file and what is wrong.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np

_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"


class IdxError(ValueError):
    """A malformed or unexpected IDX file; the message names the file."""


def read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes, decompressed when it is gzip (told by its magic bytes,
    not its name)."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] != _GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as err:
        raise IdxError(f"{path}: damaged gzip data ({err})") from None


def parse_idx(raw: bytes, path: str | os.PathLike = "<bytes>") -> np.ndarray:
    """The array stored in IDX bytes `raw` (read-only view; native byte order
    for single-byte types, big-endian dtypes otherwise)."""
    if len(raw) < 4:
        raise IdxError(f"{path}: truncated IDX file ({len(raw)} bytes, the header alone is 4+)")
    zero0, zero1, code, ndim = raw[0], raw[1], raw[2], raw[3]
    if zero0 != 0 or zero1 != 0 or code not in _TYPES or ndim == 0:
        raise IdxError(
            f"{path}: bad IDX magic number 0x{raw[:4].hex()} (expected 0x0000TTNN with type "
            f"TT in {{08, 09, 0b, 0c, 0d, 0e}} and NN >= 1 dimensions)"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IdxError(f"{path}: truncated IDX header ({len(raw)} bytes, {header} needed for {ndim} dimensions)")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = _TYPES[code]
    count = int(np.prod(dims, dtype=np.int64))
    expected = count * dtype.itemsize
    have = len(raw) - header
    if have < expected:
        raise IdxError(
            f"{path}: truncated IDX data: the header promises shape {list(dims)} "
            f"({expected} bytes) but the file holds {have}"
        )
    if have > expected:
        raise IdxError(
            f"{path}: {have - expected} bytes after the data of shape {list(dims)}: "
            "wrong counts in the header, or not an IDX file"
        )
    return np.frombuffer(raw, dtype=dtype, count=count, offset=header).reshape(dims)


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """The array stored in the IDX file at `path` (gzip or raw)."""
    return parse_idx(read_bytes(path), path)


def write_idx(path: str | os.PathLike, array: np.ndarray, compress: bool | None = None) -> Path:
    """Write `array` as an IDX file (gzip when `compress`, default: the name
    ends in `.gz`). For tests and for building small datasets."""
    path = Path(path)
    array = np.asarray(array)
    codes = {np.dtype(v).newbyteorder(">") if v.itemsize > 1 else v: k for k, v in _TYPES.items()}
    be = array.dtype.newbyteorder(">") if array.dtype.itemsize > 1 else array.dtype
    if be not in codes:
        raise TypeError(f"write_idx: dtype {array.dtype} has no IDX type code")
    header = bytes([0, 0, codes[be], array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    data = header + np.ascontiguousarray(array, dtype=be).tobytes()
    if compress if compress is not None else path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    path.write_bytes(data)
    return path
