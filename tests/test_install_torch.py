"""tools/install_torch.py: torch's CPU build wherever an index offers one, and
never the CUDA build (gigabytes of nvidia-* wheels) on a Linux machine without
an NVIDIA GPU. pip itself is replaced by a recorder, except in the last test,
which asks the real pip about a folder of (empty) wheel files."""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.tags import sys_tags

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tool(monkeypatch):
    spec = importlib.util.spec_from_file_location("install_torch", ROOT / "tools" / "install_torch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.installed, module.asked = [], []
    monkeypatch.setattr(module, "install", lambda req, *opts: module.installed.append((req, *opts)) or 0)

    def no_torch(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(module.metadata, "version", no_torch)
    monkeypatch.setattr(module.sys, "platform", "linux")
    monkeypatch.setattr(module, "has_nvidia_gpu", lambda: False)
    return module


def offer(tool, monkeypatch, configured: list[str], cpu_index: list[str]) -> None:
    def offered_versions(*options):
        tool.asked.append("cpu index" if tool.CPU_INDEX in options else "configured")
        return cpu_index if tool.CPU_INDEX in options else configured
    monkeypatch.setattr(tool, "offered_versions", offered_versions)


def test_the_configured_index_cpu_build_wins_without_asking_pytorch_org(tool, monkeypatch):
    offer(tool, monkeypatch, configured=["2.14.0", "2.13.0+cpu", "2.13.0"], cpu_index=["2.13.0+cpu"])
    assert tool.main() == 0
    assert tool.installed == [("torch==2.13.0+cpu",)]
    assert tool.asked == ["configured"]


def test_pytorch_cpu_index_serves_torch_when_the_configured_one_has_only_cuda(tool, monkeypatch):
    offer(tool, monkeypatch, configured=["2.13.0"], cpu_index=["2.13.0+cpu", "2.13.0"])
    assert tool.main() == 0
    assert tool.installed == [("torch==2.13.0+cpu", "--extra-index-url", tool.CPU_INDEX)]


def test_no_cpu_build_and_no_gpu_installs_nothing_and_says_why(tool, monkeypatch, capsys):
    offer(tool, monkeypatch, configured=["2.13.0"], cpu_index=[])  # pytorch.org unreachable
    assert tool.main() == 0  # `make test` goes on; the torch comparisons skip
    assert tool.installed == []
    out = capsys.readouterr().out
    assert "NOT installing torch" in out and "CUDA build" in out and "skipped" in out
    assert f"torch==2.13.0+cpu --extra-index-url {tool.CPU_INDEX}" in out


def test_a_machine_with_an_nvidia_gpu_takes_the_default_build(tool, monkeypatch):
    offer(tool, monkeypatch, configured=["2.13.0"], cpu_index=[])
    monkeypatch.setattr(tool, "has_nvidia_gpu", lambda: True)
    assert tool.main() == 0
    assert tool.installed == [("torch==2.13.0",)]


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_outside_linux_the_default_wheel_is_the_cpu_build(tool, monkeypatch, platform):
    offer(tool, monkeypatch, configured=["2.13.0"], cpu_index=[])
    monkeypatch.setattr(tool.sys, "platform", platform)
    assert tool.main() == 0
    assert tool.installed == [("torch==2.13.0",)]


def installed_versions(tool, monkeypatch, **versions: str) -> None:
    """`metadata.version` answering for the named distributions only."""
    def version(name):
        if name not in versions:
            raise metadata.PackageNotFoundError(name)
        return versions[name]
    monkeypatch.setattr(tool.metadata, "version", version)


def test_an_installed_2_13_0_and_its_torchvision_are_left_alone(tool, monkeypatch):
    offer(tool, monkeypatch, configured=["2.13.0+cpu"], cpu_index=["2.13.0+cpu"])
    installed_versions(tool, monkeypatch, torch="2.13.0+cpu", torchvision="0.28.0")
    assert tool.main() == 0
    assert tool.installed == [] and tool.asked == []


def test_another_installed_version_is_replaced_and_torchvision_follows_without_deps(tool, monkeypatch):
    offer(tool, monkeypatch, configured=["2.13.0+cpu"], cpu_index=[])
    installed_versions(tool, monkeypatch, torch="2.12.0", torchvision="0.27.0")
    assert tool.main() == 0
    # --no-deps: torchvision's own requirement could otherwise pull the CUDA torch
    assert tool.installed == [("torch==2.13.0+cpu",), ("torchvision==0.28.0", "--no-deps")]


def test_the_readers_install_takes_torch_alone(tool, monkeypatch, capsys):
    """`--book` (make install, Binder's postBuild): the CPU torch for chapter 25, no torchvision."""
    offer(tool, monkeypatch, configured=["2.13.0+cpu"], cpu_index=[])
    installed_versions(tool, monkeypatch, torch="2.12.0")
    assert tool.main(["--book"]) == 0
    assert tool.installed == [("torch==2.13.0+cpu",)]
    offer(tool, monkeypatch, configured=["2.13.0"], cpu_index=[])
    tool.installed.clear()
    installed_versions(tool, monkeypatch)
    assert tool.main(["--book"]) == 0 and tool.installed == []
    assert "Chapter 25" in capsys.readouterr().out
    assert tool.main(["--bogus"]) == 2


def test_no_torchvision_without_torch(tool, monkeypatch):
    offer(tool, monkeypatch, configured=["2.13.0"], cpu_index=[])  # no CPU build: torch is skipped
    assert tool.main() == 0
    assert tool.installed == []


def test_offered_versions_reads_what_pip_lists_for_this_python(tool, monkeypatch, tmp_path):
    """The real pip: only wheels this interpreter can install are offered."""
    here = next(iter(sys_tags()))
    for name in (f"torch-2.13.0+cpu-{here}.whl", f"torch-2.12.0-{here}.whl",
                 "torch-2.14.0-cp27-cp27m-win32.whl"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    assert tool.offered_versions("--no-index", "--find-links", str(tmp_path)) == ["2.13.0+cpu", "2.12.0"]
    assert tool.offered_versions("--no-index", "--find-links", str(tmp_path / "missing")) == []
