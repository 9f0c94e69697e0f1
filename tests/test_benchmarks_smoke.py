"""The benchmark harness (`make bench`) runs end to end on a tiny budget.

No timing is asserted: these tests only make sure the harness cannot rot
silently (a renamed op, a broken adapter, a bar pointing at a case that no
longer exists). The numbers of a smoke run mean nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bars, harness  # noqa: E402
from benchmarks import run as bench  # noqa: E402
from benchmarks.cases import all_cases  # noqa: E402
from benchmarks.frameworks import Framework, discover  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _quiet(_line: str) -> None:
    return None


def test_cases_are_well_formed():
    for profile in (harness.FULL, harness.QUICK, harness.SMOKE):
        cases = all_cases(profile)
        ids = [c.id for c in cases]
        assert len(ids) == len(set(ids)), "case ids must be unique"
        for case in cases:
            assert case.ratio in ("time", "speed"), case.id
            assert case.unit in (None, *harness.UNIT_SCALE), case.id
    # Every bar points at a case that the full and quick profiles run.
    for profile in (harness.FULL, harness.QUICK):
        ids = {c.id for c in all_cases(profile)}
        for bar in bars._definitions(profile):
            assert bar.case_id in ids, (profile.name, bar.case_id)


def test_stats_and_formatting():
    s = harness.Stats([3e-6, 1e-6, 2e-6, 4e-6, 5e-6], inner=10, cold_s=1e-3)
    assert s.median == 3e-6 and s.min == 1e-6 and s.max == 5e-6
    assert s.iqr_pct > 0
    assert harness.fmt_time(812e-9) == "812 ns"
    assert harness.fmt_time(1.5e-3) == "1.50 ms"
    assert harness.fmt_size(1 << 24) == "16M"


def test_timing_loop_calls_sync_and_runs_n_times():
    calls, syncs = [], []
    loop = harness.compile_loop("f()", ["f"])
    elapsed = loop(7, {"f": lambda: calls.append(1)}, lambda: syncs.append(1), harness._clock)
    assert len(calls) == 7 and len(syncs) == 1 and elapsed >= 0


def test_smoke_run_end_to_end():
    keys = ["numpy", "ndarray", "autodiff", "autodiff_1t"] + (["torch", "torch_1t"] if HAVE_TORCH else [])
    out = bench.run(harness.SMOKE, framework_keys=keys, log=_quiet)
    fws = {fw.key: fw for fw in out["frameworks"]}
    assert fws["numpy"].available and fws["ndarray"].available
    families = {r.case.family for r in out["results"]}
    assert families == {"dispatch", "elementwise", "reduction", "matmul", "autodiff", "fusion", "training",
                        "transformer"}
    for res in out["results"]:
        for key, entry in res.entries.items():
            if not fws[key].available:
                assert entry.error == "not available"
                continue
            assert entry.ok, f"{key} on {res.case.id}: {entry.error}"
            assert not entry.check.startswith("MISMATCH"), f"{key} on {res.case.id}: {entry.check}"
            assert entry.stats.median >= 0 and len(entry.stats.samples) >= 2
    ndarray_cases = [r for r in out["results"] if "ndarray" in r.entries]
    assert ndarray_cases, "NdArray must be measured"
    text = out["markdown"]
    for heading in ("## Machine", "## Frameworks", "## Bars", "## Methodology", "make bench"):
        assert heading in text
    for bar in out["bars"]:
        assert bar.status in ("PASS", "FAIL", "NOT RUN")
        assert bar.line() in text
    # Issue 5's bars (guide CNN step, data loader workers) are measured, not NOT RUN.
    issue5 = [b for b in out["bars"] if b.issue == 5]
    assert len(issue5) == 2
    for bar in issue5:
        if bar.ref == "torch_1t" and not HAVE_TORCH:
            assert bar.status == "NOT RUN"
        else:
            assert bar.status in ("PASS", "FAIL") and bar.value is not None and bar.value > 0, bar.line()
    assert "INFO    dataloader_workers" in text
    # Taichi was not selected: its bars say so instead of disappearing.
    taichi_bars = [b for b in out["bars"] if b.fw == "taichi"]
    assert taichi_bars and all(b.status == "NOT RUN" for b in taichi_bars)


def test_unavailable_framework_is_skipped_with_a_note():
    missing = Framework("taichi", "burnbook Taichi (cpu)", "burnbook", available=False,
                        note="skipped: ImportError: no module")
    case = next(c for c in all_cases(harness.SMOKE) if c.id == "dispatch/add/4")
    res = harness.run_case(case, [discover(("numpy",))[0], missing], harness.SMOKE, _quiet)
    assert res.entries["numpy"].ok
    assert res.entries["taichi"].error == "not available"
    checked = bars.check([res], [discover(("numpy",))[0], missing], harness.SMOKE)
    taichi = [b for b in checked if b.fw == "taichi"]
    assert all(b.status == "NOT RUN" and "ImportError" in b.reason for b in taichi)


def test_a_wrong_result_is_flagged():
    assert harness._compare(np.ones(3), np.ones(3), 1e-6) == "ok"
    assert harness._compare(np.ones(3) * 2, np.ones(3), 1e-6).startswith("MISMATCH")
    assert harness._compare(np.ones(2), np.ones(3), 1e-6).startswith("MISMATCH")


def test_taichi_adapter_smoke():
    fws = discover(("numpy", "taichi"))
    taichi = fws[1]
    if not taichi.available:
        pytest.skip(f"Taichi backend not available: {taichi.note}")
    cases = [c for c in all_cases(harness.SMOKE) if c.id in ("dispatch/add/4", "matmul/matmul/16")]
    for res in harness.run_cases(cases, fws, harness.SMOKE, _quiet):
        entry = res.entries["taichi"]
        assert entry.ok, entry.error
        assert entry.check == "ok", entry.check


def test_fusion_adapters_smoke():
    """Fusion[Taichi] runs the fusion family's cases and Autodiff[Fusion[Taichi]]
    the tracked add, each with its result checked against NumPy's."""
    fws = discover(("numpy", "fusion", "autodiff_fusion"))
    if not all(fw.available for fw in fws):
        pytest.skip(f"Fusion[Taichi] not available: {[fw.note for fw in fws if not fw.available]}")
    cases = [c for c in all_cases(harness.SMOKE) if c.family == "fusion" or c.id == "autodiff/tracked_add/4"]
    results = harness.run_cases(cases, fws, harness.SMOKE, _quiet)
    measured = {(key, res.case.op) for res in results for key in res.entries}
    assert {("fusion", "chain10_sum"), ("fusion", "record_add"), ("autodiff_fusion", "tracked_add")} <= measured
    for res in results:
        for key, entry in res.entries.items():
            assert entry.ok, f"{key} on {res.case.id}: {entry.error}"
            assert entry.check == "ok", f"{key} on {res.case.id}: {entry.check}"


def test_cli_list_and_filter(capsys):
    assert bench.main(["--list", "--only", "matmul"]) == 0
    lines = capsys.readouterr().out.split()
    assert lines and all("matmul" in line for line in lines)


def test_training_family_checks_both_sides():
    """The guide CNN case checks every framework against a NumPy forward pass,
    and the loader case checks its first pair of epochs against a 0-worker epoch."""
    from benchmarks.cases import training

    keys = ["numpy", "autodiff", "ndarray"] + (["torch"] if HAVE_TORCH else [])
    fws = discover(tuple(keys))
    cases = [c for c in all_cases(harness.SMOKE) if c.family == "training"]
    assert {c.op for c in cases} == {"guide_cnn_step", "dataloader_workers"}
    results = harness.run_cases(cases, fws, harness.SMOKE, _quiet)
    for res in results:
        for key, entry in res.entries.items():
            assert entry.ok, f"{key} on {res.case.id}: {entry.error}"
            assert entry.check == "ok", f"{key} on {res.case.id}: {entry.check}"
    items = training.loader_items(harness.SMOKE)
    assert training.DATA_SOURCE[items]   # says whether the items are real MNIST or random
    assert training.loader_pairs(items)  # (0-worker, 2-worker) epoch times, the bar's input
    loader = next(r for r in results if r.case.op == "dataloader_workers")
    assert training.loader_speedup(loader) > 0


def test_transformer_family_trains_the_same_model():
    """The GPT step checks every framework's logits against the NumPy forward
    pass, and burnbook and PyTorch, from the same weights, give the same loss
    step after step (so the bar compares the same training)."""
    from benchmarks.cases import transformer

    keys = ["numpy", "autodiff"] + (["torch"] if HAVE_TORCH else [])
    fws = discover(tuple(keys))
    cases = [c for c in all_cases(harness.SMOKE) if c.family == "transformer"]
    assert [c.op for c in cases] == ["gpt_step"]
    for res in harness.run_cases(cases, fws, harness.SMOKE, _quiet):
        for key, entry in res.entries.items():
            assert entry.ok, f"{key} on {res.case.id}: {entry.error}"
            assert entry.check == "ok", f"{key} on {res.case.id}: {entry.check}"
    if not HAVE_TORCH:
        return
    size = transformer.sizes(harness.SMOKE)[0]
    inputs = cases[0].inputs(np.random.default_rng(0))
    losses = {}
    for fw in fws[1:]:
        ns = fw.namespace(inputs)
        cases[0].setup_for(fw)(fw, ns)
        losses[fw.key] = [float(fw.to_numpy(ns["step"]()).ravel()[0]) for _ in range(3)]
    assert losses["autodiff"][0] > losses["autodiff"][2], losses   # it trains
    np.testing.assert_allclose(losses["autodiff"], losses["torch"], rtol=1e-5)
    bars_34 = [b for b in bars._definitions(harness.SMOKE) if b.issue == 34]
    assert {(b.fw, b.ref) for b in bars_34} == {("autodiff", "torch"), ("autodiff_1t", "torch_1t"),
                                                 ("autodiff_fusion", "torch"),
                                                 ("autodiff_fusion_1t", "torch_1t")}
    assert all(b.case_id == transformer.case_id(size) for b in bars_34)


def test_training_step_setups_take_their_untimed_steps(monkeypatch):
    """Each training-step setup (guide CNN, GPT; burnbook and PyTorch alike)
    takes `SETUP_STEPS` steps before the harness times one: Adam's second
    step builds Fusion's steady-state kernels and must not be a sample."""
    from benchmarks.cases import settle, training, transformer

    class Counting:
        syncs = 0

        def sync(self):
            self.syncs += 1

    calls = []
    fw = Counting()
    settle.settle(fw, lambda: calls.append(1))
    assert len(calls) == settle.SETUP_STEPS == 2 and fw.syncs == 1

    settled = []
    monkeypatch.setattr(training, "settle", lambda fw, step: settled.append(("cnn", fw.api)))
    monkeypatch.setattr(transformer, "settle", lambda fw, step: settled.append(("gpt", fw.api)))
    keys = ["autodiff"] + (["torch"] if HAVE_TORCH else [])
    for fw in discover(tuple(keys)):
        ns = fw.namespace(training._cnn_inputs(2)(np.random.default_rng(0)))
        (training._cnn_torch if fw.api == "torch" else training._cnn_burnbook)(fw, ns)
        size = transformer.sizes(harness.SMOKE)[0]
        ns = fw.namespace(transformer._inputs(size)(np.random.default_rng(0)))
        (transformer._torch(size) if fw.api == "torch" else transformer._burnbook(size))(fw, ns)
    assert sorted(settled) == sorted((case, fw.api) for fw in discover(tuple(keys)) for case in ("cnn", "gpt"))
