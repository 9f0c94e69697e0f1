"""Recorders: a format and a precision, saving records to files or bytes.

| recorder                  | extension  | encoding (see codec) | gzip |
| ------------------------- | ---------- | -------------------- | ---- |
| `NamedMpkFileRecorder`    | `.mpk`     | named MessagePack    | no   |
| `NamedMpkGzFileRecorder`  | `.mpk.gz`  | named MessagePack    | yes  |
| `BinFileRecorder`         | `.bin`     | compact MessagePack  | no   |
| `BinGzFileRecorder`       | `.bin.gz`  | compact MessagePack  | yes  |
| `JsonGzFileRecorder`      | `.json.gz` | JSON                 | yes  |
| `PrettyJsonFileRecorder`  | `.json`    | indented JSON        | no   |
| `BinBytesRecorder`        | in memory  | compact MessagePack  | no   |

As in the Burn book (0.13), `DefaultFileRecorder` is `NamedMpkFileRecorder`
and `CompactRecorder` is `NamedMpkFileRecorder[HalfPrecisionSettings]`.

A recorder takes its precision settings as an argument or a subscript, both
defaulting to full precision::

    recorder = NamedMpkFileRecorder(FullPrecisionSettings)
    recorder = NamedMpkFileRecorder[HalfPrecisionSettings]()
    path = recorder.record(record, "artifacts/model")   # writes artifacts/model.mpk
    record = recorder.load("artifacts/model")           # or "artifacts/model.mpk"

The extension is appended unless the path already ends with it (Burn replaces
the extension instead; appending keeps names like `model-0.5` whole). Saving
is atomic (see `burnbook._atomic`). A file saved with any precision loads with
any recorder of the same format: each tensor records its stored type. Every
record carries a CRC-32 checksum that loading checks (see `checksum`).
Loading a gzip file inflates it in chunks up to a cap (`from_bytes`), so a
decompression bomb is refused, naming the file, before it fills memory.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, ClassVar

import msgpack

from burnbook._atomic import atomic_write
from burnbook._inflate import MAX_RATIO, gunzip_capped, ratio_limit

from . import codec
from .base import Record, RecordError, normalize
from .precision import FullPrecisionSettings, HalfPrecisionSettings, PrecisionSettings, precision_settings

__all__ = [
    "Recorder", "FileRecorder", "NamedMpkFileRecorder", "NamedMpkGzFileRecorder", "BinFileRecorder",
    "BinGzFileRecorder", "JsonGzFileRecorder", "PrettyJsonFileRecorder", "BinBytesRecorder",
    "DefaultFileRecorder", "DefaultRecorder", "CompactRecorder",
]

_GZIP_MAGIC = b"\x1f\x8b"
_bound: dict[tuple[type, type], type] = {}


class Recorder:
    """A format (`encoding`, gzip or not) plus precision settings."""

    encoding: ClassVar[str] = "named-mpk"
    compressed: ClassVar[bool] = False
    pretty: ClassVar[bool] = False
    default_precision: ClassVar[type[PrecisionSettings]] = FullPrecisionSettings

    def __init__(self, precision: Any = None) -> None:
        self.precision = precision_settings(precision if precision is not None else self.default_precision)

    def __class_getitem__(cls, precision: Any) -> type:
        """`NamedMpkFileRecorder[HalfPrecisionSettings]`: the recorder with that default precision."""
        settings = precision_settings(precision)
        key = (cls, settings)
        if key not in _bound:
            name = f"{cls.__name__}[{settings.__name__}]"
            _bound[key] = type(name, (cls,), {"default_precision": settings, "__qualname__": name,
                                              "__module__": cls.__module__, "__doc__": cls.__doc__})
        return _bound[key]

    def _base(self) -> type:
        """The public recorder class this one is (a `Cls[Settings]` subclass counts as `Cls`)."""
        return next(k for k in type(self).__mro__ if k.__name__ in __all__ and "[" not in k.__name__)

    def _base_name(self) -> str:
        return self._base().__name__

    def __reduce__(self):  # `Cls[Settings]` classes are made on the fly: rebuild from the public class
        return (self._base(), (self.precision,))

    def _name(self) -> str:
        return f"{self._base_name()}[{self.precision.__name__}]"

    def __repr__(self) -> str:
        return f"{self._name()}()"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Recorder) and other.encoding == self.encoding and other.compressed == self.compressed
                and other.pretty == self.pretty and other.precision is self.precision)

    def __hash__(self) -> int:
        return hash((self.encoding, self.compressed, self.pretty, self.precision))

    def to_bytes(self, record: Any) -> bytes:
        """The whole saved document (what the file recorder would write), in memory."""
        chunks = self._chunks(record)
        data = b"".join(chunks)
        return gzip.compress(data, compresslevel=6, mtime=0) if self.compressed else data

    def from_bytes(self, data: bytes | bytearray | memoryview, source: str = "<bytes>",
                   max_bytes: int | None = None) -> Any:
        """Decode a saved document; `RecordError` naming `source` if anything is wrong.

        A gzip document is inflated in chunks and refused once it passes
        `max_bytes`; by default `_inflate.ratio_limit` of its size (16 times,
        at least 64 MiB), since a record declares no size up front and honest
        weights hardly compress. Pass a larger `max_bytes` for a record that
        compresses better than that (mostly zeros, say).
        """
        data = bytes(data)
        try:
            if self.compressed:
                if not data.startswith(_GZIP_MAGIC):
                    raise RecordError(f"not gzip-compressed ({_looks_like(data)}), but {self._base_name()} "
                                      "writes gzip files")
                limit = ratio_limit(len(data)) if max_bytes is None else max_bytes
                inflated = gunzip_capped(data, limit)
                if inflated is None:
                    raise RecordError(
                        f"the {len(data):,}-byte gzip data inflates past {limit:,} bytes and was refused "
                        f"(a decompression bomb, or a record that compresses better than {MAX_RATIO} to 1: "
                        "to load it anyway, pass a larger max_bytes= to load or from_bytes)")
                data = inflated
            elif data.startswith(_GZIP_MAGIC):
                raise RecordError(f"the data is gzip-compressed; {self._base_name()} reads uncompressed "
                                  "data (use the ...Gz recorder)")
            if self.encoding != "json" and data[:64].lstrip()[:1] in (b"{", b"["):
                raise RecordError("it looks like JSON, not MessagePack: load a JSON file with a JSON recorder")
            if self.encoding == "json" and not data[:64].lstrip().startswith(b"{"):
                raise RecordError(f"not a JSON record ({_looks_like(data)})")
            return codec.decode(data, self.encoding)
        except RecordError as err:
            raise RecordError(f"{source}: {err}") from None
        except Exception as err:  # msgpack, zlib, gzip, json, unicode, recursion: all mean corrupted
            raise RecordError(f"{source}: not a valid {self._base_name()} record: {_diagnose(err)}") from err

    def _chunks(self, record: Any):
        return codec.encode(normalize(record), self.encoding, self.precision, self.pretty)


class FileRecorder(Recorder):
    """A recorder writing files with its own extension (Burn's `FileRecorder`)."""

    extension: ClassVar[str] = ""

    def file_path(self, path: str | os.PathLike) -> Path:
        """`path` with this recorder's extension appended unless already there."""
        text = os.fspath(path)
        return Path(text if text.endswith("." + self.extension) else f"{text}.{self.extension}")

    def record(self, record: Any, path: str | os.PathLike) -> Path:
        """Save `record` (a `Record` or nested dict) atomically; returns the file written."""
        target = self.file_path(path)
        chunks = self._chunks(record)

        def write(f) -> None:
            out = gzip.GzipFile(filename="", fileobj=f, mode="wb", compresslevel=6, mtime=0) if self.compressed else f
            for chunk in chunks:
                out.write(chunk)
            if self.compressed:
                out.close()  # writes the gzip trailer; leaves f open

        return atomic_write(target, write)

    def load(self, path: str | os.PathLike, device: Any = None, max_bytes: int | None = None) -> Any:
        """Read a record saved by this kind of recorder. `device` is accepted
        for Burn's signature; records are host data, placed on a device when
        a module loads them. `max_bytes` caps a gzip file's inflated size
        (see `from_bytes`)."""
        target = self.file_path(path)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"no record file {target} (the {self._name()} "
                                    f"adds the extension .{self.extension})", str(target)) from None
        return self.from_bytes(data, source=str(target), max_bytes=max_bytes)


def _diagnose(err: Exception) -> str:
    """A reader's description of a low-level decoding error."""
    text = f"{type(err).__name__}: {err}"
    if isinstance(err, EOFError) or "incomplete input" in str(err):
        return f"the data is truncated, it ends in the middle of the record ({text})"
    if isinstance(err, msgpack.ExtraData):
        return f"unexpected bytes after the end of the record ({text})"
    if isinstance(err, (zlib.error, gzip.BadGzipFile)):
        return f"the gzip stream is corrupted (checksum or format error: {err})"
    if isinstance(err, UnicodeDecodeError):
        return f"a text field is not valid UTF-8 ({err.reason} at byte {err.start})"
    if isinstance(err, json.JSONDecodeError):
        return f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}"
    if isinstance(err, RecursionError):
        return "the data nests too deeply to be a record"
    return f"the data is corrupted ({text})"


def _looks_like(data: bytes) -> str:
    if data[:64].lstrip()[:1] in (b"{", b"["):
        return "it looks like JSON"
    if data[:1] and (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF)):
        return "it looks like MessagePack"
    return f"its first bytes are {data[:8].hex(' ')}" if data else "it is empty"


class NamedMpkFileRecorder(FileRecorder):
    """Named MessagePack (`.mpk`): self-describing, fast; Burn's default."""

    extension = "mpk"


class NamedMpkGzFileRecorder(FileRecorder):
    """Named MessagePack, gzip-compressed (`.mpk.gz`): smaller, CRC-checked."""

    extension, compressed = "mpk.gz", True


class BinFileRecorder(FileRecorder):
    """Compact binary MessagePack (`.bin`): the smallest uncompressed files."""

    encoding, extension = "bin", "bin"


class BinGzFileRecorder(FileRecorder):
    """Compact binary MessagePack, gzip-compressed (`.bin.gz`)."""

    encoding, extension, compressed = "bin", "bin.gz", True


class JsonGzFileRecorder(FileRecorder):
    """JSON, gzip-compressed (`.json.gz`)."""

    encoding, extension, compressed = "json", "json.gz", True


class PrettyJsonFileRecorder(FileRecorder):
    """Indented JSON (`.json`), for reading weights by eye."""

    encoding, extension, pretty = "json", "json", True


class BinBytesRecorder(Recorder):
    """In memory, compact binary: the bytes a `BinFileRecorder` file holds.

    `record(record)` returns bytes and `load(data)` reads them, as Burn's
    `BinBytesRecorder`; `to_bytes`/`from_bytes` are the same.
    """

    encoding = "bin"

    def record(self, record: Any, path: None = None) -> bytes:
        return self.to_bytes(record)

    def load(self, data: bytes | bytearray | memoryview, device: Any = None) -> Any:
        return self.from_bytes(data)


DefaultFileRecorder = NamedMpkFileRecorder
DefaultRecorder = DefaultFileRecorder[FullPrecisionSettings]
CompactRecorder = DefaultFileRecorder[HalfPrecisionSettings]
