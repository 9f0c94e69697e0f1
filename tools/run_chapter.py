"""Re-execute English chapters in place, so their stored outputs are the
real outputs of the code above them, then give the Chinese twins the same
code cells (tools/sync_zh.py).

Run from the repository root, with the environment `make test` uses:

    .venv/bin/python tools/run_chapter.py 11-lr-scheduler.ipynb [more.ipynb ...]
    .venv/bin/python tools/run_chapter.py solutions/11-lr-scheduler.ipynb

Widget state is not stored (a dashboard would add megabytes of plotly), and
nbclient's per-cell timing metadata is dropped and split stream writes are
joined, so a re-run changes only
what the code printed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sync_zh  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def merged_streams(outputs: list) -> list:
    """Consecutive writes to one stream as one output, as a reader sees them."""
    merged: list = []
    for out in outputs:
        last = merged[-1] if merged else None
        if (out.output_type == "stream" and last is not None and last.output_type == "stream"
                and last.name == out.name):
            last.text += out.text
        else:
            merged.append(out)
    return merged


def run(name: str) -> None:
    """Re-run `name`: an English chapter (its zh twin then synced), or
    `solutions/NAME.ipynb`, a solutions notebook (no twin)."""
    folder, _, name = name.rpartition("/")
    path = BOOK / (folder or "en") / name
    nb = nbformat.read(path, as_version=4)
    metadata = nb.metadata.copy()
    NotebookClient(nb, timeout=900, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nb.metadata = metadata
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = merged_streams(cell.outputs)
    nbformat.write(nb, path)
    if not folder and (BOOK / "zh" / name).exists():
        sync_zh.sync(name)


def main(names: list[str]) -> None:
    if not names:
        raise SystemExit(__doc__)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("TI_LOG_LEVEL", "warn")
    if SHARED_DATA.is_dir():
        os.environ.setdefault("BURNBOOK_DATA", str(SHARED_DATA))
    for name in names:
        parts = Path(name).parts
        run("/".join(parts[-2:]) if len(parts) > 1 and parts[-2] == "solutions" else parts[-1])
        print(f"ran {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
