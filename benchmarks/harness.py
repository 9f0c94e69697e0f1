"""Timing utilities: profiles, compiled timing loops, statistics and the runner.

How one case is measured (`run_case`):

1. The case's inputs are made once from a fixed seed, as NumPy arrays, and
   every framework gets its own copy of the same values.
2. Per framework, the statement (e.g. `x + y`) is compiled into a loop
   function, like `timeit` does, so the loop adds ~10-20 ns per call and no
   Python-level lambda sits between the timer and the op. The loop calls the
   backend's `sync()` before the clock stops, so asynchronous backends are
   timed to completion.
3. The first call is timed on its own ("cold": it includes a JIT compile, a
   cache load or any first-use set-up) and never counted in the statistics.
   Its result is checked against NumPy's, so a broken op cannot post a good
   time.
4. Untimed warm-up calls run back to back (3 or more; 1 for slow calls). Calibration grows the inner loop count (1, 2, 5, 10, 20, ...) until one
   repeat lasts at least `profile.target_s` (`tiny_target_s` for microsecond
   ops, which get more, shorter repeats), as `timeit.Timer.autorange`.
   The last calibration run (or, for a call that lasts a whole repeat, the
   single warm-up call) is warm and becomes the first sample. A repeat of
   fewer than 5 calls is preceded by one untimed call, so worker threads that
   slept while the other frameworks ran are awake (see `_primed`).
5. The remaining repeats are *interleaved* across frameworks (round robin,
   the order rotated each round), so a noisy moment on a shared machine hits
   every framework instead of one, and no framework always follows the same
   neighbour (idle BLAS/OpenMP/Taichi threads of one runtime can slow the next).
   A framework whose repeat is slow gets fewer repeats (at least one more
   sample, more while they fit in `profile.budget_s`).
6. Each sample is (repeat time / inner count) minus the measured cost of an
   empty loop iteration. The report shows the median, min-max and IQR.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Callable, Iterable

import numpy as np

from .formatting import eprint, fmt_ratio, fmt_size, fmt_time, short_error
from .frameworks import numpy_framework
from .measurement import UNIT_SCALE, Case, CaseResult, Entry, Stats
from .profiles import FULL, PROFILES, QUICK, SMOKE, Profile

# The names the runner (run.py), the case families and the smoke test reach
# through `harness`; each is defined in the module imported above.
__all__ = [
    "FULL", "PROFILES", "QUICK", "SMOKE", "Profile", "UNIT_SCALE", "Case", "CaseResult", "Entry", "Stats",
    "compile_loop", "autorange", "warm_up", "loop_overhead", "freeze_heap", "unfreeze_heap", "run_case",
    "run_cases", "eprint", "fmt_ratio", "fmt_size", "fmt_time", "short_error",
]

# --------------------------------------------------------------------------------------
# Timing loops.

_LOOP = """\
def _loop(_n, _ns, _sync, _clock):
{unpack}
    _t0 = _clock()
    for _i in range(_n):
        {stmt}
    _sync()
    return _clock() - _t0
"""


def compile_loop(stmt: str, names: Iterable[str]) -> Callable:
    """A function `loop(n, ns, sync, clock) -> seconds` running `stmt` n times.

    The namespace's entries are bound to local variables first (fast lookups,
    as `timeit` does with its setup)."""
    unpack = "\n".join(f"    {n} = _ns[{n!r}]" for n in names if n.isidentifier()) or "    pass"
    src = _LOOP.format(unpack=unpack, stmt=stmt)
    scope: dict = {}
    exec(compile(src, f"<bench: {stmt}>", "exec"), scope)
    return scope["_loop"]


def _clock() -> float:
    return time.perf_counter()


def _noop() -> None:
    return None


def autorange(run: Callable[[int], float], target_s: float) -> tuple[int, float]:
    """The smallest n in 1, 2, 5, 10, 20, 50... with run(n) >= target_s, and that time."""
    n = 1
    while True:
        for mult in (1, 2, 5):
            k = n * mult
            t = run(k)
            if t >= target_s:
                return k, t
        n *= 10


def warm_up(loop: Callable, ns: dict, sync: Callable, target_s: float) -> float:
    """Untimed calls back to back, so caches, allocators and worker threads
    reach their steady state: at least 3 and half a target's worth, or a
    single call when one call already lasts a target. Returns the mean time
    of a call."""
    start = _clock()
    calls = 0
    while True:
        loop(1, ns, sync, _clock)
        calls += 1
        elapsed = _clock() - start
        if elapsed >= target_s or calls >= 1000 or (calls >= 3 and elapsed >= 0.5 * target_s):
            return elapsed / calls


def _primed(loop: Callable, n: int, ns: dict, sync: Callable, prime: bool) -> float:
    """`loop(n)`, preceded by one untimed call when `prime` and the repeat
    holds fewer than 5 calls. BLAS, OpenMP and Taichi worker threads go to
    sleep between repeats (the other frameworks run in between); waking them
    costs time that a repeat of one or two calls would count in every sample.
    (Not for calls of 0.25 s or more: there the wake-up is noise, the extra
    call is not.)"""
    if prime and n < 5:
        loop(1, ns, sync, _clock)
    return loop(n, ns, sync, _clock)


_LOOP_OVERHEAD: dict = {}


def loop_overhead(profile: Profile) -> float:
    """The cost in seconds of one iteration of an empty timing loop (subtracted)."""
    if profile.name not in _LOOP_OVERHEAD:
        loop = compile_loop("pass", [])
        n, _ = autorange(lambda k: loop(k, {}, _noop, _clock), max(profile.target_s, 0.001))
        samples = [loop(n, {}, _noop, _clock) / n for _ in range(5)]
        _LOOP_OVERHEAD[profile.name] = statistics.median(samples)
    return _LOOP_OVERHEAD[profile.name]


# --------------------------------------------------------------------------------------
# Running a case.


def freeze_heap() -> None:
    """Collect, then move every object alive now (the imported frameworks: ~200k
    objects with torch and Taichi) out of the collector's sight, so the
    `gc.collect()` between repeats costs microseconds instead of ~150 ms and
    a collection during a timed loop only walks the benchmark's own objects."""
    global _FROZEN
    gc.collect()
    gc.freeze()
    _FROZEN = True


_FROZEN = False


def _collect() -> None:
    """A full collection when the heap is frozen (then it is cheap), else the
    young generations only (a full one costs ~150 ms with torch and Taichi loaded).
    (A flag, not `gc.get_freeze_count()`, which walks every frozen object.)"""
    gc.collect() if _FROZEN else gc.collect(1)


def unfreeze_heap() -> None:
    """Undo `freeze_heap` (the harness may run inside a test process)."""
    global _FROZEN
    gc.unfreeze()
    _FROZEN = False


def _compare(out: np.ndarray, ref: np.ndarray, tol: float) -> str:
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.size != ref.size:
        return f"MISMATCH: {out.size} values, NumPy gives {ref.size}"
    out, ref = out.ravel(), ref.ravel()
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    with np.errstate(invalid="ignore"):
        err = float(np.max(np.abs(out - ref))) if ref.size else 0.0
    if not np.isfinite(err):
        return "MISMATCH: non-finite values"
    rel = err / scale if scale > 0 else err
    return "ok" if rel <= tol else f"MISMATCH: max err {rel:.1e} of max |value| (tol {tol:.0e})"


def _reference(case: Case, inputs: dict, numpy_fw) -> np.ndarray | None:
    """NumPy's value of the case's check expression (None when not checkable)."""
    expr = case.check if case.check is not None else case.statement_for(numpy_fw)
    if not expr or case.statement_for(numpy_fw) is None:
        return None
    ns = numpy_fw.namespace(inputs)
    if case.setup_for(numpy_fw):
        case.setup_for(numpy_fw)(numpy_fw, ns)
    return np.asarray(eval(expr, ns))


def run_case(case: Case, frameworks: list, profile: Profile, log: Callable[[str], None] = print) -> CaseResult:
    """Measure `case` on every eligible, available framework (see the module doc)."""
    rng = np.random.default_rng(case.seed())
    inputs = case.inputs(rng)
    overhead = loop_overhead(profile)
    entries: dict = {}
    live: list = []       # (fw, entry, loop, ns, n, prime)

    ref = None
    if case.check != "":
        try:
            ref = _reference(case, inputs, numpy_framework())
        except Exception as exc:  # the NumPy reference itself is broken: say so
            log(f"  ! reference for {case.id} failed: {short_error(exc)}")

    for fw in frameworks:
        if not case.eligible(fw):
            continue
        entry = entries[fw.key] = Entry(fw.key)
        if not fw.available:
            entry.error = "not available"
            continue
        fw.enter()
        try:
            ns = fw.namespace(inputs)
            hook = case.setup_for(fw)
            if hook is not None:
                hook(fw, ns)
            stmt = case.statement_for(fw)
            loop = compile_loop(stmt, list(ns))
            sync = fw.sync
            _collect()
            # The cold call's value is the one checked (when the check is the
            # statement itself), so a slow op is not run twice for it.
            first = compile(stmt, f"<cold: {stmt}>", "eval")
            t0 = _clock()
            value = eval(first, ns)
            sync()
            cold = _clock() - t0
            if ref is not None:
                if case.check is not None and case.check != stmt:
                    value = eval(case.check, ns)
                entry.check = _compare(fw.to_numpy(value), ref, case.tol)
            del value
            target = profile.target_for(case)
            per_call = warm_up(loop, ns, sync, target)
            prime = per_call < 0.25
            if per_call >= target:
                # One warm call already lasts a repeat: it is the first sample.
                n, t = 1, per_call
            else:
                n, t = autorange(lambda k: _primed(loop, k, ns, sync, prime), target)
            entry.stats = Stats([max(t / n - overhead, 0.0)], n, cold)
            live.append((fw, entry, loop, ns, n, prime))
        except Exception as exc:
            entry.error = short_error(exc)
            entry.stats = None
            log(f"  ! {fw.label} on {case.id}: {entry.error}")
        finally:
            fw.exit()

    # Interleaved repeats: round r measures every framework that still wants a sample.
    wanted = {}
    for fw, entry, loop, ns, n, prime in live:
        per_repeat = entry.stats.samples[0] * n
        repeats = profile.repeats_for(case)
        fits = int(profile.budget_s // per_repeat) if per_repeat > 0 else repeats
        wanted[fw.key] = max(2, min(repeats, fits))
    for r in range(1, max(wanted.values(), default=0)):
        # Rotate the order each round, so no framework always runs right after
        # the same one (a runtime whose idle threads linger slows the next).
        k = r % len(live)
        for fw, entry, loop, ns, n, prime in live[k:] + live[:k]:
            if entry.stats is None or r >= wanted[fw.key]:
                continue
            fw.enter()
            try:
                _collect()
                t = _primed(loop, n, ns, fw.sync, prime)
                entry.stats.samples.append(max(t / n - overhead, 0.0))
            except Exception as exc:
                entry.error, entry.stats = short_error(exc), None
                log(f"  ! {fw.label} on {case.id}: {entry.error}")
            finally:
                fw.exit()
    live.clear()
    _collect()
    return CaseResult(case, entries)


def run_cases(cases: list, frameworks: list, profile: Profile, log: Callable[[str], None] = print) -> list:
    """Run every case in order, logging one line per case."""
    results = []
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        res = run_case(case, frameworks, profile, log)
        parts = []
        for key, e in res.entries.items():
            parts.append(f"{key}={fmt_time(e.stats.median)}" if e.ok else f"{key}=--")
        log(f"[{i}/{len(cases)}] {case.id}: " + "  ".join(parts) + f"  ({time.perf_counter() - t0:.1f}s)")
        results.append(res)
    return results
