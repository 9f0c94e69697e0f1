"""burnbook's benchmarks: `make bench` runs this file.

    .venv/bin/python benchmarks/run.py                 # full run, writes benchmarks/results.md
    .venv/bin/python benchmarks/run.py --quick         # smoke run (~1 min), prints only
    .venv/bin/python benchmarks/run.py --only matmul   # one family (or any case-id substring)
    .venv/bin/python benchmarks/run.py --frameworks numpy,ndarray,torch
    .venv/bin/python benchmarks/run.py --list          # the case ids

A full, unfiltered run writes `benchmarks/results.md`; a `--quick` or filtered
run only prints, unless `--out PATH` says where to write. Progress goes to
stderr; the bars (PASS/FAIL/NOT RUN) are printed at the end. `--strict` makes
the exit status 1 when a bar fails.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

# Several threading runtimes share 2 cores in this one process (OpenBLAS,
# PyTorch's OpenMP, Taichi's pool). OpenMP workers spin after each parallel
# region by default, stealing the core from whichever framework runs next;
# passive waiting keeps the frameworks from slowing each other down. Set
# before torch is imported; an explicit OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bars as bars_mod  # noqa: E402
from benchmarks import harness, machine, report  # noqa: E402
from benchmarks.cases import all_cases  # noqa: E402
from benchmarks.frameworks import ORDER, discover  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results.md"


def select(cases: list, only: list | None) -> list:
    """Cases whose family equals a pattern, or whose id contains one."""
    if not only:
        return cases
    return [c for c in cases if any(p == c.family or p in c.id for p in only)]


def run(profile: harness.Profile, only=None, framework_keys=None, log=harness.eprint, command="",
        threads: int | None = None, probe: bool | None = None) -> dict:
    """Run the benchmarks; returns everything the report needs (and the report).

    `threads`: PyTorch's and NumPy's OpenBLAS thread counts (default: the
    number of cores; Taichi keeps its own default). `probe`: run the
    contention probe at the start and the end (default: except for `SMOKE`)."""
    if probe is None:
        probe = profile.name != "smoke"
    t0 = time.perf_counter()
    share = machine.CpuShare()
    if threads is not None and not machine.set_blas_threads(threads):
        log(f"could not set NumPy's BLAS threads to {threads}")
    frameworks = discover(tuple(framework_keys) if framework_keys else None, threads=threads)
    for fw in frameworks:
        log(f"{fw.label:<34} {'ok' if fw.available else 'SKIPPED'}  {fw.note}")
    machine_lines = machine.describe(frameworks)
    probe_start = machine.contention_probe() if probe else "not run"
    log(f"contention probe: {probe_start}")
    cases = select(all_cases(profile), only)
    if not cases:
        raise SystemExit(f"--only {only}: no case matches; see --list")
    harness.freeze_heap()
    try:
        overhead = harness.loop_overhead(profile)
        results = harness.run_cases(cases, frameworks, profile, log)
    finally:
        harness.unfreeze_heap()
    probe_end = machine.contention_probe() if probe else "not run"
    log(f"contention probe: {probe_end}")
    bar_list = bars_mod.check(results, frameworks, profile)
    info = bars_mod.info_lines(results)
    elapsed = time.perf_counter() - t0
    meta = {
        "command": command or "benchmarks/run.py",
        "runtime": f"{elapsed / 60:.1f} min ({elapsed:.0f} s)",
        "elapsed_s": elapsed,
        "load_end": machine.load_average(),
        "others_cpu": share.others_percent(),
        "probe_start": probe_start,
        "probe_end": probe_end,
        "loop_overhead": overhead,
    }
    text = report.render(results, frameworks, bar_list, info, machine_lines, profile, meta)
    return {"results": results, "frameworks": frameworks, "bars": bar_list, "info": info,
            "meta": meta, "markdown": text}


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short smoke run: fewer repeats and sizes")
    parser.add_argument("--profile", choices=sorted(harness.PROFILES), help="full (default), quick or smoke")
    parser.add_argument("--only", help="comma-separated families (dispatch, elementwise, reduction, "
                        "matmul, autodiff, fusion, training, dashboard) or case-id substrings (e.g. 'matmul/1024', 'mlp')")
    parser.add_argument("--frameworks", help=f"comma-separated subset of {','.join(ORDER)}")
    parser.add_argument("--out", help="write the Markdown report here ('-' for stdout)")
    parser.add_argument("--repeats", type=int, help="override the profile's repeats")
    parser.add_argument("--threads", type=int, help="PyTorch and NumPy-BLAS threads (default: all cores)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a bar fails")
    parser.add_argument("--list", action="store_true", help="list the case ids and exit")
    args = parser.parse_args(argv)

    profile = harness.PROFILES[args.profile or ("quick" if args.quick else "full")]
    if args.repeats:
        from dataclasses import replace

        profile = replace(profile, repeats=max(2, args.repeats))
    only = [p.strip() for p in args.only.split(",") if p.strip()] if args.only else None
    keys = [k.strip() for k in args.frameworks.split(",") if k.strip()] if args.frameworks else None

    if args.list:
        for case in select(all_cases(profile), only):
            print(case.id)
        return 0

    if keys is not None and "numpy" not in keys:
        keys.insert(0, "numpy")   # every ratio is to NumPy
    command = " ".join(["benchmarks/run.py"] + [shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])])
    out = run(profile, only, keys, command=command, threads=args.threads)

    print()
    for line in [b.line() for b in out["bars"]] + out["info"]:
        print(line)
    print(f"total runtime: {out['meta']['runtime']}")

    target = args.out
    if target is None and profile.name == "full" and not only and not keys and not args.threads:
        target = str(DEFAULT_OUT)
    if target == "-":
        print(out["markdown"])
    elif target:
        Path(target).write_text(out["markdown"] + "\n", encoding="utf-8")
        rel = os.path.relpath(target)
        print(f"wrote {target if rel.startswith('..') else rel}")
    else:
        print("(partial run: nothing written; pass --out PATH to keep the report)")
    failed = any(b.status == "FAIL" for b in out["bars"])
    return 1 if (args.strict and failed) else 0


if __name__ == "__main__":
    sys.exit(main())
