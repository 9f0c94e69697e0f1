"""Fixtures for the data tests: the offline MNIST folder and small datasets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _shared_data() -> Path | None:
    for candidate in (os.environ.get("BURNBOOK_DATA"), ROOT.parent / "shared" / "data"):
        if candidate and (Path(candidate) / "mnist-offline").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder holding mnist/ and mnist-offline/ (../shared/data)."""
    path = _shared_data()
    if path is None:
        pytest.skip("no offline MNIST data (set BURNBOOK_DATA to ../shared/data)")
    return path


@pytest.fixture
def offline_env(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """BURNBOOK_DATA pointing at the shared data folder."""
    monkeypatch.setenv("BURNBOOK_DATA", str(shared_data))
    return shared_data


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test of this folder may reach the network: downloads fail loudly
    unless a test replaces `download_file` itself."""
    from burnbook.data import download

    def refuse(url, dest, timeout=60.0):
        raise ConnectionError(f"network access in a test: {url}")

    monkeypatch.setattr(download, "download_file", refuse)
