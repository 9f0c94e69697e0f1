"""The Markdown report (`benchmarks/results.md`)."""

from __future__ import annotations

from .cases import FAMILIES
from .bars import NOISY_IQR_PCT
from .formatting import fmt_ratio, fmt_time
from .measurement import Case

_TINY = Case("", "", "", dict, {}, tiny=True)

CAVEAT = (
    "This is a shared, virtualised 2-core machine: other jobs run beside the "
    "benchmark, so absolute numbers move by 10-30% from run to run and the "
    "large-tensor cases are memory-bandwidth bound. Compare frameworks within "
    "one run (their repeats are interleaved) rather than across runs, and read "
    "the min-max and IQR columns before trusting a small difference."
)

METHOD = """\
- Each case makes its inputs once from a fixed seed (NumPy arrays); every
  framework gets a copy of the same values, and its result is checked against
  NumPy's (the `check` column) before it is timed.
- The statement (`x + y`, `x.matmul(y)`, ...) is compiled into a loop, as
  `timeit` does; the backend's `sync()` runs before the clock stops.
- The first call is timed on its own (`first call`: includes Taichi's JIT
  compile or cache load) and excluded. Untimed warm-up calls follow (at least
  3, or 1 for a call that lasts a whole repeat). The inner loop then grows
  (1, 2, 5, 10, ...) until one repeat takes at least {target} s ({tiny_target} s
  for the microsecond ops of the dispatch and tracked-op rows). A repeat of
  fewer than 5 calls (each under 0.25 s) is preceded by one untimed call, so
  BLAS / OpenMP / Taichi worker threads that slept while the other
  frameworks ran are awake when the clock starts.
- Repeats are interleaved across frameworks (round robin, the order rotated
  each round so no framework always follows the same one), up to {repeats} per
  framework ({tiny_repeats} for the microsecond ops), fewer for slow cases (at
  least 2, as many as fit in {budget} s).
  Each sample is repeat time / inner count minus the empty loop's cost per
  iteration ({overhead} here).
- Reported: the median, the min-max of the samples, and the IQR as a percent of
  the median ("noisy" above {noisy}%: that median is not to be trusted). Ratios are ratios of medians; "time" ratios (dispatch, autodiff)
  are lower-is-better, "speed" ratios (throughput, GFLOP/s) higher-is-better.
- A contention probe (a 256x256 matmul with NumPy's BLAS on every core and on
  one thread) runs at the start and the end: when the multi-threaded call is
  not clearly faster, other processes hold the cores and the report says so.
- Garbage collection stays on (a real loop pays for it); the objects alive
  after the imports are frozen (`gc.freeze()`), and `gc.collect()` runs
  between repeats. Threads: PyTorch is set to the core count, NumPy's BLAS
  and Taichi use their defaults (listed above). `OMP_WAIT_POLICY=PASSIVE` is
  set (unless the environment sets it) so PyTorch's idle OpenMP workers do not
  spin on a core while the next framework runs."""


def _row_cells(res, key, has_unit: bool, labels: dict) -> list:
    case, e = res.case, res.entries[key]
    cells = [case.op, case.size, labels.get(key, key)]
    if not e.ok:
        cells += ["--", "--", "--"] + (["--"] if has_unit else []) + ["--", "--", "--", e.error or ""]
        return cells
    s = e.stats
    iqr = f"{s.iqr_pct:.0f}%" + (" noisy" if s.iqr_pct > NOISY_IQR_PCT else "")
    cells += [f"**{fmt_time(s.median)}**", f"{fmt_time(s.min)} – {fmt_time(s.max)}", iqr]
    if has_unit:
        tp = res.throughput(key)
        cells.append("--" if tp is None else f"{tp:,.1f}")
    cells.append(fmt_ratio(res.ratio(key, "numpy")))
    cells.append(fmt_ratio(res.ratio(key, "torch")))
    cells.append(fmt_time(s.cold_s))
    cells.append(e.check)
    return cells


def family_table(module, results: list, frameworks: list) -> list:
    rows = [r for r in results if r.case.family == module.FAMILY]
    if not rows:
        return []
    available = {fw.key for fw in frameworks if fw.available}
    labels = {fw.key: fw.label for fw in frameworks}
    units = {r.case.unit for r in rows if r.case.unit}
    has_unit = bool(units)
    ratio_kind = rows[0].case.ratio
    ratio_word = "time" if ratio_kind == "time" else "speed"
    head = ["op", "size", "framework", "median", "min – max", "IQR"]
    if has_unit:
        head.append(" / ".join(sorted(units)))
    head += [f"{ratio_word} ÷ NumPy", f"{ratio_word} ÷ PyTorch", "first call", "check"]
    out = [f"## {module.TITLE}", "", module.INTRO, "", "| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    for res in rows:
        for key in res.entries:
            if key not in available:
                continue
            out.append("| " + " | ".join(_row_cells(res, key, has_unit, labels)) + " |")
    out.append("")
    return out


def render(results, frameworks, bars, info, machine_lines, profile, meta) -> str:
    out = ["# burnbook benchmarks", ""]
    out += [
        f"Written by `benchmarks/run.py` ({meta['command']}), profile `{profile.name}`, "
        f"in {meta['runtime']}. Reproduce with **`make bench`** "
        "(`.venv/bin/python benchmarks/run.py`; `--quick` for a smoke run, "
        "`--only FAMILY` for one family; see `benchmarks/README.md`).",
        "",
        f"> {CAVEAT}",
        "",
        "## Machine",
        "",
    ]
    out += [f"- **{k}**: {v}" for k, v in machine_lines]
    out.append(f"- **Load average at end**: {meta['load_end']}")
    others = meta.get("others_cpu")
    if others is not None:
        out.append(f"- **Other processes' CPU use during the run**: {others:.0f}% of the machine "
                   "(system busy time minus this process's, over wall time x cores)")
    out.append(f"- **Contention probe at start**: {meta['probe_start']}")
    out.append(f"- **Contention probe at end**: {meta['probe_end']}")
    out.append("")
    out += ["## Frameworks", "", "| framework | status |", "|---|---|"]
    for fw in frameworks:
        status = ("measured" + (f" ({fw.note})" if fw.note else "")) if fw.available else fw.note
        out.append(f"| {fw.label} | {status} |")
    out += ["", "## Bars", "", "```"]
    out += [b.line() for b in bars] + info
    out += ["```", ""]
    fails = [b for b in bars if b.status == "FAIL"]
    not_run = [b for b in bars if b.status == "NOT RUN"]
    out.append(f"{sum(b.status == 'PASS' for b in bars)} PASS, {len(fails)} FAIL, {len(not_run)} NOT RUN.")
    out.append("")
    if any("CONTENDED" in str(meta.get(k, "")) for k in ("probe_start", "probe_end")):
        out += [
            "**Warning: the contention probe found the machine busy with other work during this "
            "run** (see the machine section). Multi-threaded numbers (NumPy's BLAS matmul, "
            "PyTorch with 2 threads, Taichi's thread pool) are then inflated by preemption, often "
            "many times over, and the bars that use them (Taichi, matmul, the MLP) are not "
            "reliable; the single-threaded dispatch numbers are affected far less. Rerun when "
            "the machine is idle, or compare with `benchmarks/run.py --threads 1`.",
            "",
        ]
    for module in FAMILIES:
        out += family_table(module, results, frameworks)
    out += ["## Methodology", "", METHOD.format(
        target=profile.target_s, repeats=profile.repeats, budget=profile.budget_s,
        noisy=NOISY_IQR_PCT, tiny_target=profile.target_for(_TINY), tiny_repeats=profile.repeats_for(_TINY),
        overhead=fmt_time(meta["loop_overhead"])), ""]
    return "\n".join(out)
