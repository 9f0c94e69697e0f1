"""Autotune (Burn's): where an op has kernel variants, time each once per
shape class on first use and keep the fastest, on disk.

A *shape class* is what decides the winner (dtypes, channel counts, kernel
window, the size rounded to a power of two); the op computes it. On the
first call for a class, `choose` runs every variant once to compile it (or
load it from Taichi's offline cache), then times each in a few alternating
rounds and records the fastest (by its best round) in the table, which is saved atomically as JSON beside
Taichi's offline cache (`~/.cache/burnbook/autotune.json`, or
`$BURNBOOK_AUTOTUNE_CACHE`), keyed by arch too, so the next process reuses
it. Variants compute the same result up to float rounding (the tests check
it); `SETTINGS.conv` forces one and skips the tuning.

`table()` shows what was chosen and the times behind it.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

from burnbook._atomic import atomic_write

from . import runtime as _rt
from .settings import cache_root

__all__ = ["cache_path", "choose", "clear", "table"]

VERSION = 1
REPEATS = 3  # timed runs per variant after the compiling one; the best counts

_state: dict = {"table": None, "path": None}


def cache_path() -> Path:
    """Where the table is kept: `$BURNBOOK_AUTOTUNE_CACHE`, else
    `autotune.json` in burnbook's cache folder (`settings.cache_root()`)."""
    env = os.environ.get("BURNBOOK_AUTOTUNE_CACHE")
    return Path(env) if env else cache_root() / "autotune.json"


def _read(path: Path) -> dict:
    """The entries stored at `path`; a missing file is empty, and an
    unreadable one is reported and then ignored (it is only a cache)."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        warnings.warn(f"autotune cache {path} is unreadable ({err}); tuning again and overwriting it",
                      RuntimeWarning, stacklevel=3)
        return {}
    if not isinstance(raw, dict) or raw.get("version") != VERSION or not isinstance(raw.get("entries"), dict):
        warnings.warn(f"autotune cache {path} has an unknown layout; tuning again and overwriting it",
                      RuntimeWarning, stacklevel=3)
        return {}
    return raw["entries"]


def _entries() -> dict:
    path = cache_path()
    if _state["table"] is None or _state["path"] != path:
        _state["table"], _state["path"] = _read(path), path
    return _state["table"]


def _save(key: str, entry: dict) -> None:
    """Add one entry and rewrite the file atomically, merged with entries
    another process may have written since we read it."""
    path = cache_path()
    merged = _read(path)
    merged.update(_entries())
    merged[key] = entry
    _state["table"] = merged
    payload = json.dumps({"version": VERSION, "entries": merged}, indent=1, sort_keys=True).encode()
    try:
        atomic_write(path, lambda f: f.write(payload))
    except OSError as err:  # a read-only home still tunes, per process
        warnings.warn(f"autotune cache {path} cannot be written ({err}); choices last for this process only",
                      RuntimeWarning, stacklevel=3)


def _key(op: str, shape_class: tuple) -> str:
    arch = _rt.current.device.kind if _rt.current is not None else "?"
    return "|".join([op, arch, *map(str, shape_class)])


def _timed(run: Callable[[], Any]) -> float:
    import taichi as ti

    start = time.perf_counter()
    run()
    ti.sync()
    return time.perf_counter() - start


def choose(op: str, shape_class: tuple, variants: Mapping[str, Callable[..., Any]], args: tuple) -> str:
    """The name of the fastest of `variants` (each called as `fn(*args)`) for
    this op and shape class: from the table, or timed now and recorded."""
    key = _key(op, shape_class)
    hit = _entries().get(key)
    if hit is not None and hit.get("choice") in variants:
        return hit["choice"]
    for fn in variants.values():
        _timed(lambda: fn(*args))  # compiles, or loads from the offline cache
    # Rounds alternate the variants, so a moment of contention on a busy
    # machine slows one sample of each rather than every sample of one.
    times = {name: float("inf") for name in variants}
    for _ in range(REPEATS):
        for name, fn in variants.items():
            times[name] = min(times[name], _timed(lambda: fn(*args)))
    best = min(times, key=times.get)
    _save(key, {"choice": best, "us": {k: round(v * 1e6, 1) for k, v in times.items()}})
    return best


def table() -> dict:
    """Every tuned shape class: `{"op|arch|class...": {"choice": name, "us":
    {variant: best time in µs}}}`, as stored on disk."""
    return {k: dict(v) for k, v in _entries().items()}


def clear() -> None:
    """Forget the loaded table (the file stays); the next `choose` re-reads it."""
    _state["table"] = None
