"""`SqliteDataset` and `SqliteDatasetWriter`: items in an SQLite file.

Burn stores large datasets (Hugging Face downloads, for one) in SQLite so
that items stream from disk with an index instead of living in memory. The
layout here, on the standard library's `sqlite3`:

- a table `meta` (`key`, `value`) holding `format = burnbook-sqlite-dataset`,
  `version = 1` and `encoding = msgpack`;
- one table per split (`"train"`, `"test"`, any name of letters, digits, `_-.`), with columns
  `row_id INTEGER PRIMARY KEY` (0, 1, 2, ... : SQLite's rowid, so `get(i)`
  is one B-tree lookup) and `item BLOB` (the item as MessagePack, see
  `codec.py`).

Split names are case-sensitive for burnbook but not for SQLite (table
names ignore case), so a writer refuses `"Train"` next to `"train"` before
writing anything. A file that cannot be read as a dataset (a foreign or
damaged file, a split table with other columns, an item whose bytes do not
decode) raises `DatasetError`, naming the file, the split and the row; a
missing file raises `DatasetNotFoundError`, and nothing is created.

The writer builds the file under a temporary name in the destination's
folder and renames it into place on `set_completed()`, so a crash never
leaves a half-written dataset where a reader would find it. Readers open the
file read-only (`file:...?mode=ro`) with one connection per process and
thread: a connection inherited through `fork` (a data-loader worker) is left
alone and a fresh one opened, as SQLite requires, so any number of reader
processes can share one file.
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import msgpack

from burnbook._atomic import _UMASK, _fsync_dir

from ..download import DatasetNotFoundError
from .base import Dataset, DatasetError
from .codec import decode_item, encode_item

FORMAT = "burnbook-sqlite-dataset"
VERSION = "1"
_SPLIT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_COLUMNS = ("row_id", "item")  # of every split table
# What a damaged item blob raises while it decodes: msgpack's own errors, and
# ValueError/TypeError/KeyError/IndexError from an array payload of the wrong form.
_DECODE_ERRORS = (msgpack.UnpackException, ValueError, TypeError, KeyError, IndexError,
                  OverflowError, RecursionError)
_FLUSH_EVERY = 1024
# Connections inherited through fork: kept referenced, never closed or used in
# the child (SQLite forbids using a connection across fork).
_ABANDONED: list = []


def _check_split(split: str) -> str:
    if (not isinstance(split, str) or not _SPLIT.match(split) or split.lower() == "meta"
            or split.lower().startswith("sqlite_")):
        raise ValueError(
            f"invalid split name {split!r}: use letters, digits, '_', '-' and '.', "
            "e.g. 'train' or 'test' ('meta' and 'sqlite_*' are reserved)"
        )
    return split


class SqliteDatasetWriter:
    """Writes items into a new SQLite dataset file, atomically.

    ```
    with SqliteDatasetWriter("mnist.db", overwrite=True) as writer:
        for item in items:
            writer.write(item, split="train")
    # leaving the block calls set_completed(); an exception discards the file
    ```

    `write(item, split="train")` returns the item's index in that split.
    Nothing is visible at `path` until `set_completed()`.
    """

    def __init__(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} already exists; pass overwrite=True to replace it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        self._tmp = Path(tmp)
        self._conn: sqlite3.Connection | None = sqlite3.connect(tmp)
        # The temporary file is thrown away on a crash, so no journal is needed.
        self._conn.execute("PRAGMA journal_mode=OFF")
        self._conn.execute("PRAGMA synchronous=OFF")
        self._conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._conn.executemany("INSERT INTO meta VALUES (?, ?)",
                               [("format", FORMAT), ("version", VERSION), ("encoding", "msgpack")])
        self._counts: dict[str, int] = {}
        self._pending: dict[str, list[tuple[int, bytes]]] = {}
        self.completed = False

    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            state = "completed" if self.completed else "aborted"
            raise RuntimeError(f"SqliteDatasetWriter for {self.path} is {state}; open a new writer")
        return self._conn

    def _ensure_split(self, split: str) -> None:
        if split not in self._counts:
            _check_split(split)
            for other in self._counts:
                if other.lower() == split.lower():
                    raise DatasetError(
                        f"{self.path}: split {split!r} collides with split {other!r}: SQLite table "
                        "names ignore case, so splits must differ in more than case "
                        "(this item was not written; the writer is unchanged)")
            self._live().execute(
                f'CREATE TABLE "{split}" (row_id INTEGER PRIMARY KEY, item BLOB NOT NULL)')
            self._counts[split] = 0
            self._pending[split] = []

    def write(self, item: Any, split: str = "train") -> int:
        """Append `item` to `split` (created on first use); its index there."""
        self._live()
        self._ensure_split(split)
        index = self._counts[split]
        self._pending[split].append((index, encode_item(item)))
        self._counts[split] = index + 1
        if len(self._pending[split]) >= _FLUSH_EVERY:
            self._flush(split)
        return index

    def write_many(self, items: Iterable[Any], split: str = "train") -> int:
        """Append every item of `items` to `split`; the split's new length."""
        self._live()
        self._ensure_split(split)
        for item in items:
            self.write(item, split)
        return self._counts[split]

    def _flush(self, split: str) -> None:
        rows = self._pending[split]
        if rows:
            self._live().executemany(f'INSERT INTO "{split}" (row_id, item) VALUES (?, ?)', rows)
            rows.clear()

    def set_completed(self) -> Path:
        """Commit everything and move the file to `path` (atomic rename)."""
        conn = self._live()
        for split in self._pending:
            self._flush(split)
        conn.commit()
        conn.close()
        self._conn = None
        with open(self._tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(self._tmp, 0o666 & ~_UMASK)
        os.replace(self._tmp, self.path)
        _fsync_dir(self.path.parent)
        self.completed = True
        return self.path

    def abort(self) -> None:
        """Discard everything written; `path` keeps what it held before."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if not self.completed:
            try:
                os.unlink(self._tmp)
            except FileNotFoundError:
                pass

    def __enter__(self) -> "SqliteDatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and not self.completed and self._conn is not None:
            self.set_completed()
        else:
            self.abort()

    def __del__(self) -> None:
        if getattr(self, "_conn", None) is not None:
            self.abort()


def _open_read_only(path: Path) -> sqlite3.Connection:
    # check_same_thread=False: the object may be handed to another thread, but
    # each thread still opens its own connection (see SqliteDataset._connection).
    return sqlite3.connect(path.as_uri() + "?mode=ro", uri=True, check_same_thread=False)


def _require_file(path: Path) -> None:
    """A `DatasetNotFoundError` naming `path` unless it is a file (checked
    first: SQLite would create a missing file, or fail without naming it)."""
    if not path.is_file():
        what = "is a folder, not" if path.is_dir() else "does not exist, so it holds no"
        raise DatasetNotFoundError(f"no SQLite dataset at {path}: the path {what} an SQLite dataset file")


def _read_meta(conn: sqlite3.Connection, path: Path) -> None:
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
        meta = {row[0]: row[1] for row in rows}
    except sqlite3.DatabaseError as err:
        raise DatasetError(f"{path} is not a burnbook SQLite dataset ({err})") from None
    if meta.get("format") != FORMAT:
        raise DatasetError(f"{path} is not a burnbook SQLite dataset (format {meta.get('format')!r})")
    if meta.get("version") != VERSION:
        raise DatasetError(f"{path}: dataset format version {meta.get('version')!r}, "
                           f"this burnbook reads {VERSION}")


def _check_columns(conn: sqlite3.Connection, path: Path, split: str) -> None:
    """The split's table has the columns a reader queries, or a `DatasetError`
    naming the table, the columns found and those expected."""
    found = [row[1] for row in conn.execute(f'PRAGMA table_info("{split}")')]
    if sorted(found) != sorted(_COLUMNS):
        raise DatasetError(
            f"{path}: the table of split {split!r} has columns {found}, expected "
            f"{list(_COLUMNS)} (row_id INTEGER PRIMARY KEY, item BLOB); "
            "it was not written by SqliteDatasetWriter")


class SqliteDataset(Dataset):
    """One split of an SQLite dataset file, opened read-only.

    `SqliteDataset(path, split="train", item_type=None)`: `item_type`, when
    given, rebuilds each item from the stored value (`item_type(**value)` for
    a dict, `item_type(value)` otherwise), e.g. a dataclass.
    """

    def __init__(self, path: str | os.PathLike, split: str = "train",
                 item_type: Callable[..., Any] | None = None) -> None:
        self.path = Path(path).resolve()
        self.split = _check_split(split)
        self.item_type = item_type
        self._local = threading.local()
        _require_file(self.path)
        conn = self._connection()
        _read_meta(conn, self.path)
        splits = _splits(conn)
        if split not in splits:
            near = [s for s in splits if s.lower() == split.lower()]
            hint = f" (split names are case-sensitive: did you mean {near[0]!r}?)" if near else ""
            raise KeyError(f"{self.path} has no split {split!r}; its splits are {splits}{hint}")
        _check_columns(conn, self.path, split)
        self._len = int(conn.execute(f'SELECT COUNT(*) FROM "{split}"').fetchone()[0])

    @classmethod
    def from_db_file(cls, path: str | os.PathLike, split: str = "train",
                     item_type: Callable[..., Any] | None = None) -> "SqliteDataset":
        """Burn's constructor name."""
        return cls(path, split, item_type)

    @staticmethod
    def splits(path: str | os.PathLike) -> list[str]:
        """The split names stored in the file at `path`, sorted."""
        path = Path(path).resolve()
        _require_file(path)
        conn = _open_read_only(path)
        try:
            _read_meta(conn, path)
            return _splits(conn)
        finally:
            conn.close()

    def _connection(self) -> sqlite3.Connection:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            if conn is not None:
                _ABANDONED.append(conn)
            conn = _open_read_only(self.path)
            local.conn, local.pid = conn, os.getpid()
        return conn

    def get(self, index: int) -> Any:
        if not 0 <= index < self._len:
            return None
        row = self._connection().execute(
            f'SELECT item FROM "{self.split}" WHERE row_id = ?', (int(index),)).fetchone()
        if row is None:
            raise DatasetError(f"{self.path}: split {self.split!r} has no row {index} (the file is damaged)")
        if not isinstance(row[0], bytes):
            raise DatasetError(f"{self.path}: split {self.split!r}, row {index}: the item is "
                               f"{type(row[0]).__name__}, not a MessagePack blob (the file is damaged)")
        try:
            value = decode_item(row[0])
        except _DECODE_ERRORS as err:
            detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            raise DatasetError(f"{self.path}: split {self.split!r}, row {index}: the item's "
                               f"{len(row[0])} bytes do not decode ({detail}); the file is damaged") from err
        if self.item_type is None:
            return value
        return self.item_type(**value) if isinstance(value, dict) else self.item_type(value)

    def len(self) -> int:
        return self._len

    def close(self) -> None:
        """Close this thread's connection (it reopens on the next `get`)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local = threading.local()

    # Connections never travel: a pickled dataset (a spawned worker) reopens.
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_local"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"SqliteDataset({str(self.path)!r}, split={self.split!r}, len={self._len})"


def _splits(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'meta'")
    return sorted(r[0] for r in rows)
