"""How long Autodiff[Fusion[Taichi]]'s first training steps take in a fresh
process, with Taichi's front end memoised (burnbook's default,
`burnbook/backend/taichi/frontend.py`) and without (`BURNBOOK_TAICHI_FRONTEND=taichi`).

A standalone measurement (not a `make bench` family): the first steps of a
process build every kernel they launch (Taichi's offline cache keeps only
the compiled code, keyed by what the front end builds, so the front end
runs again in each process). Each run is a new process on the bench's own
setup (`benchmarks/cases`: the transformer bench's small GPT, the guide
CNN) with its untimed setup steps turned off; the two front ends alternate
run by run and the medians are printed. The offline cache is warmed first.

    .venv/bin/python benchmarks/first_build.py [--runs 3] [--steps 2] [--cases gpt,cnn]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("gpt", "cnn")


def _child(case: str, steps: int, size: str) -> None:
    """Build the case's Fusion setup, time its first `steps` steps, print them as JSON (seconds)."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from benchmarks.cases import settle, training, transformer
    from benchmarks.frameworks import discover

    settle.SETUP_STEPS = 0   # the first steps are what is measured here
    fw = {f.key: f for f in discover(("autodiff_fusion",))}["autodiff_fusion"]
    fw.enter()
    if case == "cnn":
        ns = fw.namespace(training._cnn_inputs(64)(np.random.default_rng(0)))
        training._cnn_burnbook(fw, ns)
    else:
        dims = tuple(int(v) for v in size.split(","))
        ns = fw.namespace(transformer._inputs(dims)(np.random.default_rng(0)))
        transformer._burnbook(dims)(fw, ns)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        ns["step"]()
        fw.sync()
        times.append(time.perf_counter() - start)
    from burnbook.backend.taichi import frontend

    print(json.dumps({"installed": frontend.installed(), "steps": times}))


def _run(case: str, steps: int, size: str, front_end: str) -> dict:
    env = dict(os.environ, BURNBOOK_TAICHI_FRONTEND=front_end)
    proc = subprocess.run([sys.executable, __file__, "--child", case, "--steps", str(steps), "--size", size],
                          env=env, capture_output=True, text=True, cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"first_build: the {case} run with {front_end}'s front end failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["installed"] != (front_end == "memo"):
        raise SystemExit(f"first_build: {front_end} asked for, memos installed: {result['installed']}")
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per front end and case")
    parser.add_argument("--steps", type=int, default=2, help="first steps timed in each process")
    parser.add_argument("--cases", default=",".join(CASES), help="gpt, cnn or both")
    parser.add_argument("--size", default="128,4,2,64,32,128",
                        help="the GPT's d_model,heads,layers,seq,batch,vocab (the bench's small size)")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.steps, args.size)
        return {}
    medians = {}
    for case in args.cases.split(","):
        _run(case, 1, args.size, "memo")   # warms the offline cache (and the generated kernel sources)
        totals = {"taichi": [], "memo": []}
        for _ in range(args.runs):
            for front_end in totals:
                totals[front_end].append(sum(_run(case, args.steps, args.size, front_end)["steps"]))
        medians[case] = {k: statistics.median(v) for k, v in totals.items()}
        print(f"{case}: first {args.steps} step(s), median of {args.runs} fresh processes each: "
              f"Taichi's front end {medians[case]['taichi']:.2f} s, memoised {medians[case]['memo']:.2f} s "
              f"({medians[case]['taichi'] / medians[case]['memo']:.2f}x); "
              f"runs {[round(t, 2) for t in totals['taichi']]} vs {[round(t, 2) for t in totals['memo']]}")
    return medians


if __name__ == "__main__":
    main()
