"""Bounded decompression, shared by the record, IDX and `.pt` readers.

A few megabytes of deflated zeros inflate to gigabytes (about 1,000 to 1),
so no reader inflates a file whole: each reads the decompressed stream in
chunks and stops at a limit it knows before it starts. Where the format
declares the size (an IDX header, the pickle of a `.pt` file), the limit is
that size. Where nothing is declared (a gzip record), `ratio_limit` bounds
the output by the compressed size: real weights hardly compress (1.1 to 1
for trained float32), so 16 to 1 with a 64 MiB floor passes every honest
record while a bomb costs at most 16 times its size on disk.
"""

from __future__ import annotations

import gzip
import io
from typing import BinaryIO

__all__ = ["MAX_RATIO", "MIN_LIMIT", "ratio_limit", "read_capped", "gunzip_capped"]

MAX_RATIO = 16
MIN_LIMIT = 64 << 20
_CHUNK = 1 << 20


def ratio_limit(compressed_size: int) -> int:
    """The most bytes a stream of `compressed_size` bytes may inflate to when
    its format declares no size: `MAX_RATIO` times that, at least `MIN_LIMIT`."""
    return max(MIN_LIMIT, MAX_RATIO * compressed_size)


def read_capped(stream: BinaryIO, limit: int) -> bytearray | None:
    """Read `stream` to its end in chunks; None as soon as it passes `limit`
    bytes, so at most `limit` plus one chunk is ever held."""
    out = bytearray()
    while True:
        block = stream.read(min(_CHUNK, limit + 1 - len(out)))
        if not block:
            return out
        out += block
        if len(out) > limit:
            return None


def gunzip_capped(data: bytes, limit: int) -> bytearray | None:
    """The gzip `data` inflated (every member, CRCs checked), or None when the
    output would pass `limit` bytes. Damaged data raises what `gzip` raises
    (`gzip.BadGzipFile`, `EOFError`, `zlib.error`)."""
    with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as stream:
        return read_capped(stream, limit)
