"""Binder: binder/ alone must build a working book on mybinder.org.

Fast checks: requirements.in is pyproject's runtime dependencies plus the
[notebook] and [distributed] extras (what `make lab` installs),
requirements.txt pins all of it (and no torch: postBuild installs torch's CPU
build, which PyPI does not serve on Linux, with tools/install_torch.py --book,
as `make lab` does), the runtime and postBuild are what repo2docker expects,
and postBuild's MNIST step (binder/fetch_mnist.py) reuses verified files,
downloads missing ones with checksums and stops on a bad file.

The `notebooks` test does what repo2docker does, from binder/ alone: copy
the repository's files to a fresh folder, make a fresh virtual environment,
`pip install -r binder/requirements.txt`, run `binder/postBuild`, then
validate every en chapter there with nbval (pytest and nbval are installed
beside, nothing else; torch there must be its CPU build, no nvidia-*
package). So a chapter that imports anything outside what `make lab`
installs fails here, unless it is named in BEYOND_NOTEBOOK_EXTRA with what it
needs. `make test-notebooks` runs
it (and `make test-python` leaves it out). The build is tools/binder_build.py:
`make test` runs it beside the Python tests and this test reuses it when it
was made from the repository's current files (`$BURNBOOK_BINDER_BUILD`), else
builds again in a temporary folder. It needs PyPI; MNIST comes from
`$BURNBOOK_DATA` when set (make exports it), else it is downloaded into the
build's folder.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import time
import tomllib
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from burnbook.data import download
from burnbook.data.dataset.vision import mnist, write_idx

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
CHAPTERS = "notebooks/en"
# En chapters that need more than what `make lab` and Binder install (the
# [notebook] and [distributed] extras, torch's CPU build): the module each
# imports, and what provides it. Such a chapter is not run here (run it in
# .venv from make test-notebooks), and its module must still be missing here,
# so a stale entry fails. None today: chapter 25 (Ray, torch) runs here too.
BEYOND_NOTEBOOK_EXTRA: dict[str, tuple[str, str]] = {}


def requirement_lines(path: Path) -> list[str]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


def pins() -> dict[str, str]:
    """requirements.txt as {canonical name: pinned version}."""
    out = {}
    for line in requirement_lines(BINDER / "requirements.txt"):
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and not req.url, (
            f"binder/requirements.txt: {line!r} is not pinned as name==version")
        out[canonicalize_name(req.name)] = specs[0].version
    return out


# -- the files repo2docker reads ------------------------------------------------------
def test_requirements_in_is_pyproject_runtime_plus_notebook_and_distributed_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = project["dependencies"] + extras["notebook"] + extras["distributed"]
    wanted = {canonicalize_name(Requirement(r).name): str(Requirement(r).specifier) for r in wanted}
    have = {canonicalize_name(Requirement(r).name): str(Requirement(r).specifier)
            for r in requirement_lines(BINDER / "requirements.in")}
    assert have == wanted, (
        "binder/requirements.in differs from pyproject.toml's dependencies + [notebook] + [distributed] extras: "
        f"only in requirements.in {sorted(set(have.items()) - set(wanted.items()))}, "
        f"only in pyproject.toml {sorted(set(wanted.items()) - set(have.items()))}; "
        "edit requirements.in and re-lock (the command is in its header)")


def test_requirements_txt_pins_everything_and_no_torch() -> None:
    pinned = pins()
    for line in requirement_lines(BINDER / "requirements.in"):
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pinned, f"binder/requirements.txt does not pin {req.name} (re-lock requirements.in)"
        assert req.specifier.contains(pinned[name], prereleases=True), (
            f"binder/requirements.txt pins {req.name}=={pinned[name]}, outside {req.specifier}")
    heavy = sorted(n for n in pinned if n in ("torch", "tensorflow", "jax") or n.startswith("nvidia-"))
    assert not heavy, (f"binder/requirements.txt installs {heavy}: PyPI's Linux torch is the CUDA build "
                       "(gigabytes of nvidia-* wheels); postBuild installs torch's CPU build instead")
    assert "ipykernel" in pinned and "nbconvert" in pinned, "the book needs a kernel and nbconvert"


def test_runtime_and_postbuild_are_what_repo2docker_runs() -> None:
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"
    post = BINDER / "postBuild"
    script = post.read_text(encoding="utf-8")
    assert script.startswith("#!/usr/bin/env bash"), "postBuild needs a shebang"
    assert "\npython tools/install_torch.py --book\n" in script, (
        "postBuild must install torch's CPU build as `make lab` does (tools/install_torch.py --book)")
    assert os.access(post, os.X_OK), "binder/postBuild must be executable (chmod +x)"
    # repo2docker prefers these over requirements.txt: none may sneak in.
    for other in ("environment.yml", "Pipfile", "Pipfile.lock", "setup.py", "Project.toml", "install.R"):
        assert not (BINDER / other).exists(), f"binder/{other} would override requirements.txt"


# -- postBuild's MNIST step -------------------------------------------------------------
def fetch_module():
    spec = importlib.util.spec_from_file_location("binder_fetch_mnist", BINDER / "fetch_mnist.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_mnist(folder: Path, split: str, n: int, seed: int) -> dict[str, bytes]:
    """Write a small, well-formed `split` (gzip IDX) into `folder`; the files' bytes."""
    rng = np.random.default_rng(seed)
    images, labels = mnist.FILES[split]
    folder.mkdir(parents=True, exist_ok=True)
    write_idx(folder / f"{images}.gz", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
    write_idx(folder / f"{labels}.gz", rng.integers(0, 10, n, dtype=np.uint8))
    return {f"{stem}.gz": (folder / f"{stem}.gz").read_bytes() for stem in (images, labels)}


@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(url, dest, timeout=60.0):
        calls.append(url)
        raise OSError(f"network disabled in this test: {url}")

    monkeypatch.setattr(download, "download_file", refuse)
    return calls


def test_fetch_reuses_verified_files_without_downloading(tmp_path, monkeypatch, no_network, capsys) -> None:
    for split, n in (("train", 12), ("test", 5)):
        fake_mnist(tmp_path / "mnist-offline", split, n, seed=n)
    monkeypatch.setenv("BURNBOOK_DATA", str(tmp_path))
    assert fetch_module().main() == 0
    out = capsys.readouterr().out
    assert "train: 12 images" in out and "test: 5 images" in out and "not downloaded" in out
    assert no_network == []


def test_fetch_downloads_missing_files_with_checksums(tmp_path, monkeypatch) -> None:
    served = {}
    for split in ("train", "test"):
        served.update(fake_mnist(tmp_path / "mirror", split, 7, seed=3))
    shutil.rmtree(tmp_path / "mirror")
    for name, data in served.items():  # the "published" sums of these files
        monkeypatch.setitem(mnist.MD5, name, hashlib.md5(data).hexdigest())
    urls = []

    def serve(url, dest, timeout=60.0):
        urls.append(url)
        Path(dest).write_bytes(served[url.rsplit("/", 1)[1]])

    monkeypatch.setattr(download, "download_file", serve)
    monkeypatch.setenv("BURNBOOK_DATA", str(tmp_path / "data"))
    fetch = fetch_module()
    images, labels, count, downloaded = fetch.ensure("test")
    assert downloaded and count == 7 and images.parent == tmp_path / "data" / "mnist"
    assert len(urls) == 2
    assert fetch.ensure("test")[3] is False and len(urls) == 2  # second time: verified, reused


def test_fetch_stops_on_a_corrupted_file_and_keeps_it(tmp_path, monkeypatch, no_network, capsys) -> None:
    fake_mnist(tmp_path / "mnist", "train", 4, seed=1)
    fake_mnist(tmp_path / "mnist", "test", 4, seed=2)  # not the published bytes: MD5 differs
    monkeypatch.setenv("BURNBOOK_DATA", str(tmp_path))
    assert fetch_module().main() == 1
    err = capsys.readouterr().err
    assert "failed verification" in err and "train-images-idx3-ubyte.gz" in err and "MD5" in err
    assert (tmp_path / "mnist" / "train-images-idx3-ubyte.gz").exists()
    assert no_network == []


def test_fetch_reports_a_truncated_file(tmp_path, monkeypatch, no_network, capsys) -> None:
    fake_mnist(tmp_path / "mnist-offline", "train", 4, seed=1)
    fake_mnist(tmp_path / "mnist-offline", "test", 4, seed=2)
    labels = tmp_path / "mnist-offline" / "t10k-labels-idx1-ubyte.gz"
    raw = gzip.decompress(labels.read_bytes())
    labels.write_bytes(gzip.compress(raw[:-2]))  # two labels short of the header's count
    monkeypatch.setenv("BURNBOOK_DATA", str(tmp_path))
    assert fetch_module().main() == 1
    assert "t10k-labels-idx1-ubyte.gz" in capsys.readouterr().err


# -- the whole build, as repo2docker runs it --------------------------------------------
def pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=10):
            return True
    except OSError:
        return False


def binder_build():
    """tools/binder_build.py, which makes the build (also run by `make test`
    beside the Python tests)."""
    spec = importlib.util.spec_from_file_location("binder_build", ROOT / "tools" / "binder_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_build_is_reused_only_when_made_from_the_current_files(tmp_path, monkeypatch) -> None:
    builder = binder_build()
    try:
        files = builder.repository_files()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's file list comes from git ls-files")
    assert builder.reusable(tmp_path) is None, "a folder without build.json (an unfinished build) was reused"
    record = {"fingerprint": builder.fingerprint(files), "times": {"venv": 1.0}}
    (tmp_path / "build.json").write_text(json.dumps(record))
    assert builder.reusable(tmp_path) == record
    # a build made when one file held other bytes than it does now
    changed = files[0]
    monkeypatch.setattr(Path, "read_bytes",
                        lambda p, real=Path.read_bytes: real(p) + (b"x" if p.name == Path(changed).name else b""))
    stale = {"fingerprint": builder.fingerprint(files), "times": {}}
    monkeypatch.undo()
    (tmp_path / "build.json").write_text(json.dumps(stale))
    assert builder.reusable(tmp_path) is None, f"a build made from another {changed} was reused"


@pytest.mark.slow
@pytest.mark.notebooks
def test_binder_build_from_scratch_runs_every_en_chapter(tmp_path) -> None:
    if not pypi_reachable():
        reason = "" if os.environ.get("BURNBOOK_DATA") else " and BURNBOOK_DATA is unset"
        pytest.skip(f"PyPI is not reachable{reason}: binder/requirements.txt cannot be installed here")
    builder = binder_build()
    try:
        builder.repository_files()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's file list comes from git ls-files")
    # `make test` builds it while the Python tests run; a build made from
    # other files than the repository's current ones is not reused.
    made = os.environ.get("BURNBOOK_BINDER_BUILD")
    record = builder.reusable(Path(made)) if made else None
    dest = Path(made).resolve() if record is not None else tmp_path / "binder"
    if record is None:
        try:
            record = builder.build(dest)
        except builder.BuildError as err:
            pytest.fail(str(err))
    print(f"binder build in {dest} (s): " + ", ".join(f"{k} {v:.0f}" for k, v in record["times"].items()))
    repo, venv, env = dest / "repo", dest / "env", builder.environment(dest)
    times = {}

    python = str(venv / "bin" / "python")
    probe = subprocess.run(
        [python, "-c", "import burnbook, json; from burnbook.data.dataset.vision import MnistDataset; "
         "print(json.dumps([burnbook.__file__, len(MnistDataset.test(download=False))]))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True)
    package, test_images = json.loads(probe.stdout.strip().splitlines()[-1])
    assert Path(package).is_relative_to(repo), f"burnbook imported from {package}, not the copy"
    assert test_images > 0
    specs = subprocess.run([str(venv / "bin" / "jupyter"), "kernelspec", "list", "--json"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    kernel = json.loads(specs.stdout)["kernelspecs"]["python3"]["resource_dir"]
    assert Path(kernel).is_relative_to(venv), f"the python3 kernel comes from {kernel}, not the new venv"

    # torch is there for Ray's Gloo all-reduce (chapter 25), as its CPU build, never the CUDA one.
    torch = subprocess.run(
        [python, "-c", "import json, torch; from importlib import metadata; print(json.dumps([torch.__version__, "
         "torch.version.cuda, sorted(d.metadata['Name'] for d in metadata.distributions() "
         "if d.metadata['Name'].lower().startswith('nvidia'))]))"],
        cwd=tmp_path, env=env, capture_output=True, text=True)
    assert torch.returncode == 0, (
        "torch is missing from the Binder environment (postBuild's tools/install_torch.py --book found no CPU "
        f"build to install; chapter 25 needs it):\n{torch.stderr[-2000:]}")
    version, cuda, nvidia = json.loads(torch.stdout.strip().splitlines()[-1])
    assert cuda is None and not nvidia, f"the Binder environment has torch {version}'s CUDA build: {nvidia}"

    chapters = sorted((repo / CHAPTERS).glob("*.ipynb"))
    assert len(chapters) >= 24, f"expected every en chapter under {CHAPTERS}, found {len(chapters)}"
    for name, (module, source) in BEYOND_NOTEBOOK_EXTRA.items():
        found = subprocess.run([python, "-c", f"import {module}"], cwd=tmp_path, env=env, capture_output=True)
        assert found.returncode != 0, (
            f"{module} is importable in the Binder environment: {name} needs no exception any more")
        print(f"not run here: {name}, which needs {module} ({source})")
    chapters = [c for c in chapters if c.name not in BEYOND_NOTEBOOK_EXTRA]
    # Two chapters at a time, each kernel on one thread (as make test-notebooks runs .venv's).
    one_thread = dict(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", TI_CPU_MAX_NUM_THREADS="1")
    start = time.monotonic()
    proc = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
         "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", "notebooks/sanitize.cfg", "--durations=0",
         *(str(c.relative_to(repo)) for c in chapters)],
        cwd=repo, env={**env, **one_thread}, capture_output=True, text=True, timeout=1800)
    times[f"nbval of {len(chapters)} en chapters"] = time.monotonic() - start
    assert proc.returncode == 0, (
        f"the en chapters failed in the Binder environment (exit {proc.returncode}):\n"
        f"{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}")
    print(proc.stdout[-4000:])
    print("binder build timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()))
