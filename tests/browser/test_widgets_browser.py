"""The widgets in a real browser: JupyterLab driven by Chromium (Playwright).

A JupyterLab server starts on a free loopback port with a generated token and
its own config, data and runtime folders; Debian's Chromium (headless, never
a downloaded browser) opens a temporary copy of the widgets chapter
(`notebooks/en/23-seeing-inside.ipynb`), with one test-only cell appended: a
fit that runs for minutes unless stopped. The test runs all cells from the
Run menu, then checks in the DOM that the graph view drew labelled nodes,
that each training dashboard drew its curves, and that the appended fit's
Stop button ends it: the dashboard says "stopped" and the cell finishes,
printing what `fit` returned. Screenshots go to `test-artifacts/browser/`.

Skipped (with the reason) where playwright or /usr/bin/chromium is missing
(`make browser-deps` installs Chromium). `BB_BROWSER_NOTEBOOK=path` opens
another notebook instead of the chapter (for developing the test).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "notebooks" / "en" / "23-seeing-inside.ipynb"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_START_S = 60     # JupyterLab's first start builds its settings cache
CELLS_S = 90            # the chapter's cells up to the appended fit
STOP_S = 30             # from the click to the cell's end
BUDGET_S = 150          # the whole test, server start included: every wait is cut to what is left
_DEADLINE = [float("inf")]


def _ms(seconds: float) -> float:
    """A wait of `seconds`, cut to the test's remaining budget (in ms, for Playwright)."""
    left = _DEADLINE[0] - time.monotonic()
    if left <= 0:
        raise AssertionError(f"the browser test ran past its {BUDGET_S} s budget")
    return 1000 * min(seconds, left)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install burnbook[notebook])")
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "bb-browser-stop-test",
                        "metadata": {}, "outputs": [], "source": STOP_CELL})
    # The server's own Python kernel (this virtual environment's), with no kernel-choice dialog.
    nb.setdefault("metadata", {})["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                                   "language": "python"}
    name = "widgets-under-test.ipynb"
    (root / name).write_text(json.dumps(nb, indent=1), encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        (home / sub).mkdir()
        env[var] = str(home / sub)
    # Every cell stays in the DOM (no windowing), the notebook's kernel starts
    # without a "Select Kernel" dialog (accepting one mid-run swaps the kernel
    # and aborts the queued cells), and no news pop-up.
    settings = home / "config" / "lab" / "user-settings" / "@jupyterlab"
    for plugin, values in (("notebook-extension/tracker", {"windowingMode": "none", "autoStartDefaultKernel": True}),
                           ("apputils-extension/notification", {"fetchNews": "false"})):
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")
    env.setdefault("TI_LOG_LEVEL", "warn")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    log = (home / "server.log").open("w")
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", "--ServerApp.terminals_enabled=False",
               "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")   # containers and CI often run as root
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited with {server.returncode}:\n{(home / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s")
            time.sleep(0.5)
        yield {"url": url, "token": token, "name": name, "home": home}
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


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
        with urllib.request.urlopen(url, timeout=5) as reply:
            ids = sorted(k["id"] for k in json.loads(reply.read()))
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


def _accept_dialogs(page) -> None:
    """Accept a dialog JupyterLab may raise while its session settles (e.g.
    "Select Kernel", whose default is the notebook's kernel)."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()
        dialog.first.wait_for(state="detached", timeout=_ms(10))


def _check_widgets(page) -> None:
    _run_all(page)
    dashboards = page.locator(".bb-training-dashboard")
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
    count = dashboards.count()
    for i in range(count - 1):
        board = dashboards.nth(i)
        board.scroll_into_view_if_needed()
        board.locator(".bb-state-finished").wait_for(timeout=_ms(30))
        assert _curve_points(board) > 2, f"dashboard {i + 1} of {count} drew no curve"
        titles = _texts(board.locator(".bb-curves .g-gtitle, .bb-curves .annotation-text"))
        assert any("Loss" in t for t in titles), f"dashboard {i + 1}: no Loss subplot among {titles}"
        _shot(page, f"dashboard-{i + 1}", board)

    # The graph view: labelled nodes.
    graphs = page.locator(".bb-graph-view")
    if "23-seeing-inside" in str(_notebook_source()):
        assert graphs.count() >= 1, "the chapter shows no graph view (.bb-graph-view)"
    for i in range(graphs.count()):
        graph = graphs.nth(i)
        graph.scroll_into_view_if_needed()
        labels = [t for t in _texts(graph.locator(".textpoint, .annotation-text")) if t.strip()]
        assert len(labels) >= 2, f"graph view {i + 1} shows no node labels"
        _shot(page, f"graph-{i + 1}", graph)

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
    _shot(page, "dashboard-stopped", last)
    _shot(page, "notebook")


def _texts(locator) -> list[str]:
    """The text of each matched element (SVG text has no innerText)."""
    return locator.evaluate_all("els => els.map(e => e.textContent || '')")


def _curve_points(board) -> int:
    """Points of the longest drawn line in a dashboard."""
    return board.evaluate(
        """(el) => Math.max(0, ...Array.from(el.querySelectorAll('.scatterlayer .trace path.js-line'))
                .map(p => (p.getAttribute('d') || '').split('L').length))""")
