"""The book's website in a real browser: Debian's Chromium (headless) through
Playwright, on the smoke build that tests/test_site.py checks (chapters 08
and 23, en and zh, in build/site-smoke/; built here when missing or stale).

A local http.server serves the site. From the root page the test opens the
English book, types a word into the sidebar's search box, reads the
results (each with a snippet of the chapter's own words, the word
highlighted, no solution among them), follows the result for chapter 08
and sees the chapter's stored figure drawn (an image that loaded) and its
math typeset by the site's own MathJax; it switches to the Chinese twin and
searches 梯度 there too. A second test does the same from the files
themselves (file://, as `make site` tells a reader to open it), where a
browser refuses to fetch pages: search must still show snippets. No request
may leave the site (no CDN for scripts, fonts or figures) and the console
must hold no error. Screenshots go to `test-artifacts/browser/site-*.png`.

Skipped (with the reason) where playwright, the [site] extra or
/usr/bin/chromium is missing (`make browser-deps` installs Chromium).
`BB_SITE=path` opens a site built there instead (for developing the test).
"""

from __future__ import annotations

import functools
import os
import http.server
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SMOKE_OUT = ROOT / "build" / "site-smoke"
SMOKE_CHAPTERS = {"08", "23"}
CHAPTER = "08-autodiff-gradient-descent"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytest.importorskip("myst_nb", reason="the [site] extra is not installed (pip install -e '.[site]')")
if not CHROMIUM.exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium (make browser-deps: apt-get install -y chromium)",
                allow_module_level=True)

sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def site() -> Path:
    built = os.environ.get("BB_SITE")
    return Path(built) if built else build_site.build_cached(SMOKE_OUT, ["en", "zh"], SMOKE_CHAPTERS)


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def _page(browser, base: str):
    """A fresh page; (page, requests outside `base`, console errors)."""
    page = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    remote, errors = [], []
    page.on("request", lambda r: remote.append(r.url) if not r.url.startswith((base, "data:", "about:")) else None)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, remote, errors


@pytest.fixture(scope="module")
def browser_page(browser, server):
    page, remote, errors = _page(browser, server)
    yield page, remote, errors
    page.context.close()


def _search(page, term: str, chapter: str, shot: str | None = None) -> None:
    """Type `term` into the search box, submit, read the results (a snippet
    of the chapter's words under each, `term` highlighted, no solution),
    follow the result for `chapter`."""
    # The sidebar's search field opens the theme's search dialog.
    page.locator("button.search-button__button:visible").first.click()
    box = page.locator("#pst-search-dialog input[name='q']")
    box.wait_for()
    box.fill(term)
    box.press("Enter")
    page.wait_for_url("**/search.html?q=*")
    result = page.locator(f"#search-results li:has(a[href*='{chapter}'])").first
    result.wait_for()
    # the search finished: Sphinx fills its status line last
    page.wait_for_function("() => document.querySelector('#search-results p.search-summary')"
                           "?.innerText.trim().length > 0")
    snippet = result.locator("p.context")
    snippet.wait_for()
    text = snippet.inner_text()
    assert term.lower() in text.lower(), f"the snippet of {chapter} for {term!r} does not show it: {text!r}"
    assert result.locator("span.highlighted").count() >= 1, f"{term!r} is not highlighted in {text!r}"
    for furniture in ("Light", "Dark", "Contents", "Ctrl"):
        assert furniture not in text.split(), f"the snippet quotes the theme's {furniture!r}: {text!r}"
    links = page.locator("#search-results li a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert not [h for h in links if "solutions/" in h], f"search offers solutions: {links}"
    if shot:
        page.screenshot(path=str(ARTIFACTS / shot))
    result.locator("a").first.click()
    page.wait_for_url(f"**/{chapter}.html*")


def _figure_drawn(page) -> int:
    """How many stored figures on the page are images that loaded and show."""
    images = page.locator(".cell_output img")
    images.first.wait_for()
    drawn = 0
    for i in range(images.count()):
        img = images.nth(i)
        img.scroll_into_view_if_needed()
        loaded = img.evaluate("el => el.complete && el.naturalWidth > 0")
        box = img.bounding_box()
        drawn += bool(loaded and box and box["width"] > 50 and box["height"] > 50)
    return drawn


def test_search_follow_a_result_and_see_its_figure(browser_page, server):
    page, remote, errors = browser_page
    page.goto(f"{server}/index.html")
    page.screenshot(path=str(ARTIFACTS / "site-root.png"))
    page.locator("a[hreflang='en']").click()
    page.wait_for_url("**/en/index.html")

    _search(page, "descent", CHAPTER, shot="site-en-search.png")
    assert page.locator("h1").first.inner_text().startswith("Autodiff and Gradient Descent")
    assert _figure_drawn(page) >= 1, "chapter 08's stored figure is not drawn"
    page.locator("mjx-container, .MathJax, .MathJax_CHTML").first.wait_for(state="attached")
    page.screenshot(path=str(ARTIFACTS / "site-en-08.png"))

    page.locator("a.bb-lang-switch").first.click()
    page.wait_for_url(f"**/zh/{CHAPTER}.html")
    assert page.locator("h1").first.inner_text().startswith("自动微分与梯度下降")
    page.goto(f"{server}/zh/index.html")
    _search(page, "梯度", CHAPTER)
    assert _figure_drawn(page) >= 1, "zh chapter 08's stored figure is not drawn"
    page.screenshot(path=str(ARTIFACTS / "site-zh-08.png"))

    hosts = sorted({urlsplit(url).netloc for url in remote})
    assert not remote, f"the site fetched from other hosts: {hosts} ({remote[:5]})"
    assert not errors, f"the browser console reported errors: {errors[:5]}"


def test_search_works_opened_from_the_file(browser, site):
    """`make site` says to open build/site/index.html: from file:// a browser
    fetches no page, so snippets must come with the site."""
    base = site.resolve().as_uri()
    page, remote, errors = _page(browser, base)
    try:
        page.goto(f"{base}/index.html")
        page.locator("a[hreflang='en']").click()
        page.wait_for_url("**/en/index.html")
        _search(page, "descent", CHAPTER, shot="site-file-search.png")
        assert page.locator("h1").first.inner_text().startswith("Autodiff and Gradient Descent")
        page.goto(f"{base}/zh/index.html")
        _search(page, "梯度", CHAPTER)
    finally:
        page.context.close()
    assert not remote, f"the site opened from the file fetched elsewhere: {remote[:5]}"
    assert not errors, f"the browser console reported errors: {errors[:5]}"
