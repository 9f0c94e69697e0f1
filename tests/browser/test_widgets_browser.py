"""The widgets in a real browser: JupyterLab driven by Chromium (Playwright).

A JupyterLab server starts on a free loopback port with a generated token and
its own config, data and runtime folders; Debian's Chromium (headless, never
a downloaded browser) opens a temporary copy of the widgets chapter
(`notebooks/en/23-seeing-inside.ipynb`), with two test-only cells appended:
one prints each GradientView's per-step tables as the kernel computes them,
the other runs a fit for minutes unless stopped. The test runs all cells
from the Run menu, then checks in the DOM that the graph view drew labelled
nodes and rings the node picked in its drop-down, that moving the gradient
view's slider to another step shows that step's table, that no figure's
title, legend or labels lie under plotly's toolbar or on each other, that
each training dashboard drew its curves under a key, and that the appended
fit's Stop button ends it: the dashboard says "stopped", marks the epoch it
cut short as partial, and the cell finishes, printing what `fit` returned.
A second test, on the same server and page, clicks the chapter's
BackwardStepper's "next" and "previous" buttons and reads the displayed rule
(`td.bb-step-rule`): each is the formula of the step the kernel says
(`stepper.steps[k].formula`, printed by a third appended cell); and, in a
second tab, the stepper's stored output as the chapter file keeps it shows
its static figure (a PNG) without running anything.
Screenshots go to `test-artifacts/browser/`; with `BB_README_IMAGES=1` the
graph's and the stopped dashboard's also replace the README's pictures in
`docs/img/`.

Skipped (with the reason) where playwright or /usr/bin/chromium is missing
(`make browser-deps` installs Chromium). `BB_BROWSER_NOTEBOOK=path` opens
another notebook instead of the chapter (for developing the test).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
import urllib.request
from pathlib import Path

import pytest

from .lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, jupyter_lab, kernel_ids

CHAPTER = ROOT / "notebooks" / "en" / "23-seeing-inside.ipynb"
README_IMAGES = {"graph-1": ROOT / "docs" / "img" / "graph-view.png",
                 "dashboard-stopped": ROOT / "docs" / "img" / "training-dashboard.png"}
SERVER_START_S = 60     # JupyterLab's first start builds its settings cache
CELLS_S = 90            # the chapter's cells up to the appended fit
STOP_S = 30             # from the click to the cell's end
STEPPER_S = 30          # the stepper's clicks and its static figure
BUDGET_S = 150 + STEPPER_S  # the whole module, server start included: every wait is cut to what is left
_DEADLINE = [float("inf")]


def _ms(seconds: float) -> float:
    """A wait of `seconds`, cut to the test's remaining budget (in ms, for Playwright)."""
    left = _DEADLINE[0] - time.monotonic()
    if left <= 0:
        raise AssertionError(f"the browser test ran past its {BUDGET_S} s budget")
    return 1000 * min(seconds, left)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install burnbook[notebook])")
from burnbook.widgets._static import MODEBAR_PX  # noqa: E402 (the width kept clear for plotly's toolbar)
if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium (make browser-deps: apt-get install -y chromium)",
                allow_module_level=True)

# The appended cell: self-contained, so it works whatever the chapter defines.
STOP_CELL = '''\
# Appended by tests/browser/test_widgets_browser.py: a fit that runs for
# minutes unless its dashboard's Stop button ends it.
import tempfile as _tempfile
import time as _time
from pathlib import Path as _Path

import numpy as _np
from burnbook import Int as _Int, Tensor as _Tensor
from burnbook.backend import Autodiff as _Autodiff, NdArray as _NdArray
from burnbook.module import Module as _Module
from burnbook.nn import Linear as _Linear, LinearConfig as _LinearConfig
from burnbook.nn.loss import CrossEntropyLossConfig as _CE
from burnbook.optim import SgdConfig as _SgdConfig
from burnbook.train import (ClassificationOutput as _Out, LearnerBuilder as _LearnerBuilder,
                            LossMetric as _LossMetric, TrainOutput as _TrainOutput)

_B = _Autodiff[_NdArray]


class SlowClassifier(_Module):
    linear: _Linear

    def _step(self, batch):
        logits = self.linear(batch[0])
        loss = _CE().init(backend=type(logits)._B).forward(logits, batch[1])
        return _Out(loss, logits, batch[1])

    def train_step(self, batch):
        _time.sleep(0.05)   # slow enough to be stopped by hand
        item = self._step(batch)
        return _TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch):
        return self._step(batch)


_rng = _np.random.default_rng(0)
_x = _rng.standard_normal((256, 4)).astype(_np.float32)
_y = (_x[:, 0] > 0).astype(_np.int64)
_train = [(_Tensor[_B, 2].from_data(_x[i:i + 32]), _Tensor[_B, 1, _Int].from_data(_y[i:i + 32]))
          for i in range(0, 256, 32)]
_valid = [(_Tensor[_NdArray, 2].from_data(_x[:64]), _Tensor[_NdArray, 1, _Int].from_data(_y[:64]))]
_dir = _Path(_tempfile.mkdtemp())
_B.seed(0)
_learner = (_LearnerBuilder(_dir).metric_train_numeric(_LossMetric()).metric_valid_numeric(_LossMetric())
            .num_epochs(1000)
            .build(SlowClassifier(linear=_LinearConfig(4, 2).init(backend=_B)), _SgdConfig().init(), 0.1))
# The epoch lines go to a buffer: past 50 outputs JupyterLab folds a cell's
# output away, and with them the line the test reads.
import contextlib as _contextlib, io as _io
with _contextlib.redirect_stdout(_io.StringIO()):
    _model = _learner.fit(_train, _valid)
_kept = sorted(p.name for p in (_dir / "checkpoint").iterdir())
print(f"fit returned after {len(_learner.epochs_done)} epochs;",
      f"a {type(_model).__name__};", "checkpoints:", " ".join(_kept))
'''


# Appended before it: every GradientView's tables, one per step, as JSON.
TABLES_CELL = '''\
# Appended by tests/browser/test_widgets_browser.py: each GradientView's
# table of every step, as the kernel computes it.
import json as _json
for _name, _view in list(globals().items()):
    if type(_view).__name__ == "GradientView" and not _name.startswith("_"):
        print("bb-gradient-tables", _json.dumps({"labels": [label for label, _ in _view.steps],
              "tables": [_view.table(k) for k in range(len(_view.steps))]}))
'''
TABLES_MARK = "bb-gradient-tables"

# Appended after it: every BackwardStepper's formulas, one per step, as JSON.
STEPPER_CELL = '''\
# Appended by tests/browser/test_widgets_browser.py: each BackwardStepper's
# formula of every step, as the kernel computes it.
import json as _json
for _name, _view in list(globals().items()):
    if type(_view).__name__ == "BackwardStepper" and not _name.startswith("_"):
        print("bb-stepper-formulas", _json.dumps({"name": _name, "current": _view.current.index,
              "formulas": [_s.formula for _s in _view.steps]}))
'''
STEPPER_MARK = "bb-stepper-formulas"


def _notebook_source() -> Path:
    override = os.environ.get("BB_BROWSER_NOTEBOOK")
    path = Path(override) if override else CHAPTER
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} does not exist yet")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a folder with the notebook copy."""
    source = _notebook_source()
    _DEADLINE[0] = time.monotonic() + BUDGET_S
    home = tmp_path_factory.mktemp("lab")
    root = home / "root"
    root.mkdir()
    nb = json.loads(source.read_text(encoding="utf-8"))
    # No stored outputs: everything the checks see comes from this run, and a
    # "Run All" click that JupyterLab lost is noticed (no prompt changes).
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb.get("metadata", {}).pop("widgets", None)
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "bb-browser-gradient-tables",
                        "metadata": {}, "outputs": [], "source": TABLES_CELL})
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "bb-browser-stepper-formulas",
                        "metadata": {}, "outputs": [], "source": STEPPER_CELL})
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "bb-browser-stop-test",
                        "metadata": {}, "outputs": [], "source": STOP_CELL})
    # The server's own Python kernel (this virtual environment's), with no kernel-choice dialog.
    nb.setdefault("metadata", {})["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                   "language": "python"}
    name = "widgets-under-test.ipynb"
    (root / name).write_text(json.dumps(nb, indent=1), encoding="utf-8")
    try:
        with jupyter_lab(root, home, SERVER_START_S) as server:
            yield {**server, "name": name}
    except AssertionError as err:   # the server did not start
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def page(lab):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            console = []
            page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
            page.set_default_timeout(_ms(30))
            page.goto(f"{lab['url']}/lab/tree/{lab['name']}?token={lab['token']}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=_ms(60))
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=_ms(60))
            _wait_for_one_kernel(page, lab)
            yield page
        finally:
            (ARTIFACTS / "console.txt").write_text("\n".join(console), encoding="utf-8")
            browser.close()


def _wait_for_one_kernel(page, lab, steady_s: float = 3.0) -> None:
    """Wait until the server runs one kernel, the same one for `steady_s`,
    and the notebook shows it idle. JupyterLab sometimes starts a second
    kernel as the notebook opens and shuts the first one down; cells sent
    during that switch are dropped."""
    url = f"{lab['url']}/api/kernels?token={lab['token']}"
    seen, since = None, time.monotonic()
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                ids = sorted(k["id"] for k in json.loads(reply.read()))
        except OSError:   # the server is busy switching kernels (a 500 now and then): ask again
            ids = None
        if ids != seen:
            seen, since = ids, time.monotonic()
        elif len(ids) == 1 and time.monotonic() - since >= steady_s:
            break
        _ms(1)  # raises once the test's budget is spent
        time.sleep(0.25)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=_ms(30))


def _shot(page, name: str, locator=None) -> None:
    target = locator if locator is not None else page
    target.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _run_all(page) -> None:
    """Run > Run All Cells, from the menu bar; again if the first cell did
    not start (a click while JupyterLab is still settling can be lost)."""
    prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt")
    for _ in range(3):
        _accept_dialogs(page)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if any(t.strip() not in ("[ ]:", "") for t in _texts(prompts)):
                return
            _accept_dialogs(page)
            time.sleep(0.25)
        page.keyboard.press("Escape")
    raise AssertionError("Run > Run All Cells did not start the notebook")


def test_widgets_render_and_the_stop_button_ends_fit(page, lab):
    try:
        _check_widgets(page)
    except Exception:
        # What the page showed when the check gave up, the cells' outputs and the server's log.
        _shot(page, "failure")
        outputs = page.locator(".jp-CodeCell").evaluate_all(
            "cells => cells.map(c => (c.querySelector('.jp-InputArea-prompt') || {}).textContent + ' '"
            " + Array.from(c.querySelectorAll('.jp-OutputArea-output')).map(o => o.textContent).join('\\n'))")
        (ARTIFACTS / "failure-outputs.txt").write_text("\n\n".join(outputs), encoding="utf-8")
        shutil.copy(lab["home"] / "server.log", ARTIFACTS / "server.log")
        raise


def test_the_stepper_steps_and_shows_its_static_figure(page, lab):
    """Runs after the test above on the same page (whose Run All ran the
    chapter); run alone, it runs every cell above the appended fit itself."""
    try:
        _check_stepper(page, lab)
    except Exception:
        _shot(page, "stepper-failure")
        raise


def _check_stepper(page, lab) -> None:
    printed = page.locator(".jp-OutputArea-output", has_text=STEPPER_MARK)
    if printed.count() == 0:
        # Run alone: Run > Run All Above Selected Cell, from the appended fit (not run).
        _accept_dialogs(page)
        page.locator(".jp-Notebook .jp-CodeCell").last.locator(".jp-InputArea-prompt").click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Above Selected Cell").first.click()
        printed.first.wait_for(timeout=_ms(CELLS_S))
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=_ms(STEPPER_S))
    kernel = [json.loads(line.split(STEPPER_MARK, 1)[1]) for t in _texts(printed)
              for line in t.splitlines() if STEPPER_MARK in line]
    steppers = page.locator(".bb-backward-stepper")
    if "23-seeing-inside" in str(_notebook_source()):
        assert steppers.count() >= 1 and kernel, "the chapter shows no BackwardStepper (.bb-backward-stepper)"
    assert steppers.count() == len(kernel), f"{steppers.count()} steppers shown, the kernel has {len(kernel)}"
    for i, printed_stepper in enumerate(kernel):
        stepper, formulas = steppers.nth(i), printed_stepper["formulas"]
        what = f"stepper {i + 1} ({printed_stepper['name']})"
        stepper.scroll_into_view_if_needed()
        rule, step = stepper.locator("td.bb-step-rule"), stepper.locator("td.bb-step-step")

        def shown() -> tuple[int, str]:
            return int(step.inner_text().split()[0]), rule.inner_text()

        k, text = shown()
        assert k == printed_stepper["current"] and text == formulas[k], (
            f"{what}: at step {k} it shows {text!r}, the kernel's formula is {formulas[k]!r}")
        assert len(formulas) >= 3, f"{what}: {len(formulas)} steps, too few to click through"
        k = min(k, len(formulas) - 3)
        for button, target in (("next", k + 1), ("next", k + 2), ("previous", k + 1)):
            stepper.locator("button", has_text=button).first.click()
            deadline = time.monotonic() + _ms(10) / 1000
            while shown() != (target, formulas[target]) and time.monotonic() < deadline:
                time.sleep(0.1)
            got = shown()
            assert got == (target, formulas[target]), (
                f"{what}: after {button!r} it shows step {got[0]}: {got[1]!r}; "
                f"the kernel's step {target} is {formulas[target]!r}")
            title = _texts(stepper.locator(".gtitle"))
            assert any(f"step {target} of {len(formulas) - 1}" in t for t in title), (
                f"{what}: after {button!r} the figure's title is {title}")
        _shot(page, f"stepper-{i + 1}", stepper)
    if "23-seeing-inside" in str(_notebook_source()):
        _check_stepper_static(page, lab)


def _check_stepper_static(page, lab) -> None:
    """The chapter file's stored stepper output, opened in another tab (not
    trusted, not run): its PNG shows, with pixels drawn, and no widget."""
    nb = json.loads(CHAPTER.read_text(encoding="utf-8"))
    stored = [(c, o) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if "".join(o.get("data", {}).get("text/plain", "")).startswith("BackwardStepper:")]
    assert stored, f"{CHAPTER.name} stores no BackwardStepper output"
    assert all("image/png" in o["data"] for _, o in stored), "a stored stepper output has no PNG"
    nb["cells"] = [c for c, _ in stored]
    name = "stepper-static.ipynb"
    (lab["home"] / "root" / name).write_text(json.dumps(nb, indent=1), encoding="utf-8")
    before = set(kernel_ids(lab))
    tab = page.context.new_page()
    try:
        tab.goto(f"{lab['url']}/lab/tree/{name}?reset&token={lab['token']}")
        image = tab.locator(".jp-OutputArea-output img").first
        image.wait_for(timeout=_ms(STEPPER_S))
        tab.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=image.element_handle(),
                              timeout=_ms(10))
        ink = image.evaluate(
            """(el) => { const c = document.createElement('canvas');
                         c.width = el.naturalWidth; c.height = el.naturalHeight;
                         const g = c.getContext('2d'); g.drawImage(el, 0, 0);
                         const d = g.getImageData(0, 0, c.width, c.height).data;
                         let dark = 0;
                         for (let i = 0; i < d.length; i += 4) if (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245) dark++;
                         return dark / (d.length / 4); }""")
        box = image.bounding_box()
        assert box["width"] > 100 and box["height"] > 100 and ink > 0.005, f"the static figure: {box}, ink {ink}"
        assert tab.locator(".bb-backward-stepper").count() == 0, "the untrusted copy rendered the live widget"
        image.screenshot(path=str(ARTIFACTS / "stepper-static.png"))
    finally:
        tab.close()
        for kid in set(kernel_ids(lab)) - before:   # the kernel the tab may have started
            request = urllib.request.Request(f"{lab['url']}/api/kernels/{kid}?token={lab['token']}",
                                             method="DELETE")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(request, timeout=10).close()


def _accept_dialogs(page) -> None:
    """Accept a dialog JupyterLab may raise while its session settles (e.g.
    "Select Kernel", whose default is the notebook's kernel)."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()
        dialog.first.wait_for(state="detached", timeout=_ms(10))


def _check_widgets(page) -> None:
    _run_all(page)
    # The appended fit's dashboard, in the last cell (not merely the last
    # dashboard so far, which is the chapter's own until that cell runs).
    last = page.locator(".jp-Notebook .jp-CodeCell").last.locator(".bb-training-dashboard")
    last.locator(".bb-state-running").wait_for(timeout=_ms(CELLS_S))
    last.locator(".bb-curves .scatterlayer .trace path.js-line").first.wait_for(timeout=_ms(30))
    page.wait_for_function(
        """(el) => { const p = el.querySelector('.bb-curves .scatterlayer .trace path.js-line');
                     return p && (p.getAttribute('d') || '').split('L').length > 3; }""",
        arg=last.element_handle(), timeout=_ms(30))
    _shot(page, "dashboard-running", last)

    # Every earlier dashboard (the chapter's own fits) finished and drew curves.
    # A cell's display is updated in place when fit ends, and JupyterLab may
    # keep an emptied view of the first one beside the new one for a while:
    # each dashboard cell is checked through its view that holds the curves.
    cells = page.locator(".jp-Notebook .jp-CodeCell").filter(has=page.locator(".bb-training-dashboard"))
    count = cells.count()
    for i in range(count - 1):
        cell = cells.nth(i)
        cell.scroll_into_view_if_needed()
        cell.locator(".bb-state-finished").first.wait_for(timeout=_ms(30))
        try:
            page.wait_for_function(
                """(el) => Math.max(0, ...Array.from(el.querySelectorAll('.bb-curves .scatterlayer .trace path.js-line'))
                        .map(p => (p.getAttribute('d') || '').split('L').length)) > 2""",
                arg=cell.element_handle(), timeout=_ms(30))
        except sync_api.TimeoutError:
            pass
        live = cell.locator(".bb-training-dashboard").filter(has=page.locator(".bb-curves .js-plotly-plot"))
        if live.count() == 0:
            # JupyterLab's plotly renderer shows a figure rendered out of view
            # as its own snapshot image (img.plot-img) until it is redrawn.
            shot = cell.locator(".bb-curves img.plot-img").first
            assert shot.count() and shot.evaluate("i => i.complete && i.naturalWidth > 0"), (
                f"dashboard {i + 1} of {count} drew no figure")
            board = cell.locator(".bb-training-dashboard").filter(has=page.locator(".bb-curves img.plot-img")).first
            _check_dashboard_polish(board, f"dashboard {i + 1}")
            _shot(page, f"dashboard-{i + 1}", board)
            continue
        board = live.first
        assert _curve_points(board) > 2, f"dashboard {i + 1} of {count} drew no curve"
        titles = _texts(board.locator(".bb-curves .g-gtitle, .bb-curves .annotation-text"))
        assert any("Loss" in t for t in titles), f"dashboard {i + 1}: no Loss subplot among {titles}"
        key = _texts(board.locator(".bb-curves .legendtext"))
        assert {"train", "valid", "epoch mean"} <= set(key), f"dashboard {i + 1}: its key shows {key}"
        _check_clear_of_the_toolbar(page, board, f"dashboard {i + 1}")
        _check_dashboard_polish(board, f"dashboard {i + 1}")
        _shot(page, f"dashboard-{i + 1}", board)

    # The graph view: labelled nodes, the picked node ringed.
    graphs = page.locator(".bb-graph-view")
    if "23-seeing-inside" in str(_notebook_source()):
        assert graphs.count() >= 1, "the chapter shows no graph view (.bb-graph-view)"
    for i in range(graphs.count()):
        graph = graphs.nth(i)
        graph.scroll_into_view_if_needed()
        labels = [t for t in _texts(graph.locator(".textpoint, .annotation-text")) if t.strip()]
        assert len(labels) >= 2, f"graph view {i + 1} shows no node labels"
        _check_labels_apart_and_inside(graph, ".annotation-text", f"graph view {i + 1}")
        _check_clear_of_the_toolbar(page, graph, f"graph view {i + 1}")
        _shot(page, f"graph-{i + 1}", graph)
    if "23-seeing-inside" in str(_notebook_source()):
        # The chapter's first graph is the guide's CNN: 36 nodes, each labelled.
        assert len(_texts(graphs.first.locator(".annotation-text"))) >= 36

    # TensorView: the title, the colour note and the image labels apart.
    tensors = page.locator(".bb-tensor-view")
    for i in range(tensors.count()):
        view = tensors.nth(i)
        view.scroll_into_view_if_needed()
        _check_labels_apart_and_inside(view, ".annotation-text, .gtitle, .gtitle-subtitle", f"tensor view {i + 1}")
        _check_clear_of_the_toolbar(page, view, f"tensor view {i + 1}")
        _shot(page, f"tensor-{i + 1}", view)

    # GradientView: the slider's step labels and its current value are drawn
    # whole, and moving it to another step shows that step's table.
    views = page.locator(".bb-gradient-view")
    kernel_tables = [json.loads(t.split(TABLES_MARK, 1)[1]) for t in _texts(
        page.locator(".jp-OutputArea-output", has_text=TABLES_MARK)) for t in t.splitlines() if TABLES_MARK in t]
    for i in range(views.count()):
        view = views.nth(i)
        view.scroll_into_view_if_needed()
        _check_clear_of_the_toolbar(page, view, f"gradient view {i + 1}")
        if view.locator(".slider-label").count():
            _check_labels_apart_and_inside(view, ".slider-label, .slider-currentvalue", f"gradient view {i + 1}")
            _check_the_slider_moves_the_table(page, view, kernel_tables, f"gradient view {i + 1}")
        _shot(page, f"gradient-{i + 1}", view)

    # The Stop button ends the appended fit: "stopped", and the cell finishes.
    last.scroll_into_view_if_needed()
    button = last.locator(".bb-stop-button")
    assert button.is_enabled()
    button.click()
    last.locator(".bb-state-stopped").wait_for(timeout=_ms(STOP_S))
    cell = page.locator(".jp-Notebook .jp-CodeCell").last
    printed = cell.locator(".jp-OutputArea-output", has_text="fit returned after")
    printed.wait_for(timeout=_ms(STOP_S))
    text = printed.inner_text()
    epochs = int(text.split("fit returned after", 1)[1].split()[0])
    assert epochs < 1000, text
    if epochs > 0:   # the epochs finished before the click were checkpointed
        assert f"model-{epochs}.mpk.gz" in text, text
    assert "stopped" in last.locator(".bb-status").inner_text()
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=_ms(STOP_S))
    items = re.search(r"(?:train|valid) ([\d,]+)/([\d,]+) items", last.locator(".bb-progress-text").inner_text())
    if items and int(items[1].replace(",", "")) < int(items[2].replace(",", "")):
        # The click cut an epoch short: its mean is drawn as partial, and the key says so.
        # (Queried afresh each time: the display is replaced when fit ends, and
        # JupyterLab's plotly renderer may show its snapshot image until hovered.)
        curves = page.locator(".jp-Notebook .jp-CodeCell").last.locator(".bb-curves").last
        curves.scroll_into_view_if_needed()
        curves.hover()
        page.wait_for_function(
            """() => { const cells = document.querySelectorAll('.jp-Notebook .jp-CodeCell');
                       return Array.from(cells[cells.length - 1].querySelectorAll('.bb-curves .legendtext'))
                           .some(t => (t.textContent || '').includes('partial epoch')); }""",
            timeout=_ms(STOP_S))
    _check_clear_of_the_toolbar(page, last, "the stopped dashboard")
    _shot(page, "dashboard-stopped", last)
    # The node picker talks to the kernel, which was busy with the fit until now.
    for i in range(graphs.count()):
        _check_the_picked_node_is_ringed(graphs.nth(i), f"graph view {i + 1}")
    _shot(page, "notebook")
    if os.environ.get("BB_README_IMAGES") == "1":
        for name, target in README_IMAGES.items():
            shutil.copyfile(ARTIFACTS / f"{name}.png", target)


def _check_the_picked_node_is_ringed(graph, what: str) -> None:
    """Picking a node in the drop-down moves the ring (the figure's third
    trace, "selected") onto that node's marker (the second trace, "nodes",
    whose points are in the drop-down's order n0, n1, ...)."""
    select = graph.locator("select").first
    options = select.locator("option")
    assert options.count() >= 2, f"{what}: the node picker offers {options.count()} nodes"
    for option in (options.last, options.first):   # n0, then back to the output
        label = option.inner_text()
        index = int(label.split(":", 1)[0].lstrip("n"))
        select.select_option(label=label)
        graph.page.wait_for_function(
            """([el, index]) => {
                const traces = el.querySelectorAll('.scatterlayer .trace');
                if (traces.length < 3) return false;
                const nodes = traces[1].querySelectorAll('path.point');
                const ring = traces[2].querySelector('path.point');
                return ring && nodes[index]
                    && ring.getAttribute('transform') === nodes[index].getAttribute('transform');
            }""", arg=[graph.element_handle(), index], timeout=_ms(15))
        shown = graph.locator(".bb-node-info").inner_text()
        assert f"n{index} " in shown, f"{what}: picked {label!r}, the table shows {shown!r}"


def _table(view) -> tuple[str, list[list[str]]]:
    """The visible statistics table of a gradient view: its title and rows,
    read from plotly's table (one `.y-column` per column: a `#header` block
    and blocks of cells)."""
    found = view.evaluate(
        """(el) => {
            const title = Array.from(el.querySelectorAll('.annotation-text'))
                .map(t => t.textContent || '').find(t => t.startsWith('statistics at ')) || '';
            // Rows in screen order: plotly spreads them over blocks whose DOM order is not theirs.
            const columns = Array.from(el.querySelectorAll('.table .y-column')).map(c =>
                Array.from(c.querySelectorAll('.column-block:not(#header) .cell-text'))
                    .map(t => [t.getBoundingClientRect().top, t.textContent || ''])
                    .sort((a, b) => a[0] - b[0]).map(([, text]) => text));
            return {title, columns};
        }""")
    columns = found["columns"]
    rows = [list(r) for r in zip(*columns)] if columns else []
    return found["title"], rows


def _check_the_slider_moves_the_table(page, view, printed: list, what: str) -> None:
    """Click the slider's first step: the table's title names it and its
    rows are that step's, as the kernel printed them; then back to the last."""
    steps = view.locator(".slider-label-group .slider-label")   # (the current value is a .slider-label too)
    labels = _texts(steps)
    match = [p for p in printed if p["labels"] == labels]
    assert match, f"{what}: no printed tables for the slider's steps {labels} (printed: {printed})"
    tables = match[0]["tables"]
    title, rows = _table(view)
    assert title == f"statistics at {labels[-1]}" and rows == tables[-1], (
        f"{what}: before the slider moved, the table shows {title!r} {rows}")
    for k in (0, len(labels) - 1):
        rail = view.locator(".slider-rail-touch-rect").first   # the slider's area that takes the clicks
        rail.scroll_into_view_if_needed()
        target, box = steps.nth(k).bounding_box(), rail.bounding_box()
        rail.click(position={"x": target["x"] + target["width"] / 2 - box["x"], "y": box["height"] / 2})
        deadline = time.monotonic() + 10
        while _table(view) != (f"statistics at {labels[k]}", tables[k]) and time.monotonic() < deadline:
            time.sleep(0.2)
        title, rows = _table(view)
        assert title == f"statistics at {labels[k]}", f"{what}: the slider at {labels[k]!r}, the table at {title!r}"
        assert rows == tables[k], f"{what}: at {labels[k]!r} the table shows {rows}, the kernel {tables[k]}"
        if k == 0:
            _shot(page, "gradient-first-step", view)


def _check_clear_of_the_toolbar(page, widget, what: str) -> None:
    """Hovering a figure shows plotly's toolbar in its top right corner: it
    covers no title, legend entry, annotation or label of that figure."""
    for plot in widget.locator(".js-plotly-plot").all():
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        plot.locator(".modebar").first.wait_for(state="attached", timeout=_ms(10))
        found = plot.evaluate(
            """(el) => {
                const box = e => { const r = e.getBoundingClientRect();
                                   return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
                const bar = el.querySelector('.modebar');
                const texts = Array.from(el.querySelectorAll(
                    '.infolayer text, .annotation-text, .legendtext, .gtitle, .gtitle-subtitle'))
                    .filter(t => (t.textContent || '').trim()).map(t => ({text: t.textContent, ...box(t)}));
                return {bar: box(bar), texts};
            }""")
        bar = found["bar"]
        assert 0 < bar["r"] - bar["l"] <= MODEBAR_PX, f"{what}: the toolbar is {bar}, wider than MODEBAR_PX"
        for t in found["texts"]:
            apart = t["r"] <= bar["l"] or bar["r"] <= t["l"] or t["b"] <= bar["t"] or bar["b"] <= t["t"]
            assert apart, f"{what}: plotly's toolbar {bar} covers {t['text']!r} {t}"
    page.mouse.move(1, 1)   # away: the toolbar and any hover label fade before the next screenshot
    time.sleep(0.6)


def _check_labels_apart_and_inside(widget, selector: str, what: str) -> None:
    """No two of the widget's `selector` labels overlap, and each lies whole
    inside its figure and inside the output area that shows it (a label out
    there is cut off, or needs a scroll to be read)."""
    found = widget.evaluate(
        """(el, selector) => {
            const box = e => { const r = e.getBoundingClientRect();
                               return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
            const area = box(el.closest('.jp-OutputArea-output') || el);
            return Array.from(el.querySelectorAll('.js-plotly-plot')).flatMap(plot => {
                const fig = box(plot.querySelector('.main-svg'));
                return Array.from(plot.querySelectorAll(selector))
                    .filter(t => (t.textContent || '').trim())
                    .map(t => ({text: t.textContent, ...box(t), fig, area}));
            });
        }""", selector)
    assert found, f"{what}: no {selector} labels drawn"
    for lab in found:
        for frame, name in ((lab["fig"], "its figure"), (lab["area"], "the output area")):
            inside = (lab["l"] >= frame["l"] - 0.5 and lab["r"] <= frame["r"] + 0.5
                      and lab["t"] >= frame["t"] - 0.5 and lab["b"] <= frame["b"] + 0.5)
            assert inside, f"{what}: label {lab['text']!r} is clipped by {name}: {lab} "
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            apart = a["r"] <= b["l"] or b["r"] <= a["l"] or a["b"] <= b["t"] or b["b"] <= a["t"]
            assert apart, f"{what}: labels {a['text']!r} and {b['text']!r} overlap"


def _check_dashboard_polish(board, what: str) -> None:
    """One number format in the metrics panel (4 significant digits, never
    scientific for a metric's usual range), and curves that use the width."""
    panel = board.locator(".bb-metrics").inner_text()
    numbers = re.findall(r"(?<![\w-])\d[\d.]*(?:e[-+]?\d+)?", panel)
    assert numbers, f"{what}: the metrics panel shows no numbers: {panel!r}"
    for n in numbers:
        mantissa = n.split("e")[0]
        scientific_ok = "e" not in n or float(n) < 1e-4
        digits = mantissa.replace(".", "").lstrip("0")
        assert scientific_ok and len(digits) <= 4, f"{what}: {n!r} in {panel!r} is not in the 4-digit format"
    widths = board.evaluate(
        """(el) => [el.getBoundingClientRect().width,
                    (el.querySelector('.bb-curves .main-svg, .bb-curves img.plot-img') || el)
                        .getBoundingClientRect().width]""")
    assert widths[1] >= 0.9 * widths[0], f"{what}: the curves fill {widths[1]:.0f} of {widths[0]:.0f} px"


def _texts(locator) -> list[str]:
    """The text of each matched element (SVG text has no innerText)."""
    return locator.evaluate_all("els => els.map(e => e.textContent || '')")


def _curve_points(board) -> int:
    """Points of the longest drawn line in a dashboard."""
    return board.evaluate(
        """(el) => Math.max(0, ...Array.from(el.querySelectorAll('.scatterlayer .trace path.js-line'))
                .map(p => (p.getAttribute('d') || '').split('L').length))""")
