"""Give every Chinese chapter the code cells (source, outputs, execution
counts) of its English twin, keeping the Chinese markdown.

The two notebooks must have the same number of code cells in the same order;
the markdown between them is free. Run after re-executing an English chapter:

    .venv/bin/python tools/sync_zh.py            # every zh chapter
    .venv/bin/python tools/sync_zh.py 07-autodiff.ipynb
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "notebooks"


def sync(name: str) -> bool:
    en_path, zh_path = BOOK / "en" / name, BOOK / "zh" / name
    en = json.loads(en_path.read_text(encoding="utf-8"))
    zh = json.loads(zh_path.read_text(encoding="utf-8"))
    en_code = [c for c in en["cells"] if c["cell_type"] == "code"]
    zh_code = [c for c in zh["cells"] if c["cell_type"] == "code"]
    if len(en_code) != len(zh_code):
        raise SystemExit(f"{name}: en has {len(en_code)} code cells, zh has {len(zh_code)}; "
                         "add or remove zh code cells so the two line up")
    for mine, theirs in zip(zh_code, en_code):
        for key in ("source", "outputs", "execution_count", "metadata"):
            mine[key] = json.loads(json.dumps(theirs[key]))
    zh["metadata"] = en["metadata"]
    text = json.dumps(zh, ensure_ascii=False, indent=1) + "\n"
    changed = text != zh_path.read_text(encoding="utf-8")
    zh_path.write_text(text, encoding="utf-8")
    return changed


def main(names: list[str]) -> None:
    for name in names or sorted(p.name for p in (BOOK / "zh").glob("*.ipynb")):
        print(("updated " if sync(name) else "same    ") + name)


if __name__ == "__main__":
    main(sys.argv[1:])
