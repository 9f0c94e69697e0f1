"""The book as a reader first opens it: a fresh clone in JupyterLab.

A JupyterLab server with a fresh config and data folder (so no notebook is
trusted) serves a copy of notebooks/ as it is stored. Chromium opens

- chapters 07 and 23 (en), not run: every stored figure is visible (a
  PNG, or JupyterLab's own plotly rendering) with pixels drawn, although
  no script of the notebook runs and nothing is fetched from a CDN;
- a Chinese chapter: its text renders in a CJK font, not as boxes (tofu),
  with a screenshot in test-artifacts/browser/;
- the index: it opens, and stays, without unsaved changes once its kernel
  has started.

Skipped where playwright or /usr/bin/chromium is missing (`make browser-deps`).
"""

from __future__ import annotations

import json
import shutil
import time

import pytest

from .lab import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, jupyter_lab, kernel_ids, shut_down_kernels

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install burnbook[notebook])")
if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium (make browser-deps: apt-get install -y chromium)",
                allow_module_level=True)

BOOK = ROOT / "notebooks"
FRESH = ["en/07-autodiff.ipynb", "en/23-seeing-inside.ipynb"]
ZH = "zh/07-autodiff.ipynb"
FIGURE_MIMES = ("image/png", "application/vnd.plotly.v1+json")


def stored_figures(path: str) -> int:
    """How many outputs of the stored notebook carry a figure."""
    nb = json.loads((BOOK / path).read_text(encoding="utf-8"))
    return sum(1 for cell in nb["cells"] if cell["cell_type"] == "code"
               for out in cell.get("outputs", []) if any(m in out.get("data", {}) for m in FIGURE_MIMES))


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    home = tmp_path_factory.mktemp("book")
    root = home / "root"
    shutil.copytree(BOOK, root, ignore=shutil.ignore_patterns("conftest.py", "__pycache__", ".ipynb_checkpoints"))
    try:
        with jupyter_lab(root, home, 60) as server:
            yield server
    except AssertionError as err:   # the server did not start
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def page(book):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def _open(page, book, path: str) -> None:
    # `reset`: a fresh workspace, so the chapters opened before do not reopen beside it.
    page.goto(f"{book['url']}/lab/tree/{path}?reset&token={book['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)


@pytest.mark.parametrize("path", FRESH)
def test_a_fresh_chapter_shows_its_figures(page, book, path):
    expected = stored_figures(path)
    assert expected >= 1, f"{path} stores no figure output"
    _open(page, book, path)
    # Nothing in it is trusted yet: JupyterLab runs no script of the notebook.
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output .js-plotly-plot').length >= n",
        arg=expected, timeout=30_000)
    figures = page.evaluate(
        """() => Array.from(document.querySelectorAll(
                 '.jp-OutputArea-output img, .jp-OutputArea-output .js-plotly-plot')).map(el => {
            const r = el.getBoundingClientRect();
            let ink = null;
            if (el.tagName === 'IMG' && el.complete && el.naturalWidth > 0) {
                // Share of the image's pixels that are not white: a blank image has none.
                const c = document.createElement('canvas');
                c.width = el.naturalWidth; c.height = el.naturalHeight;
                const g = c.getContext('2d');
                g.drawImage(el, 0, 0);
                const d = g.getImageData(0, 0, c.width, c.height).data;
                let dark = 0;
                for (let i = 0; i < d.length; i += 4) if (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245) dark++;
                ink = dark / (d.length / 4);
            } else if (el.tagName !== 'IMG') {
                ink = el.querySelectorAll('.main-svg path, .main-svg text').length > 10 ? 1 : 0;
            }
            return {tag: el.tagName, w: r.width, h: r.height, ink,
                    scripts: el.closest('.jp-OutputArea-output').querySelectorAll('script').length};
        })""")
    name = path.replace("/", "-").removesuffix(".ipynb")
    page.screenshot(path=str(ARTIFACTS / f"fresh-{name}.png"), full_page=False)
    assert len(figures) >= expected, f"{path}: {len(figures)} of {expected} stored figures are shown"
    for k, fig in enumerate(figures):
        assert fig["w"] > 100 and fig["h"] > 100, f"{path}: figure {k + 1} is {fig['w']}x{fig['h']} px"
        assert fig["ink"] is not None and fig["ink"] > 0.005, f"{path}: figure {k + 1} is blank: {fig}"
        assert fig["scripts"] == 0, f"{path}: figure {k + 1} comes with a script"
    shut_down_kernels(book)


def test_chinese_renders_in_a_cjk_font(page, book):
    """Two different Chinese characters drawn in the notebook's font give
    different glyphs (without a CJK font both are the same empty box)."""
    _open(page, book, ZH)
    heading = page.locator(".jp-MarkdownOutput h1").first
    heading.wait_for()
    text = heading.inner_text()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text), f"{ZH}: its title {text!r} has no Chinese"
    glyphs = heading.evaluate(
        """(el) => {
            const font = getComputedStyle(el).fontSize + ' ' + getComputedStyle(el).fontFamily;
            const draw = ch => {
                const c = document.createElement('canvas'); c.width = 64; c.height = 64;
                const g = c.getContext('2d'); g.font = font.replace(/^[\\d.]+px/, '48px');
                g.fillStyle = '#fff'; g.fillRect(0, 0, 64, 64); g.fillStyle = '#000'; g.fillText(ch, 4, 52);
                return Array.from(g.getImageData(0, 0, 64, 64).data.filter((_, i) => i % 4 === 0));
            };
            const a = draw('\u8bad'), b = draw('\u7ec3'), box = draw('\\u{10FFFD}');
            const same = (x, y) => x.every((v, i) => v === y[i]);
            return {font, differ: !same(a, b), aInk: a.filter(v => v < 128).length,
                    likeMissing: same(a, box)};
        }""")
    heading.screenshot(path=str(ARTIFACTS / "zh-title.png"))
    page.screenshot(path=str(ARTIFACTS / "zh-chapter.png"))
    assert glyphs["aInk"] > 20, f"no ink drawn for a Chinese character: {glyphs}"
    assert glyphs["differ"] and not glyphs["likeMissing"], f"Chinese renders as boxes (tofu): {glyphs}"
    shut_down_kernels(book)


def test_the_index_opens_without_unsaved_changes(page, book):
    _open(page, book, "00-index.ipynb")
    # The kernel starting is what used to mark it changed (language_info):
    # wait until one kernel is up and idle, then a little longer.
    deadline = time.monotonic() + 60
    while not kernel_ids(book):
        assert time.monotonic() < deadline, "the index's kernel never started"
        time.sleep(0.25)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="00-index.ipynb").first
    # JupyterLab may flag a document for a moment while it loads; a real
    # change (what the kernel's start used to write) stays. Clean for 3 s in a row passes.
    clean_since, deadline = None, time.monotonic() + 20
    while time.monotonic() < deadline:
        dirty = "jp-mod-dirty" in (tab.get_attribute("class") or "")
        clean_since = None if dirty else (clean_since or time.monotonic())
        if clean_since and time.monotonic() - clean_since >= 3:
            break
        time.sleep(0.25)
    page.screenshot(path=str(ARTIFACTS / "index.png"))
    assert clean_since and time.monotonic() - clean_since >= 3, "the index opens with unsaved changes"
    shut_down_kernels(book)
