"""Build the book's Binder environment as repo2docker does, from binder/ alone.

    python tools/binder_build.py build/binder

copies the repository's files (git's list: tracked, plus untracked files that
are not ignored) to `DEST/repo`, makes a fresh virtual environment in
`DEST/env`, runs `pip install -r binder/requirements.txt` and
`binder/postBuild` there, then installs the test runner (pytest, nbval,
pytest-xdist) beside it. `DEST/build.json` records the step timings and a
fingerprint of the copied files.

`make test` runs this beside the Python tests (about 75 s, mostly pip, which
slows them little); tests/test_binder.py then validates the chapters in
that build when its fingerprint still matches the repository, and builds one
itself otherwise (`make test-notebooks` alone, or files changed since).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ("pytest", "nbval", "pytest-xdist")


def repository_files() -> list[str]:
    """The files git would put in the repository: tracked, plus untracked
    ones that are not ignored (work not committed yet)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True).stdout
    return sorted({f for f in out.decode().split("\0") if f and (ROOT / f).is_file()})


def fingerprint(files: list[str]) -> str:
    """SHA-256 over every file's path and bytes: a build made from other
    contents is never reused."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()


def environment(dest: Path) -> dict:
    """The environment every step and every later check runs in: the new
    venv first on PATH, nothing leaking in from the caller's Python or Jupyter."""
    venv = dest / "env"
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR")}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        JUPYTER_DATA_DIR=str(dest / "jupyter-data"),  # no kernel from the user's folders
        BURNBOOK_DATA=os.environ.get("BURNBOOK_DATA") or str(dest / "data"),
        TI_LOG_LEVEL="warn",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


class BuildError(RuntimeError):
    """A build step failed; the message holds its command and output."""


def _run(cmd: list[str], cwd: Path, env: dict, what: str, timeout: float) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.monotonic() - start


def build(dest: Path) -> dict:
    """A fresh build in `dest` (anything there before is removed); returns
    what `build.json` holds: {"fingerprint", "times"}."""
    dest = dest.resolve()
    if dest.exists():
        shutil.rmtree(dest)
    repo, venv = dest / "repo", dest / "env"
    files = repository_files()
    for name in files:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    env = environment(dest)
    python = str(venv / "bin" / "python")
    times = {"venv": _run([sys.executable, "-m", "venv", str(venv)], repo, env, "python -m venv", 120)}
    times["pip install"] = _run([python, "-m", "pip", "install", "-q", "--no-compile", "-r",
                                 "binder/requirements.txt"], repo, env, "pip install -r binder/requirements.txt", 600)
    times["postBuild"] = _run([str(repo / "binder" / "postBuild")], repo, env, "binder/postBuild", 600)
    times[f"pip install {' '.join(RUNNER)}"] = _run(
        [python, "-m", "pip", "install", "-q", "--no-compile", *RUNNER], repo, env,
        f"pip install {' '.join(RUNNER)}", 300)
    record = {"fingerprint": fingerprint(files), "times": times}
    (dest / "build.json").write_text(json.dumps(record, indent=1))  # written last: its presence means done
    return record


def reusable(dest: Path) -> dict | None:
    """`build.json` of a finished build in `dest` made from the repository's
    current files, else None."""
    try:
        record = json.loads((dest / "build.json").read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("fingerprint") == fingerprint(repository_files()) else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        record = build(Path(argv[0]))
    except (BuildError, subprocess.TimeoutExpired, subprocess.CalledProcessError) as err:
        # Not fatal: the Binder test builds again and reports the failure with its context.
        print(f"binder_build: {err}", file=sys.stderr)
        return 0
    print("binder_build: built in " + argv[0] + " (s): "
          + ", ".join(f"{k} {v:.0f}" for k, v in record["times"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
