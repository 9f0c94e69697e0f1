"""The two standalone diagnostics behind issue 34's figures run end to end on
the smallest GPT: `benchmarks/step_parts.py` (where a Fusion step goes) and
`benchmarks/first_build.py` (first steps with and without the front-end
memos). No timing is asserted, only that each part is measured and that the
pieces are consistent; the numbers of a smoke run mean nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SMOKE_GPT = "16,2,1,8,2,11"   # the transformer family's smoke size


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is the reference step")
def test_step_parts_splits_a_fusion_step_into_blas_kernels_and_the_rest(capsys):
    from benchmarks import step_parts

    rows = step_parts.main(["--steps", "1", "--size", SMOKE_GPT])
    assert [r["framework"] for r in rows] == ["autodiff_fusion", "autodiff_fusion_1t"]
    for row in rows:
        assert row["plain"] > 0 and row["torch"] > 0
        assert row["blas"] > 0 and row["kernels"] > 0     # a GPT step has products and kernels
        assert row["blas"] + row["kernels"] < row["step"]  # parts of the timed step
    out = capsys.readouterr().out
    assert "Taichi kernels" in out and "on the thread pool" in out


def test_first_build_times_both_front_ends_in_fresh_processes(capsys):
    from benchmarks import first_build

    medians = first_build.main(["--runs", "1", "--steps", "1", "--cases", "gpt", "--size", SMOKE_GPT])
    assert set(medians) == {"gpt"} and medians["gpt"]["memo"] > 0 and medians["gpt"]["taichi"] > 0
    assert "memoised" in capsys.readouterr().out
