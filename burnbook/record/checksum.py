"""Record checksums: every recorder seals its document, so a changed byte is
a `RecordError` instead of a model with different weights.

The algorithm is CRC-32 (`zlib.crc32`, the polynomial of gzip and PNG). The
checksum is there to catch accidental damage (a bad sector, a bad copy, a
flipped bit in transfer): CRC-32 catches every error confined to 32
consecutive bits, so every changed byte, lets random damage through once in
four billion, and runs at gigabytes per second. A cryptographic digest would
add nothing against tampering, since whoever can edit a file can recompute
any unkeyed digest; that takes a signature.

The checksum is one more field of the document's top-level map, written
last: `"checksum": "crc32:1a2b3c4d"`. The format stays version 1: decoders
from before the checksum ignore header fields they do not know, and so do
MessagePack and JSON tools, while files from before it (no such field) still
load here, unchecked. What it covers depends on the encoding:

- MessagePack (named and bin): every byte before the field (the map header,
  the header fields and the item). The field is written with fixed-size
  encodings (an 8-character and a 14-character fixstr), so it is always the
  last `TRAILER_SIZE` bytes and the sum is checked on the raw bytes.
- JSON: the compact text of the parsed document without the field,
  `json.dumps(doc, separators=(",", ":"))`, keys in file order. Layout is
  thus outside the checksum: a `.json` record re-indented by an editor or a
  formatter still loads, while any change to a name or a value is caught.
  Both JSON recorders write the same checksum for the same record.

Gzip's own CRC-32 checks the compressed recorders' files first; the record's
checksum travels inside the document, so it still holds once a file has been
decompressed (by `gunzip`, say) or its document stored elsewhere.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any, Iterable, Iterator

import msgpack

from .base import RecordError

__all__ = ["KEY", "TRAILER_SIZE", "seal_mpk", "json_checksum", "verify", "verify_unparsed"]

KEY = "checksum"
# The top-level fields of a version-1 document before checksums existed.
_LEGACY_FIELDS = frozenset({"format", "version", "encoding", "precision", "producer", "item"})
_FORMAT = "burnbook-record"  # codec.FORMAT (codec imports this module)
_PATTERN = re.compile(r"crc32:[0-9a-f]{8}")
_TRAILER_HEAD = msgpack.packb(KEY) + msgpack.packb("crc32:00000000")[:7]  # key, then the value up to its digits
TRAILER_SIZE = len(_TRAILER_HEAD) + 8


def _text(crc: int) -> str:
    return f"crc32:{crc:08x}"


def _trailer(value: str) -> bytes:
    return msgpack.packb(KEY) + msgpack.packb(value)


def seal_mpk(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks`, a MessagePack document whose map header counts one field
    more than they hold, then that field: the checksum of every chunk."""
    crc = 0
    for chunk in chunks:
        crc = zlib.crc32(chunk, crc)
        yield chunk
    yield _trailer(_text(crc))


def json_checksum(doc: dict[str, Any]) -> str:
    """The checksum of a JSON document (its header fields and item, without the checksum)."""
    body = {k: v for k, v in doc.items() if k != KEY}
    return _text(zlib.crc32(json.dumps(body, separators=(",", ":")).encode("utf-8")))


def verify(data: bytes | bytearray, doc: Any, encoding: str) -> None:
    """`RecordError` if the document `doc`, parsed from `data`, carries a
    checksum that does not match; a document without one is accepted only
    with the fields every earlier version wrote (an unknown field there is
    most likely the checksum's own name, damaged)."""
    if not isinstance(doc, dict):
        return  # not a record at all; the header check says so
    if KEY not in doc:
        unknown = sorted(str(k) for k in doc if k not in _LEGACY_FIELDS)
        if unknown and doc.get("format") == _FORMAT:
            raise RecordError(f"the header has a field {unknown[0][:40]!r} that burnbook never writes and no "
                              "checksum: the record is damaged (or was edited)")
        return
    stored = doc[KEY]
    if encoding == "json":
        computed = json_checksum(doc)
        if stored != computed:
            raise _mismatch(stored, computed, " (a JSON record may be re-indented, but an edited name or value "
                                              "counts as damage: to load it anyway, delete its 'checksum' field)")
        return
    computed = _text(zlib.crc32(memoryview(data)[:-TRAILER_SIZE]))
    if bytes(data[-TRAILER_SIZE:]) != _trailer(computed):
        raise _mismatch(stored, computed)


def verify_unparsed(data: bytes | bytearray) -> None:
    """For MessagePack `data` that failed to parse: `RecordError` saying the
    checksum does not match if it ends with a checksum field (the parser's
    own error, which the caller raises otherwise, would only say where the
    damage broke the structure)."""
    tail = bytes(data[-TRAILER_SIZE:])
    if len(tail) < TRAILER_SIZE or not tail.startswith(_TRAILER_HEAD):
        return
    stored = tail[len(_TRAILER_HEAD) - 6:].decode("ascii", "replace")
    computed = _text(zlib.crc32(memoryview(data)[:-TRAILER_SIZE]))
    if stored != computed:
        raise _mismatch(stored, computed)


def _mismatch(stored: Any, computed: str, hint: str = "") -> RecordError:
    shown = stored if isinstance(stored, str) and _PATTERN.fullmatch(stored) else repr(stored)[:40]
    return RecordError(f"the checksum does not match (stored {shown}, computed {computed}): the record was "
                       f"damaged after it was saved{hint}")
