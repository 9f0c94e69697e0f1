"""Where datasets live on disk, and downloading them with checksums.

The data root is `$BURNBOOK_DATA` when that variable is set (and not
empty), else the user cache folder `<cache>/burnbook`, where `<cache>` is
what platformdirs would pick: `$XDG_CACHE_HOME` or `~/.cache` on Linux,
`~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows.

`download_file(url, dest)` is the only function that touches the network
(tests replace it). `fetch(name, urls, folder, md5)` tries each mirror in
turn, checks the MD5 of what arrived, and only then moves the file into
place, so a failed or corrupted download never leaves a file behind, and
never leaves the folders it made for it: a mistyped `BURNBOOK_DATA` does not
grow a tree of empty folders. A folder that cannot hold the download (a file
in the way, no write permission) is a `DataFolderError` naming the path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Sequence

ENV_VAR = "BURNBOOK_DATA"


class ChecksumError(ValueError):
    """A file's MD5 is not the expected one (a corrupted or foreign download)."""


class DownloadError(OSError):
    """A file could not be downloaded from any mirror."""


class DatasetNotFoundError(FileNotFoundError):
    """A dataset's files are neither on disk nor downloadable; the message says
    which file, which folders were searched and how to point `BURNBOOK_DATA`
    at a copy."""


class DataFolderError(DatasetNotFoundError):
    """The folder a dataset is to be read from or downloaded into cannot be
    used: a file stands where a folder should be, or it cannot be written.
    The message names the path and the problem."""


def folder_problem(folder: str | os.PathLike, write: bool = True) -> str | None:
    """Why `folder` cannot hold files (a file in its place or in its path;
    with `write`, no permission to create files in the nearest existing
    folder), or None when nothing stands in the way."""
    folder = Path(folder)
    for path in (folder, *folder.parents):
        if not path.exists():  # also False below a file (ENOTDIR)
            continue
        if not path.is_dir():
            return f"{path} is a file, not a folder"
        if write and not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is read-only (no permission to create files in it)"
        return None
    return None


def _make_folder(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; the folders created, outermost first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DataFolderError(f"cannot create the folder {folder}: {err.strerror or err}") from None
    return missing


def _remove_folders(created: list[Path]) -> None:
    for path in reversed(created):
        try:
            path.rmdir()  # only while empty
        except OSError:
            return


def user_cache_dir() -> Path:
    """`<cache>/burnbook` for this platform (see the module docstring)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "burnbook"


def data_root() -> Path:
    """`$BURNBOOK_DATA` if set, else `user_cache_dir()`."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else user_cache_dir()


def md5sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The hex MD5 digest of a file, read in chunks."""
    digest = hashlib.md5()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_md5(path: str | os.PathLike, expected: str) -> None:
    """Raise `ChecksumError` naming the file unless its MD5 is `expected`."""
    actual = md5sum(path)
    if actual != expected.lower():
        raise ChecksumError(f"{os.fspath(path)}: MD5 {actual}, expected {expected} (corrupted or wrong file)")


def download_file(url: str, dest: str | os.PathLike, timeout: float = 60.0) -> None:
    """Download `url` to `dest` (overwritten). The network lives here only."""
    request = urllib.request.Request(url, headers={"User-Agent": "burnbook"})
    with urllib.request.urlopen(request, timeout=timeout) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out)


def fetch(name: str, urls: Sequence[str], folder: str | os.PathLike, md5: str | None) -> Path:
    """Download `name` into `folder` from the first mirror that serves it with
    the right checksum; the final path. Raises `DownloadError` (listing every
    mirror's failure) or, when every mirror served bad bytes, `ChecksumError`;
    `DataFolderError` when `folder` cannot hold the file. On failure the
    folders made for the download are removed again."""
    folder = Path(folder)
    problem = folder_problem(folder)
    if problem is not None:
        raise DataFolderError(f"cannot download {name} into {folder}: {problem}")
    created = _make_folder(folder)
    try:
        return _fetch_into(name, urls, folder, md5)
    except BaseException:
        _remove_folders(created)
        raise


def _fetch_into(name: str, urls: Sequence[str], folder: Path, md5: str | None) -> Path:
    dest = folder / name
    failures: list[str] = []
    bad_checksums = 0
    for url in urls:
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
        except OSError as err:
            raise DataFolderError(f"cannot download {name} into {folder}: cannot create a file there "
                                  f"({err.strerror or err})") from None
        os.close(fd)
        try:
            download_file(url, tmp)
            if md5 is not None:
                verify_md5(tmp, md5)
            os.replace(tmp, dest)
            return dest
        except ChecksumError as err:
            bad_checksums += 1
            failures.append(f"{url}: {err}")
        except Exception as err:  # network errors come in many types
            failures.append(f"{url}: {type(err).__name__}: {err}")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    detail = "\n  ".join(failures) or "no mirror given"
    if failures and bad_checksums == len(failures):
        raise ChecksumError(f"{name}: every download had the wrong checksum:\n  {detail}")
    raise DownloadError(f"could not download {name}:\n  {detail}")
