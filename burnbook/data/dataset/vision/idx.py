"""A reader for the IDX format (MNIST's files), gzip-compressed or raw.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the
number of dimensions), one big-endian uint32 per dimension, then the values
in C order, big-endian. The values are read in one piece and viewed with
`np.frombuffer` (no per-item Python loop): reading the 60,000 MNIST training
images takes a few tens of milliseconds plus the gzip decompression.

The header is read first, so the exact size of the data is known before any
of it is inflated: a gzip file inflates to exactly that size or is refused,
and a header promising more than the file could honestly hold (16 times its
compressed size, see `burnbook._inflate`) is refused before inflating
anything. A few megabytes of gzip therefore never become gigabytes in
memory. A caller that knows what it expects (MNIST's [N, 28, 28] uint8, N
at most 70,000) passes a `check` that sees the header first.

Every malformed file raises `IdxError` naming the file and what is wrong.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

from burnbook._inflate import read_capped, ratio_limit

_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"

HeaderCheck = Callable[[np.dtype, tuple[int, ...]], None]


class IdxError(ValueError):
    """A malformed or unexpected IDX file; the message names the file."""


def read_idx(path: str | os.PathLike, check: HeaderCheck | None = None) -> np.ndarray:
    """The array stored in the IDX file at `path` (gzip or raw, told by its
    magic bytes, not its name), read-only.

    `check(dtype, dims)` runs on the header before the data is read and may
    raise `IdxError` to refuse a file that is not what the caller expects.
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        if not compressed:
            return _read(raw, path, size, False, check)
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                return _read(stream, path, size, True, check)
        except (gzip.BadGzipFile, EOFError, zlib.error) as err:
            raise IdxError(f"{path}: damaged gzip data ({err})") from None


def _read(stream: BinaryIO, path: Path, size: int, compressed: bool, check: HeaderCheck | None) -> np.ndarray:
    head = stream.read(4)
    if len(head) < 4:
        raise IdxError(f"{path}: truncated IDX file ({len(head)} bytes, the header alone is 4+)")
    zero0, zero1, code, ndim = head
    if zero0 != 0 or zero1 != 0 or code not in _TYPES or ndim == 0:
        raise IdxError(
            f"{path}: bad IDX magic number 0x{head.hex()} (expected 0x0000TTNN with type "
            f"TT in {{08, 09, 0b, 0c, 0d, 0e}} and NN >= 1 dimensions)"
        )
    header = 4 + 4 * ndim
    packed = stream.read(4 * ndim)
    if len(packed) < 4 * ndim:
        raise IdxError(f"{path}: truncated IDX header ({4 + len(packed)} bytes, {header} needed for "
                       f"{ndim} dimensions)")
    dims = tuple(int(d) for d in np.frombuffer(packed, dtype=">u4"))
    dtype = _TYPES[code]
    if check is not None:
        check(dtype, dims)
    expected = int(np.prod(dims, dtype=object)) * dtype.itemsize
    if not compressed:
        have = size - header
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
    elif expected > ratio_limit(size):
        raise IdxError(
            f"{path}: the header promises shape {list(dims)} ({expected:,} bytes), more than a "
            f"{size:,}-byte gzip file may inflate to ({ratio_limit(size):,} bytes): refused "
            "(a decompression bomb, or a wrong header)")
    data = read_capped(stream, expected)
    if data is None:
        raise IdxError(
            f"{path}: more bytes after the data of shape {list(dims)} ({expected:,} bytes): "
            "wrong counts in the header, or not an IDX file")
    if len(data) < expected:
        raise IdxError(
            f"{path}: truncated IDX data: the header promises shape {list(dims)} "
            f"({expected} bytes) but the file holds {len(data)}"
        )
    array = np.frombuffer(data, dtype=dtype).reshape(dims)
    array.flags.writeable = False
    return array


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
