"""Install torch 2.13.0 as its CPU build: the tests' independent oracle, and
what Ray's Gloo all-reduce runs on (chapter 25's `DataParallel`).

Run with the venv's Python: `make install-test` runs it for the tests, and
`make install` (so `make lab`) and Binder's `postBuild` run it with `--book`,
the reader's install: torch alone, without torchvision, which only the
tests use. On Linux, PyPI's plain
torch wheel is the CUDA build, which pulls gigabytes of nvidia-* wheels; the
CPU build is the one labelled `+cpu`. So, first match wins:

1. the configured package index (pip.conf, PIP_INDEX_URL, a mirror) offers
   2.13.0+cpu: install that;
2. PyTorch's CPU index answers within a few seconds and offers it: install it
   from there (the configured index still serves the dependencies);
3. not Linux (PyPI's macOS and Windows wheels are CPU builds), or a Linux
   machine with an NVIDIA GPU: install the plain 2.13.0;
4. otherwise install nothing and say so: the tests that compare with torch
   skip (they call pytest.importorskip), and `make test` goes on.

Once torch is there (and without `--book`), torchvision 0.28.0 (the release built against torch
2.13; the ONNX importer's model zoo, tests/importer/zoo.py, builds its CNNs
from it) is installed with --no-deps, so it can never pull another torch.
Its Linux PyPI wheel is a CUDA build whose compiled ops do not load beside
the CPU torch; the zoo uses only its pure-Python model definitions.

Whether a plain wheel would pull nvidia-* is not asked of pip
(`pip install --dry-run --report`): where the index serves no separate
metadata files, that downloads every wheel it resolves, gigabytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata

VERSION = "2.13.0"
CPU_BUILD = f"{VERSION}+cpu"
VISION = "0.28.0"
# A mirror of it can stand in: BURNBOOK_TORCH_CPU_INDEX=<url>.
CPU_INDEX = os.environ.get("BURNBOOK_TORCH_CPU_INDEX", "https://download.pytorch.org/whl/cpu")
# Enough for a reachable index; an unreachable one is given up quickly.
PROBE = ["--timeout", "10", "--retries", "0"]


def pip(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args],
                          capture_output=capture, text=True)


def offered_versions(*options: str) -> list[str]:
    """torch versions the index offers for this Python and platform ([] when it cannot say)."""
    done = pip("index", "versions", "torch", *options, capture=True)
    for line in done.stdout.splitlines():  # "Available versions: 2.14.0, 2.13.0+cpu, ..."
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.partition(":")[2].split(",")]
    return []


def has_nvidia_gpu() -> bool:
    return os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None


def install(requirement: str, *options: str) -> int:
    print(f"install_torch: pip install {requirement} {' '.join(options)}".rstrip(), flush=True)
    return pip("install", "-q", requirement, *options).returncode


def install_vision() -> int:
    """torchvision beside an installed torch (the module docstring says why --no-deps)."""
    try:
        if metadata.version("torchvision").split("+")[0] == VISION:
            return 0
    except metadata.PackageNotFoundError:
        pass
    return install(f"torchvision=={VISION}", "--no-deps")


def main(argv: list[str] | None = None) -> int:
    args = list(argv or [])
    unknown = [a for a in args if a != "--book"]
    if unknown:
        print(f"install_torch: unknown option(s) {' '.join(unknown)}; usage: install_torch.py [--book]",
              file=sys.stderr)
        return 2
    book = "--book" in args
    code = install_torch(book)
    try:
        metadata.version("torch")
    except metadata.PackageNotFoundError:
        return code
    return code or (0 if book else install_vision())


def install_torch(book: bool = False) -> int:
    try:
        present = metadata.version("torch")
    except metadata.PackageNotFoundError:
        present = None
    if present is not None and present.split("+")[0] == VERSION:
        print(f"install_torch: torch {present} is installed already")
        return 0

    if CPU_BUILD in offered_versions():
        return install(f"torch=={CPU_BUILD}")
    if CPU_BUILD in offered_versions("--extra-index-url", CPU_INDEX, *PROBE):
        return install(f"torch=={CPU_BUILD}", "--extra-index-url", CPU_INDEX)

    if not sys.platform.startswith("linux"):
        return install(f"torch=={VERSION}")
    if has_nvidia_gpu():
        print("install_torch: no torch CPU build reachable; this machine has an NVIDIA GPU, "
              "so installing the default (CUDA) build")
        return install(f"torch=={VERSION}")

    missing = ("Chapter 25 (DataParallel: Ray's Gloo all-reduce runs on torch) will stop\n"
               "  at its first cell" if book else "The tests that check burnbook against PyTorch will be skipped")
    print(f"install_torch: NOT installing torch: neither the configured package index nor\n"
          f"  {CPU_INDEX} offers torch {CPU_BUILD}, and the default torch wheel for Linux\n"
          f"  is the CUDA build (gigabytes of nvidia-* wheels) while this machine has no\n"
          f"  NVIDIA GPU. {missing}.\n"
          f"  To run {'it' if book else 'them'}, install the CPU build yourself, e.g.\n"
          f"    {sys.executable} -m pip install torch=={CPU_BUILD} --extra-index-url {CPU_INDEX}\n"
          f"  (or torch=={VERSION} from your index, accepting the CUDA download).",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
