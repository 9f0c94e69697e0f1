"""glibc's malloc told to keep freed memory for the next allocation, as a
tensor library's caching allocator does.

NumPy takes every array from malloc. By default glibc serves a block above a
threshold (128 KiB at first, raised as blocks are freed) with fresh pages
from mmap and returns the top of its heap to the OS once more than twice
that is free. A forward pass that allocates and frees the same few megabytes
on every call then has the kernel fault in and zero those pages every time
(`tests/test_malloc.py` counts the faults of that pattern both ways). Fixed thresholds
also turn glibc's adaptation off, so the behaviour does not depend on what
ran before.

`import burnbook` calls `keep_freed_memory()` once, as a process-level
step (`burnbook/__init__.py`). Only glibc's `mallopt` is called; elsewhere
(macOS, Windows, musl) nothing changes. `BURNBOOK_MALLOC=system` leaves the
allocator as it was (`keep`, or unset, is the default); any other value is
an error.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory", "state"]

# glibc's M_* parameter numbers (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# Blocks up to this size come from the heap; 32 MiB is the most glibc accepts
# on 64-bit systems. Larger arrays still get their own mapping, returned at free.
MMAP_THRESHOLD = 32 << 20
# Free memory kept at the top of the heap before glibc gives it back.
TRIM_THRESHOLD = 512 << 20

_state = "not configured"


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds (once per process); True when
    they are in force. Idempotent; raises ValueError only for a value of
    `BURNBOOK_MALLOC` other than `keep` and `system`."""
    global _state
    if _state.startswith("glibc"):
        return True
    choice = os.environ.get("BURNBOOK_MALLOC", "").strip().lower() or "keep"
    if choice not in ("keep", "system"):
        raise ValueError(f"BURNBOOK_MALLOC={os.environ['BURNBOOK_MALLOC']!r}: expected keep or system")
    if choice == "system":
        _state = "system default (BURNBOOK_MALLOC=system)"
        return False
    if not sys.platform.startswith("linux"):
        _state = f"system default ({sys.platform})"
        return False
    try:
        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version   # glibc only: musl's mallopt does nothing
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        _state = "system default (not glibc)"
        return False
    version.restype = ctypes.c_char_p
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1 or mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        _state = "system default (mallopt refused)"
        return False
    _state = (f"glibc {version().decode()}, freed memory kept (mmap threshold {MMAP_THRESHOLD >> 20} MiB, "
              f"trim threshold {TRIM_THRESHOLD >> 20} MiB)")
    return True


def state() -> str:
    """How the allocator is set, for reports."""
    return _state
