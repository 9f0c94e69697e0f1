"""No stored output carries what belongs to one run on one machine, or an alarm.

A reader sees a notebook's stored outputs before running anything (in
JupyterLab, on GitHub, on the site), so they must read as the book's
content: no terminal colour codes (ANSI escapes, which show as "[33m"
outside a terminal), no BEL or other control characters (a `\\a` in a
non-raw string: "\\approx" stored as BEL + "pprox"), no IP address and no
process id (a log line of Ray, of a server, of the machine that ran the
chapter), and no NumPy RuntimeWarning (an alarm about an overflow or a
division by zero that the chapter never explains).

Every stored output of every notebook is read: stream text, error
tracebacks and each text-like MIME type of display data and results
(images and widget state are binary or JSON, and are skipped).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(BOOK.rglob("*.ipynb"))
TEXT_TYPES = ("text/plain", "text/html", "text/markdown", "text/latex")

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# Control characters other than tab, newline and carriage return (BEL is \x07).
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")
# Four dot-separated numbers of 0..255, not part of a longer dotted number
# (a version such as 1.2.3.4.5) nor of a decimal.
OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = re.compile(rf"(?<![\d.]){OCTET}\.{OCTET}\.{OCTET}\.{OCTET}(?![\d.]*\d)")
# "pid 1263", "PID: 1263", "pid=1263", "(pid=1263)", "Worker PID: 1263", "process id 1263", "process: 1263"
# (not "in this process   38,196", a table's label and a rate)
PID = re.compile(r"\b(?:pid|process id)\b\s*[:=#]?\s*\d{2,}|\bprocess\s*[:=#]\s*\d{2,}", re.I)
NUMPY_WARNING = re.compile(r"RuntimeWarning")

RULES = {
    "an ANSI escape": ANSI,
    "a control character (BEL, ...)": CONTROL,
    "an IPv4 address": IPV4,
    "a process id": PID,
    "a NumPy RuntimeWarning": NUMPY_WARNING,
}


def output_texts(cell: dict) -> list[str]:
    """The text of each stored output of `cell`."""
    texts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            texts.append("".join(out["text"]) if isinstance(out["text"], list) else out["text"])
        if out.get("output_type") == "error":
            texts.append("\n".join([out.get("ename", ""), out.get("evalue", ""), *out.get("traceback", [])]))
        for mime, value in out.get("data", {}).items():
            if mime in TEXT_TYPES:
                texts.append("".join(value) if isinstance(value, list) else str(value))
    return texts


def findings(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for index, cell in enumerate(nb["cells"]):
        for text in output_texts(cell):
            for what, rule in RULES.items():
                match = rule.search(text)
                if match:
                    start = max(0, match.start() - 40)
                    found.append(f"{path.relative_to(BOOK)}[{index}]: {what}: "
                                 f"{text[start:match.end() + 40]!r}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(BOOK)) for p in NOTEBOOKS])
def test_stored_outputs_hold_nothing_of_one_run(path: Path) -> None:
    found = findings(path)
    assert not found, "stored outputs that belong to one run or are alarms:\n" + "\n".join(found)


@pytest.mark.parametrize("text, what", [
    ("\x1b[33m(raylet)\x1b[0m A worker died", "an ANSI escape"),
    ("lr \x07pprox 0.1", "a control character (BEL, ...)"),
    ("Worker IP address: 192.0.2.2 Worker port: 44759", "an IPv4 address"),
    ("Worker PID: 1263", "a process id"),
    ("worker rank 1 (pid 1263 on host)", "a process id"),
    ("(Replica pid=4242) hello", "a process id"),
    ("killed process id 31337", "a process id"),
    ("<stdin>:1: RuntimeWarning: divide by zero encountered in log", "a NumPy RuntimeWarning"),
])
def test_each_rule_catches_what_it_names(text: str, what: str) -> None:
    assert RULES[what].search(text), f"{what} not found in {text!r}"


@pytest.mark.parametrize("text", [
    "numpy 2.4.6, taichi 1.7.4, scipy-openblas 0.3.31.188.0",   # versions, not addresses
    "accuracy 74.22 %, loss 0.1234, lr 1e-3",
    "images/s: 38,196; 1.2.3 and 10.20.30",
    "compiled 2 processes of data",   # "processes" is not "process <id>"
    "in this process       38,196",   # a row label and a rate
    "\tcolumns\n\r",
])
def test_ordinary_outputs_pass(text: str) -> None:
    assert not [what for what, rule in RULES.items() if rule.search(text)], text
