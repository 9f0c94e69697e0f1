"""Atomic file writes, shared by configs and recorders.

A checkpoint or config is written to a temporary file in the destination's
own folder, flushed and fsync'ed, then renamed over the destination with
`os.replace` (atomic on POSIX and Windows when both paths are on one file
system, which the same folder guarantees). A crash or an exception halfway
through leaves the previous file untouched and removes the temporary one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

# mkstemp creates files readable by the owner only; a saved checkpoint should
# get the permissions any other new file would (0o666 less the umask).
_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Call `write(f)` on a temporary binary file, then move it to `path`.

    `write` may write in as many pieces as it likes; if it raises, the
    exception propagates and `path` keeps whatever it held before.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_UMASK
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(folder)
    return path


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
