"""AttentionView in a real browser: JupyterLab driven by Chromium (Playwright).

A JupyterLab server (its own config, data and runtime folders, a generated
token, a free loopback port: `lab.py`) serves a notebook written here: one
cell builds a small two-layer, four-head `TransformerEncoder` under a
causal mask and shows `AttentionView.from_encoder(...)` for eight character
tokens; a second prints every weight as the kernel holds it. The test runs
both cells and checks in the DOM that the view drew its heatmap with the
tokens on both axes, that hovering a cell shows that cell's query token,
key token and the kernel's weight (a masked cell: weight 0.0000), that the
layer and head drop-downs switch the figure (its title, and the weight the
same cell then shows is the new layer's and head's, the mean of the heads
too), and that plotly's toolbar covers none of the figure's text. A second
test opens the view's output as a saved notebook stores it (not trusted,
no kernel running it): its static PNG shows, with pixels drawn, and no
live widget. Screenshots go to `test-artifacts/browser/attention-*.png`.

Skipped (with the reason) where playwright or /usr/bin/chromium is missing
(`make browser-deps`).
"""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pytest

from .lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, jupyter_lab, kernel_ids, shut_down_kernels

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install burnbook[notebook])")
if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium (make browser-deps: apt-get install -y chromium)",
                allow_module_level=True)

from burnbook.widgets._static import MODEBAR_PX  # noqa: E402

VIEW_CELL = '''\
import numpy as np
from burnbook import Tensor
from burnbook.backend import NdArray
from burnbook.nn.attention import generate_autoregressive_mask
from burnbook.nn.transformer import TransformerEncoderConfig, TransformerEncoderInput
from burnbook.widgets import AttentionView

NdArray.seed(0)
encoder = TransformerEncoderConfig(d_model=16, d_ff=32, n_heads=4, n_layers=2, dropout=0.0).init(backend=NdArray)
x = Tensor[NdArray, 3].from_data(np.random.default_rng(0).normal(size=(1, 8, 16)).astype(np.float32) * 3)
inp = TransformerEncoderInput(x).mask_attn(generate_autoregressive_mask(1, 8, backend=NdArray))
view = AttentionView.from_encoder(encoder, inp, "attend!?")
view
'''
WEIGHTS_CELL = '''\
import json
print("bb-attention-weights", json.dumps({"tokens": view.query_tokens, "weights": view.weights.tolist()}))
'''
MARK = "bb-attention-weights"
SERVER_START_S = 60
CELLS_S = 120          # imports, the encoder, and the kernel's first static PNG (a Chromium start)
SWITCH_S = 20          # one drop-down change, through the kernel, to the redrawn figure


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    home = tmp_path_factory.mktemp("attention-lab")
    root = home / "root"
    root.mkdir()
    cells = [{"cell_type": "code", "execution_count": None, "id": f"bb-attention-{i}", "metadata": {},
              "outputs": [], "source": source} for i, source in enumerate((VIEW_CELL, WEIGHTS_CELL))]
    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                      "language": "python"}}}
    (root / "attention.ipynb").write_text(json.dumps(nb, indent=1), encoding="utf-8")
    try:
        with jupyter_lab(root, home, SERVER_START_S) as server:
            yield {**server, "root": root}
    except AssertionError as err:   # the server did not start
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def page(lab):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def _texts(locator) -> list[str]:
    return locator.evaluate_all("els => els.map(e => e.textContent || '')")


def _open(page, lab, name: str) -> None:
    page.goto(f"{lab['url']}/lab/tree/{name}?reset&token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)


def _run_all(page, lab) -> None:
    """Run > Run All Cells once the notebook's one kernel is up and idle;
    again if the click was lost while JupyterLab settled."""
    deadline = time.monotonic() + 60
    while len(kernel_ids(lab)) != 1:
        assert time.monotonic() < deadline, "the notebook's kernel never started"
        time.sleep(0.25)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt")
    for _ in range(3):
        dialog = page.locator(".jp-Dialog")
        if dialog.count():   # "Select Kernel": its default is the notebook's own
            dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        until = time.monotonic() + 10
        while time.monotonic() < until:
            if any(t.strip() not in ("[ ]:", "") for t in _texts(prompts)):
                return
            time.sleep(0.25)
        page.keyboard.press("Escape")
    raise AssertionError("Run > Run All Cells did not start the notebook")


def _hover_text(page, view, q: int, k: int, n: int) -> str:
    """Move the pointer to the centre of cell (query q, key k) of the view's
    n x n heatmap (queries down, keys across) and return plotly's hover label."""
    plot = view.locator(".js-plotly-plot").first
    page.mouse.move(1, 1)
    area = plot.locator(".nsewdrag").first.bounding_box()   # the plot area: the heatmap's cells exactly
    page.mouse.move(area["x"] + (k + 0.5) * area["width"] / n, area["y"] + (q + 0.5) * area["height"] / n)
    label = plot.locator(".hoverlayer .hovertext").first
    label.wait_for(timeout=5_000)
    return " ".join(_texts(label.locator("text")))


def _title(view) -> str:
    return " ".join(_texts(view.locator(".js-plotly-plot .gtitle")))


def _check_clear_of_the_toolbar(page, view) -> None:
    """Hovering the figure shows plotly's toolbar in its top right corner:
    it covers no title, axis label or colour-bar text."""
    plot = view.locator(".js-plotly-plot").first
    box = plot.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    plot.locator(".modebar").first.wait_for(state="attached", timeout=10_000)
    found = plot.evaluate(
        """(el) => {
            const box = e => { const r = e.getBoundingClientRect();
                               return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
            return {bar: box(el.querySelector('.modebar')),
                    texts: Array.from(el.querySelectorAll('.infolayer text, .gtitle, .xtick text, .ytick text'))
                        .filter(t => (t.textContent || '').trim()).map(t => ({text: t.textContent, ...box(t)}))};
        }""")
    bar = found["bar"]
    assert 0 < bar["r"] - bar["l"] <= MODEBAR_PX, f"the toolbar is {bar}, wider than MODEBAR_PX"
    for t in found["texts"]:
        apart = t["r"] <= bar["l"] or bar["r"] <= t["l"] or t["b"] <= bar["t"] or bar["b"] <= t["t"]
        assert apart, f"plotly's toolbar {bar} covers {t['text']!r} {t}"
    page.mouse.move(1, 1)


def _switch(page, view, which: str, label: str, title: str) -> None:
    """Pick `label` in the layer or head drop-down; wait until the figure's title says `title`."""
    view.locator(f".bb-attention-{which} select").select_option(label=label)
    page.wait_for_function("([el, title]) => Array.from(el.querySelectorAll('.gtitle'))"
                           ".some(t => (t.textContent || '').includes(title))",
                           arg=[view.element_handle(), title], timeout=SWITCH_S * 1000)


def test_the_view_renders_hovers_and_switches(page, lab):
    try:
        _check_live(page, lab)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "attention-failure.png"))
        shutil.copy(lab["home"] / "server.log", ARTIFACTS / "attention-server.log")
        raise
    finally:
        shut_down_kernels(lab)


def _check_live(page, lab) -> None:
    _open(page, lab, "attention.ipynb")
    _run_all(page, lab)
    printed = page.locator(".jp-OutputArea-output", has_text=MARK)
    printed.first.wait_for(timeout=CELLS_S * 1000)
    kernel = json.loads(printed.first.inner_text().split(MARK, 1)[1])
    tokens, weights = kernel["tokens"], np.asarray(kernel["weights"], dtype=np.float32)
    n = len(tokens)
    assert weights.shape == (2, 4, n, n), weights.shape
    view = page.locator(".bb-attention-view").first
    view.locator(".js-plotly-plot .heatmaplayer image").first.wait_for(timeout=30_000)
    view.scroll_into_view_if_needed()
    assert "attention, layer 0, head 0" in _title(view)
    shown = [t.replace("\u2423", " ") for t in _texts(view.locator(".xtick text"))]
    assert shown == tokens and _texts(view.locator(".ytick text")) == shown, (
        f"the axes show {shown} and {_texts(view.locator('.ytick text'))}, the tokens are {tokens}")
    _check_clear_of_the_toolbar(page, view)
    page.screenshot(path=str(ARTIFACTS / "attention-notebook.png"))

    q, k = n - 2, 2        # a cell below the diagonal: a weight the query gives to an earlier key
    assert len({f"{weights[1, h, q, k]:.4f}" for h in range(4)}) > 1, "the heads agree here: pick another cell"

    def expect(layer: int, head: int | str, qq: int = q, kk: int = k) -> None:
        m = weights[layer].mean(axis=0) if head == "mean" else weights[layer, head]
        text = _hover_text(page, view, qq, kk, n)
        want = [f"query {qq} {tokens[qq]!r}", f"key {kk} {tokens[kk]!r}", f"weight {m[qq, kk]:.4f}"]
        assert all(w in text for w in want), f"layer {layer}, head {head}, cell ({qq}, {kk}): hover says " \
                                             f"{text!r}, the kernel's {want}"

    expect(0, 0)
    expect(0, 0, 1, n - 1)   # masked by the causal mask: a weight of exactly 0, shown as such
    _switch(page, view, "layer", "layer 1", "attention, layer 1, head 0")
    expect(1, 0)
    _switch(page, view, "head", "head 2", "attention, layer 1, head 2")
    expect(1, 2)
    view.screenshot(path=str(ARTIFACTS / "attention-layer1-head2.png"))
    _switch(page, view, "head", "mean of 4 heads", "attention, layer 1, mean of 4 heads")
    expect(1, "mean")
    summary = view.locator(".bb-summary").inner_text()
    assert "showing layer 1, mean of 4 heads" in summary, summary


def test_the_saved_output_shows_its_static_figure(page, lab):
    """The view's output as a notebook stores it, opened untrusted with no
    kernel running its cell: the static PNG, with pixels drawn, and no widget."""
    from burnbook.widgets import _image

    if _image.figure_png({"data": [], "layout": {"width": 20, "height": 20}}) is None:
        pytest.skip(f"no static figure renderer here: {_image.unavailable_reason()}")
    space: dict = {}
    exec(VIEW_CELL, space)   # noqa: S102 - the notebook's own cell, to store its output as Jupyter would
    bundle = space["view"]._repr_mimebundle_()
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
    assert "image/png" in data, "the view's output carries no static PNG"
    cell = {"cell_type": "code", "execution_count": 1, "id": "bb-attention-static", "metadata": {},
            "source": VIEW_CELL, "outputs": [{"output_type": "execute_result", "execution_count": 1,
                                              "data": data, "metadata": metadata}]}
    nb = {"cells": [cell], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}
    (lab["root"] / "attention-static.ipynb").write_text(json.dumps(nb, indent=1), encoding="utf-8")
    try:
        _open(page, lab, "attention-static.ipynb")
        image = page.locator(".jp-OutputArea-output img").first
        image.wait_for(timeout=30_000)
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=image.element_handle(), timeout=10_000)
        ink = image.evaluate(
            """(el) => { const c = document.createElement('canvas');
                         c.width = el.naturalWidth; c.height = el.naturalHeight;
                         const g = c.getContext('2d'); g.drawImage(el, 0, 0);
                         const d = g.getImageData(0, 0, c.width, c.height).data;
                         let dark = 0;
                         for (let i = 0; i < d.length; i += 4) if (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245) dark++;
                         return dark / (d.length / 4); }""")
        box = image.bounding_box()
        assert box["width"] > 300 and box["height"] > 200 and ink > 0.1, f"the static figure: {box}, ink {ink}"
        assert page.locator(".bb-attention-view").count() == 0, "the untrusted copy rendered the live widget"
        image.screenshot(path=str(ARTIFACTS / "attention-static.png"))
    finally:
        shut_down_kernels(lab)
