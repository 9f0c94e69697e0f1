"""Sphinx configuration of the book's website (tools/build_site.py runs it).

One configuration serves both languages: build_site.py stages a language's
notebooks into the source folder with `_site.json` (its language, each
page's notebook in the repository, the pages of the twin build) and passes
`-D language=en|zh_CN`. Outputs are the notebooks' stored ones, never
re-executed; a figure shows as its stored static image (SVG or PNG), and
nothing on a page loads a script from another host.

Search runs in the browser with no server: a result's snippet comes from
`_static/burnbook-search-text.js`, each chapter's own words (prose,
headings and code, not outputs) written here when the build finishes, so
the search page fetches no page (which a browser refuses from a file://
URL) and never quotes the theme's buttons. Solutions are left out of the
index and of the snippets: a search does not give the answers away.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
from pathlib import Path
from urllib.parse import quote

from docutils import nodes
from sphinx.search.zh import SearchChinese

# jieba (Chinese search) logs its dictionary loading at DEBUG to stderr.
logging.getLogger("jieba").setLevel(logging.WARNING)

# The repository readers launch chapters from (README's Binder badge).
REPOSITORY_URL = os.environ.get("BURNBOOK_SITE_REPOSITORY", "https://github.com/burnbook/burnbook")
REPOSITORY_BRANCH = os.environ.get("BURNBOOK_SITE_BRANCH", "main")
BINDERHUB_URL = "https://mybinder.org"
# `make lab` serves notebooks/ on JupyterLab's default port.
LOCAL_LAB_URL = "http://localhost:8888/lab/tree"

project = "burnbook"
author = "burnbook authors"
copyright = "burnbook authors"

extensions = ["myst_nb", "sphinx.ext.mathjax"]
root_doc = "index"
exclude_patterns = ["_build", "_mathjax", "**.ipynb_checkpoints", "_site.json", "_jieba_dict.txt"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["burnbook.css"]
html_favicon = "_static/burnbook.svg"
# The theme's mode before a reader picks one (pydata-sphinx-theme reads it
# from the context; left empty, its script logs "Got invalid theme mode").
# Light: the stored figures are drawn on white.
html_context = {"default_mode": "light"}
# Snippets come from burnbook-search.js, not from fetching each result's page.
html_show_search_summary = False

# Stored outputs only.
nb_execution_mode = "off"
# A figure output carries a static image beside its interactive HTML/widget
# bundles: the site shows the image. Widget views and JavaScript outputs are
# never rendered (they need a kernel-side or CDN-side widget manager), and no
# widget manager is loaded.
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/javascript", None),
    ("html", "image/svg+xml", 21),
    ("html", "image/png", 22),
    ("html", "image/jpeg", 23),
    ("html", "text/html", 30),
]
nb_ipywidgets_js = {}
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]

html_theme = "sphinx_book_theme"
html_title = "burnbook"
html_copy_source = True
html_theme_options = {
    "repository_url": REPOSITORY_URL,
    "repository_branch": REPOSITORY_BRANCH,
    "use_repository_button": True,
    "use_download_button": True,
    "use_source_button": False,
    "use_edit_page_button": False,
    "use_issues_button": False,
    "show_toc_level": 2,
    "home_page_in_toc": True,
    "article_header_end": ["lang-switch.html", "article-header-buttons.html"],
    # One search box, the sidebar's: pydata-sphinx-theme otherwise adds one to
    # a header bar of its own (and the article header has a search button for
    # narrow screens, where the sidebar is hidden).
    "navbar_persistent": [],
}


def _site_facts(srcdir: Path) -> dict:
    path = srcdir / "_site.json"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: build the site with tools/build_site.py, which stages it")
    return json.loads(path.read_text(encoding="utf-8"))


def _relative(pagename: str, target: str) -> str:
    """A URL from `pagename`'s page to `target`, a path relative to this build's root."""
    depth = pagename.count("/")
    return "../" * depth + target


def _page_language(app, pagename, templatename, context, doctree):
    """The links to this page in the other language (before the theme drops empty templates)."""
    facts = app.config.burnbook_site
    twins = []
    for other, pages in facts["twins"].items():
        if pagename in pages:
            twins.append({"lang": other, "name": facts["names"][other],
                          "url": _relative(pagename, f"../{other}/{pagename}.html")})
    context["bb_twins"] = twins


def _launch_buttons(app, pagename, templatename, context, doctree):
    """Binder and local JupyterLab links to the page's notebook in the repository."""
    notebook = app.config.burnbook_site["pages"].get(pagename)
    if notebook is None or "header_buttons" not in context:
        return
    context["bb_notebook"] = notebook
    org_repo = REPOSITORY_URL.rstrip("/").split("github.com/")[-1]
    binder = (f"{BINDERHUB_URL}/v2/gh/{org_repo}/{REPOSITORY_BRANCH}"
              f"?urlpath={quote('lab/tree/' + notebook, safe='/')}")
    lab_path = notebook.removeprefix("notebooks/")
    lab = f"{LOCAL_LAB_URL}/{quote(lab_path, safe='/')}"
    context["header_buttons"].append({
        "type": "group",
        "tooltip": "Launch interactive content",
        "icon": "fas fa-rocket",
        "label": "launch-buttons",
        "buttons": [
            {"type": "link", "text": "Binder", "tooltip": "Launch on Binder", "label": "launch-binder",
             "icon": "_static/images/logo_binder.svg", "url": binder},
            {"type": "link", "text": "JupyterLab", "label": "launch-jupyterlab",
             "tooltip": "Open in your JupyterLab (make lab)",
             "icon": "_static/images/logo_jupyterhub.svg", "url": lab},
        ],
    })


def _is_solution(app, docname: str) -> bool:
    return app.config.burnbook_site["pages"].get(docname, "").startswith("notebooks/solutions/")


def _no_search_for_solutions(app, env):
    """Solutions stay out of the search index (Sphinx's `nosearch` metadata)."""
    for docname in env.found_docs:
        if _is_solution(app, docname):
            env.metadata.setdefault(docname, {})["nosearch"] = True
    return []


_TEXT_BLOCKS = (nodes.paragraph, nodes.title, nodes.literal_block, nodes.term, nodes.caption,
                nodes.math_block, nodes.rubric, nodes.line)


def _inline_text(node: nodes.Node) -> str:
    """A block's text; raw HTML in it (links staged to the twin language) as its text alone."""
    if isinstance(node, nodes.Text):
        return node.astext()
    if isinstance(node, nodes.raw):
        if "html" not in node.get("format", "").split():
            return ""
        text = re.sub(r"<(script|style)\b.*?</\1\s*>", "", node.astext(), flags=re.IGNORECASE | re.DOTALL)
        return html.unescape(re.sub(r"<[^>]*>", "", text))
    if isinstance(node, (nodes.comment, nodes.system_message)):
        return ""
    return "".join(_inline_text(child) for child in node.children)


def page_text(doctree: nodes.Node) -> tuple[str, dict[str, list[int]]]:
    """A page's words as a reader sees them (prose, headings and code, not
    cell outputs), whitespace collapsed, and each section's [start, end) in
    that text by each of its ids (a search result's anchor)."""
    pieces: list[str] = []
    sections: dict[str, list[int]] = {}
    length = 0

    def add(text: str) -> None:
        nonlocal length
        text = " ".join(text.split())
        if text:
            if pieces:
                pieces.append(" ")
                length += 1
            pieces.append(text)
            length += len(text)

    def visit(node: nodes.Node) -> None:
        if isinstance(node, (nodes.comment, nodes.system_message)):
            return
        if isinstance(node, nodes.Element):
            classes = node.get("classes", [])
            if "cell_output" in classes or "no-search" in classes:
                return
        if isinstance(node, (*_TEXT_BLOCKS, nodes.raw)):
            add(_inline_text(node))
        elif isinstance(node, nodes.Text):
            add(node.astext())
        else:
            start = length + (1 if pieces else 0)
            for child in node.children:
                visit(child)
            if isinstance(node, nodes.section):
                for id_ in node["ids"]:
                    sections[id_] = [start, length]

    visit(doctree)
    return "".join(pieces), sections


def _write_search_text(app, exception):
    """`_static/burnbook-search-text.js`: every searchable page's words, for
    the search page's snippets (burnbook-search.js)."""
    if exception is not None or app.builder.format != "html":
        return
    pages = {}
    for docname in sorted(app.env.found_docs):
        if _is_solution(app, docname):
            continue
        text, sections = page_text(app.env.get_doctree(docname))
        pages[docname] = {"text": text, "sections": sections}
    payload = json.dumps(pages, ensure_ascii=False, separators=(",", ":"))
    static = Path(app.outdir) / "_static"
    static.mkdir(exist_ok=True)
    (static / "burnbook-search-text.js").write_text(f"window.BURNBOOK_SEARCH_TEXT = {payload};\n",
                                                    encoding="utf-8")


def _search_page_scripts(app, pagename, templatename, context, doctree):
    """The snippets' words and script, on the search page only."""
    if pagename == "search":
        app.add_js_file("burnbook-search-text.js", defer="defer")
        app.add_js_file("burnbook-search.js", defer="defer")


def _configure(app, config):
    facts = _site_facts(Path(app.srcdir))
    config.burnbook_site = facts
    if facts["lang"] == "zh":
        config.html_title = "burnbook 之书"
        # Sphinx indexes Chinese words only with jieba installed (the [site] extra).
        config.html_search_language = "zh"
        # The book's terms (staged from the index and the glossary) as whole words.
        terms = Path(app.srcdir) / "_jieba_dict.txt"
        if terms.exists():
            config.html_search_options = {"dict": str(terms)}
    if (Path(app.srcdir) / "_mathjax" / "mathjax" / "MathJax.js").exists():
        # MathJax 2 served from the site itself: no CDN for math either.
        config.html_static_path = [*config.html_static_path, str(Path(app.srcdir) / "_mathjax")]
        config.mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
        config.mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]],
                                              "displayMath": [["\\[", "\\]"]],
                                              "processEscapes": True,
                                              # Sphinx marks <body> tex2jax_ignore: math spans opt back in.
                                              "processClass": "math|output_area|tex2jax_process"},
                                   # jupyter-server-mathjax ships the STIX-Web fonts only.
                                   "HTML-CSS": {"availableFonts": [], "preferredFont": None,
                                                "webFont": "STIX-Web", "imageFont": None,
                                                # MathJax's never-loading test font: local() rather
                                                # than url('about:blank'), which Chrome reports as
                                                # a blocked cross-origin request.
                                                "styles": {"@font-face": {"font-family": "MathJax_Blank",
                                                                          "src": "local('MathJax_Blank')"}}}}


class _SearchChinese(SearchChinese):
    """Sphinx 9.0's Chinese search with a working stemmer in the browser.

    It ships the English Snowball stemmer's JavaScript (for Latin words) but
    names it after `language_name`, so language_data.js assigns an undefined
    `ChineseStemmer` and every search on a zh page fails.
    """

    language_name = "English"


def setup(app):
    app.add_config_value("burnbook_site", {}, "html")
    app.add_search_language(_SearchChinese)
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _page_language, priority=100)
    # After the theme's own buttons (priority 501), which it prepares first.
    app.connect("html-page-context", _launch_buttons, priority=502)
    app.connect("html-page-context", _search_page_scripts)
    app.connect("env-updated", _no_search_for_solutions)
    app.connect("build-finished", _write_search_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
