"""The "PyTorch Model" chapter without torch: it must run on the files in
notebooks/assets and print what it printed with torch (nbval checks the
torch path); and those files must be the ones its torch code makes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "notebooks" / "en" / "20-import-pytorch.ipynb"
ASSETS = ROOT / "notebooks" / "assets"

# Runs the chapter's code cells in order, like a kernel, recording each one's stdout.
RUNNER = r"""
import contextlib, io, json, sys
block_torch, cells_file, out_file, stop = sys.argv[1] == "1", sys.argv[2], sys.argv[3], int(sys.argv[4])
if block_torch:
    sys.modules["torch"] = None      # `import torch` raises ImportError
cells = json.load(open(cells_file))
namespace = {"__name__": "__main__"}
printed = []
for source in cells[:stop]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(source, "<cell>", "exec"), namespace)
    printed.append(buffer.getvalue())
json.dump({"printed": printed, "workdir": str(namespace.get("WORKDIR", "")),
           "torch": namespace.get("torch") is not None}, open(out_file, "w"))
"""


def code_cells() -> list[dict]:
    notebook = json.loads(CHAPTER.read_text(encoding="utf-8"))
    return [c for c in notebook["cells"] if c["cell_type"] == "code"]


def run_chapter(tmp_path: Path, block_torch: bool, stop: int | None = None) -> dict:
    cells = code_cells()
    (tmp_path / "cells.json").write_text(json.dumps(["".join(c["source"]) for c in cells]))
    args = [sys.executable, "-c", RUNNER, "1" if block_torch else "0", str(tmp_path / "cells.json"),
            str(tmp_path / "out.json"), str(len(cells) if stop is None else stop)]
    result = subprocess.run(args, cwd=CHAPTER.parent, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TI_LOG_LEVEL": "warn"})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())


def test_the_chapter_runs_without_torch_and_prints_the_same(tmp_path) -> None:
    run = run_chapter(tmp_path, block_torch=True)
    assert run["torch"] is False
    stored = ["".join("".join(o["text"]) for o in c["outputs"] if o.get("name") == "stdout") for c in code_cells()]
    assert len(run["printed"]) == len(stored)
    for i, (got, want) in enumerate(zip(run["printed"], stored)):
        assert got == want, f"code cell {i + 1} prints differently without torch:\n{got}\n---\n{want}"
    assert not Path(run["workdir"]).exists(), "the chapter leaves its temporary folder behind"


def test_the_shipped_files_are_the_ones_the_chapter_makes(tmp_path) -> None:
    pytest.importorskip("torch")
    from burnbook.importer.pytorch import read_pt, read_safetensors

    cleanup = next(i for i, c in enumerate(code_cells()) if "shutil.rmtree(WORKDIR)" in "".join(c["source"]))
    run = run_chapter(tmp_path, block_torch=False, stop=cleanup)  # every cell before the clean-up: keep its folder
    workdir = Path(run["workdir"])
    try:
        assert run["torch"] is True
        for name in ["conv2d.pt", "key_remap.pt", "mlp.pt", "autoencoder.pt"]:
            made, shipped = read_pt(workdir / name), read_pt(ASSETS / name)
            assert list(made) == list(shipped), name
            for key in made:
                # Values come from torch's seeded init and a few training steps, which
                # round differently by an ulp on another CPU (AVX-512): never bit for bit.
                assert made[key].dtype == shipped[key].dtype, f"{name}: {key}"
                np.testing.assert_allclose(made[key], shipped[key], rtol=1e-5, atol=1e-6,
                                           err_msg=f"{name}: {key}")
        same = read_safetensors(ASSETS / "conv2d.safetensors")
        for key, value in read_pt(ASSETS / "conv2d.pt").items():
            np.testing.assert_array_equal(same[key], value, err_msg=key)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_assets_are_small() -> None:
    files = sorted(ASSETS.glob("*.pt")) + sorted(ASSETS.glob("*.safetensors"))
    assert len(files) == 6
    assert sum(p.stat().st_size for p in files) < 200_000
