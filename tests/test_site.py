"""The book's website (`make site`), checked on a smoke build of two chapters.

tools/build_site.py builds chapters 08 and 23 (they store figures) with their
solutions, en and zh, into build/site-smoke/ (rebuilt only when a notebook,
site/ or the script changed; tests/browser/test_site_browser.py reuses it).
The pages must exist, the sidebar must follow the index's reading order,
search must index English and Chinese words and leave the solutions out,
its snippets must be the chapters' own words (shipped with the site, so
search works from a file:// URL), every page must have one search box and
a valid theme mode, the root page must wear the theme's stylesheet, every
language switch and cross-language link must land on the twin page, launch
buttons must point at the chapter's notebook in the repository, and each
stored static figure must show as an image, with no script from another
host on any page. tests/browser/test_site_browser.py searches in a browser,
served and from the file.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("myst_nb", reason="the [site] extra is not installed (pip install -e '.[site]')")
bs4 = pytest.importorskip("bs4", reason="the [site] extra is not installed (pip install -e '.[site]')")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402

SMOKE_CHAPTERS = {"08", "23"}
SMOKE_OUT = ROOT / "build" / "site-smoke"
STATIC_FIGURE = ("image/svg+xml", "image/png")
BOOK_DIR = build_site.BOOK


@pytest.fixture(scope="module")
def site() -> Path:
    return build_site.build_cached(SMOKE_OUT, ["en", "zh"], SMOKE_CHAPTERS)


@functools.lru_cache(maxsize=None)
def soup(path: Path) -> bs4.BeautifulSoup:
    return bs4.BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def chapters(lang: str) -> list[Path]:
    return [BOOK_DIR / p for p in build_site.chapter_sources(lang, SMOKE_CHAPTERS)]


def search_index(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def docs_with(index: dict, word: str) -> set[str]:
    """Pages whose text or headings hold `word` (Sphinx keeps the two apart)."""
    found = set()
    for table in (index["terms"], index["titleterms"]):
        hits = table.get(word, [])
        found |= {index["docnames"][i] for i in ([hits] if isinstance(hits, int) else hits)}
    return found


def search_text(site: Path, lang: str) -> dict:
    """What the search page quotes snippets from (site/conf.py writes it)."""
    text = (site / lang / "_static" / "burnbook-search-text.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("=") + 1:].strip().rstrip(";"))


def test_every_page_is_built(site):
    root = soup(site / "index.html")
    assert {a["href"] for a in root.find_all("a")} == {"en/index.html", "zh/index.html"}
    solutions = sorted((BOOK_DIR / "solutions").glob("[0-9][0-9]-*.ipynb"))
    for lang in ("en", "zh"):
        expected = ["index.html", "search.html", "searchindex.js"]
        expected += [f"{p.stem}.html" for p in chapters(lang)]
        expected += [f"solutions/{p.stem}.html" for p in solutions if p.name[:2] in SMOKE_CHAPTERS]
        missing = [name for name in expected if not (site / lang / name).is_file()]
        assert not missing, f"{lang}: pages missing from the smoke site: {missing}"
        title = soup(site / lang / "08-autodiff-gradient-descent.html").find("h1").get_text(strip=True)
        assert title.startswith({"en": "Autodiff and Gradient Descent", "zh": "自动微分与梯度下降"}[lang]), title


def test_root_page_wears_the_theme(site):
    """The landing page is styled by the theme's own stylesheet (present in
    the site) and says how many chapters each language has."""
    root = soup(site / "index.html")
    sheets = [link["href"] for link in root.find_all("link", rel="stylesheet")]
    assert any(href.endswith("pydata-sphinx-theme.css") for href in sheets), sheets
    missing = [href for href in sheets if not (site / href).is_file()]
    assert not missing, f"the root page links stylesheets the site lacks: {missing}"
    cards = {a["hreflang"]: a.get_text(" ", strip=True) for a in root.select("a.bb-language")}
    assert set(cards) == {"en", "zh"}
    assert "2 chapters" in cards["en"] and "2 章" in cards["zh"], cards


def test_one_search_box_and_a_theme_mode_on_every_page(site):
    """The sidebar's search field only (no header bar with a second one), and
    a default colour mode, so the theme's script finds a valid one."""
    for page in sorted(site.glob("*/**/*.html")):
        if "_static" in page.parts:
            continue
        html = soup(page)
        fields = html.select("button.search-button-field")
        assert len(fields) == 1, f"{page.relative_to(site)}: {len(fields)} search boxes"
        assert html.select_one(".navbar-persistent--container, .navbar-persistent--mobile") is None
        assert html.find("html")["data-theme"] == "light", page.relative_to(site)
        assert 'localStorage.getItem("mode") || ""' not in page.read_text(encoding="utf-8")


def test_the_site_holds_no_doctrees(site):
    assert not list(site.rglob(".doctrees")), "Sphinx's pickled doctrees were published with the site"


def test_sidebar_follows_the_index_reading_order(site):
    index = json.loads((BOOK_DIR / "00-index.ipynb").read_text(encoding="utf-8"))
    text = "".join("".join(c["source"]) for c in index["cells"])
    for lang in ("en", "zh"):
        order = [m.group(1) for m in re.finditer(rf"\]\({lang}/(\d\d-[\w-]+)\.ipynb\)", text)
                 if m.group(1)[:2] in SMOKE_CHAPTERS]
        nav = soup(site / lang / "index.html").select_one("nav.bd-docs-nav")
        links = [a["href"].removesuffix(".html") for a in nav.find_all("a", href=True)]
        chapters_in_nav = [link for link in links if re.fullmatch(r"\d\d-[\w-]+", link)]
        assert chapters_in_nav == order, f"{lang} sidebar {links} is not the index's order {order}"


def test_search_indexes_english_and_chinese(site):
    en = search_index(site / "en" / "searchindex.js")
    zh = search_index(site / "zh" / "searchindex.js")
    chapter = "08-autodiff-gradient-descent"
    assert chapter in docs_with(en, "descent"), "English search cannot find 'descent' in chapter 08"
    # Chinese needs jieba to cut words; the book's terms (from the glossary) stay whole.
    assert chapter in docs_with(zh, "梯度"), "Chinese search cannot find 梯度 in chapter 08"
    assert chapter in docs_with(zh, "自动微分"), "自动微分 is not indexed as one word"
    assert chapter not in docs_with(en, "梯度")


def test_search_leaves_the_solutions_out(site):
    """A solution page is never a search result: it would give the answers away."""
    for lang, word in (("en", "descent"), ("zh", "梯度")):
        index = search_index(site / lang / "searchindex.js")
        solutions = {i for i, d in enumerate(index["docnames"]) if d.startswith("solutions/")}
        assert solutions, "the smoke site has no solutions"
        assert docs_with(index, word), f"{lang}: {word!r} finds nothing"
        for table in ("terms", "titleterms"):
            for term, hits in index[table].items():
                hits = {hits} if isinstance(hits, int) else set(hits)
                assert not hits & solutions, f"{lang}: {term!r} finds a solution page"
        titles = {index["docnames"][hit[0]] for hits in index["alltitles"].values() for hit in hits}
        assert not any(d.startswith("solutions/") for d in titles), f"{lang}: solution titles are searchable"
        assert not any(d.startswith("solutions/") for d in search_text(site, lang))


def test_search_snippets_are_the_chapters_own_words(site):
    """Each searchable page's words ship with the site (no fetch: a file://
    page may not fetch): prose and code, not the theme's buttons; each
    section a result links to is found by its anchor."""
    for lang in ("en", "zh"):
        pages = search_text(site, lang)
        index = search_index(site / lang / "searchindex.js")
        assert set(pages) == {d for d in index["docnames"] if not d.startswith("solutions/")}
        for docname, page in pages.items():   # raw HTML (the index's links to the twin pages) as text
            assert not re.search(r"<a\b|href=|hreflang", page["text"]), f"{lang}/{docname} quotes HTML markup"
        for notebook in chapters(lang):
            nb = json.loads(notebook.read_text(encoding="utf-8"))
            first = "".join(nb["cells"][0]["source"]).split("\n\n")[1]
            words = " ".join(first.replace("`", "").split())[:60]
            page = pages[notebook.stem]
            assert words in page["text"], f"{lang}/{notebook.stem}: {words!r} not in its search text"
            for furniture in ("Light Dark", "System Settings", "Ctrl+K", "Contents"):
                assert furniture not in page["text"], f"{lang}/{notebook.stem} quotes {furniture!r}"
            for anchors in index["alltitles"].values():
                for doc, anchor in anchors:
                    if index["docnames"][doc] == notebook.stem and anchor:
                        start, end = page["sections"][anchor]
                        assert 0 <= start < end <= len(page["text"])
        search = (site / lang / "search.html").read_text(encoding="utf-8")
        assert "burnbook-search-text.js" in search and "burnbook-search.js" in search
        assert "SHOW_SEARCH_SUMMARY: false" in (site / lang / "_static" / "documentation_options.js").read_text()


def test_jieba_builds_its_dictionary_quietly():
    """site/conf.py quiets jieba's DEBUG log ("Building prefix dict ...") on stderr."""
    probe = ("import runpy, jieba; runpy.run_path('site/conf.py'); jieba.initialize()")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", f"jieba wrote to stderr: {result.stderr[:500]}"


def test_language_switch_reaches_the_twin_page(site):
    checked = 0
    for lang, other in (("en", "zh"), ("zh", "en")):
        for docname in search_index(site / lang / "searchindex.js")["docnames"]:
            page = site / lang / f"{docname}.html"
            switch = soup(page).select_one("a.bb-lang-switch")
            rel = page.relative_to(site / lang)
            assert switch is not None, f"{lang}/{rel} has no language switch"
            target = (page.parent / switch["href"]).resolve()
            assert target == (site / other / rel).resolve(), f"{lang}/{rel} switches to {switch['href']}"
            assert target.is_file(), f"{lang}/{rel}: switch target {target} does not exist"
            back = soup(target).select_one("a.bb-lang-switch")
            assert (target.parent / back["href"]).resolve() == page.resolve()
            checked += 1
    assert checked >= 8


def test_index_links_both_languages(site):
    for lang, other in (("en", "zh"), ("zh", "en")):
        page = site / lang / "index.html"
        links = soup(page).select("article a[href]")
        hrefs = {a["href"].split("#")[0] for a in links if not a["href"].startswith(("http", "#"))}
        for number in SMOKE_CHAPTERS:
            local = [h for h in hrefs if h.startswith(number)]
            twin = [h for h in hrefs if h.startswith(f"../{other}/{number}")]
            assert local and twin, f"{lang}/index.html does not link chapter {number} in both languages: {hrefs}"
            for href in local + twin:
                assert (page.parent / href).resolve().is_file(), f"{lang}/index.html links missing {href}"


def test_launch_buttons_open_the_chapter_notebook(site):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    badge = re.search(r"\((https://mybinder\.org/v2/gh/[^?]+)\?urlpath=", readme).group(1)
    for lang in ("en", "zh"):
        page = soup(site / lang / "23-seeing-inside.html")
        binder = page.select_one("a.btn-launch-binder")["href"]
        base, query = binder.split("?", 1)
        assert base == badge, f"Binder link {base} differs from README's badge {badge}"
        notebook = parse_qs(query)["urlpath"][0].removeprefix("lab/tree/")
        assert notebook == f"notebooks/{lang}/23-seeing-inside.ipynb"
        assert (ROOT / notebook).is_file()
        lab = urlsplit(page.select_one("a.btn-launch-jupyterlab")["href"])
        assert (ROOT / "notebooks" / lab.path.removeprefix("/lab/tree/")).is_file(), lab.path


def test_stored_figures_show_as_images_and_nothing_loads_a_cdn(site):
    figures = 0
    for lang in ("en", "zh"):
        for notebook in chapters(lang):
            nb = json.loads(notebook.read_text(encoding="utf-8"))
            stored = sum(1 for c in nb["cells"] for o in c.get("outputs", [])
                         if any(m in o.get("data", {}) for m in STATIC_FIGURE))
            page = site / lang / f"{notebook.stem}.html"
            shown = [img for img in soup(page).select(".cell_output img")
                     if (page.parent / img["src"]).is_file()]
            assert len(shown) >= stored, f"{lang}/{page.name}: {stored} stored figures, {len(shown)} shown"
            figures += len(shown)
    assert figures > 0, "chapters 08 and 23 store no static figure (image/svg+xml or image/png) to show"
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "cdn." not in text and "unpkg.com" not in text, f"{page} references a CDN"
        remote = [s["src"] for s in soup(page).find_all("script", src=True) if "//" in s["src"]]
        assert not remote, f"{page} loads scripts from another host: {remote}"


def test_unknown_chapter_is_named():
    with pytest.raises(build_site.SiteError, match=r"notebooks/en/.*\['99'\]"):
        build_site.plan(["en"], {"99"}, solutions=True)
