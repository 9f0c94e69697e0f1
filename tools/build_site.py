"""Build the book's static website: `make site` (all chapters) or a smoke build.

Each language is its own Sphinx + myst-nb build of the notebooks' stored
outputs (never executed): `<out>/en/` and `<out>/zh/`, beside a root
`index.html` that links both, styled by the theme's own stylesheet. Every
page links its twin in the other language (site/conf.py adds the switch
and the launch buttons). The site works opened from disk (file://), search
included, or served by any static server (`python -m http.server -d
build/site`); Sphinx's doctrees stay beside the staged sources, out of the
site.

Sphinx reads a staged copy of the notebooks, `<out>-src/<lang>/`, laid out
as the site is: `index.ipynb` (the book's 00-index, with the sidebar's
toctrees appended in reading order), one page per chapter, and
`solutions/`. Staging also

- rewrites links between notebooks to where the target now lives: a page of
  the same build, a page of the twin build (a plain relative URL), or, for a
  notebook left out of a smoke build, the link's text alone;
- drops any `text/html` output that loads a script from another host (a
  figure stored before it had a static image), so the page shows the
  output's static image or text instead and never reaches a CDN.

Usage: python tools/build_site.py [--out build/site] [--chapters 07,23]
       [--langs en,zh] [--no-solutions]
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "notebooks"
CONF_DIR = ROOT / "site"
LANGS = ("en", "zh")
LANG_NAMES = {"en": "English", "zh": "中文"}
SPHINX_LANGUAGE = {"en": "en", "zh": "zh_CN"}
MORE_CAPTION = {"en": "More chapters", "zh": "更多章节"}
SOLUTIONS_CAPTION = {"en": "Exercise solutions", "zh": "练习解答"}

# A Markdown link or image whose target is a relative path (no scheme, no
# leading slash or #): group 1 is `[text]` with its `!`, group 2 the target.
LINK = re.compile(r"(!?\[(?:[^\]\\]|\\.)*\])\((?![a-zA-Z][a-zA-Z0-9+.-]*:|/|#)([^)\s]+)\)")
EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//", re.IGNORECASE)
INDEX_SECTION = re.compile(r"^##\s+(.+?)\s*$", re.MULTILINE)


class SiteError(RuntimeError):
    """The book cannot be staged or built as asked (names the file or option)."""


@dataclass
class Page:
    """One notebook of the book and where it lives in one language's build."""

    source: PurePosixPath          # path under notebooks/, e.g. en/07-autodiff.ipynb
    docname: str                   # Sphinx docname in the build, e.g. 07-autodiff


@dataclass
class Build:
    """What one language's site holds."""

    lang: str
    pages: dict[PurePosixPath, Page] = field(default_factory=dict)

    def docname(self, source: PurePosixPath) -> str | None:
        page = self.pages.get(source)
        return page.docname if page else None


def chapter_sources(lang: str, numbers: set[str] | None) -> list[PurePosixPath]:
    """The chapters of one language in file order, optionally only some numbers."""
    paths = sorted((BOOK / lang).glob("[0-9][0-9]-*.ipynb"))
    return [PurePosixPath(lang, p.name) for p in paths if numbers is None or p.name[:2] in numbers]


def plan(langs: list[str], numbers: set[str] | None, solutions: bool) -> dict[str, Build]:
    """Which notebook becomes which page in each language's build."""
    builds = {}
    solution_sources = []
    if solutions and (BOOK / "solutions").is_dir():
        solution_sources = [PurePosixPath("solutions", p.name)
                            for p in sorted((BOOK / "solutions").glob("[0-9][0-9]-*.ipynb"))
                            if numbers is None or p.name[:2] in numbers]
    for lang in langs:
        build = Build(lang)
        build.pages[PurePosixPath("00-index.ipynb")] = Page(PurePosixPath("00-index.ipynb"), "index")
        for source in chapter_sources(lang, numbers):
            build.pages[source] = Page(source, source.stem)
        for source in solution_sources:
            build.pages[source] = Page(source, f"solutions/{source.stem}")
        if len(build.pages) == 1:
            raise SiteError(f"no chapter of notebooks/{lang}/ matches --chapters {sorted(numbers or [])}")
        builds[lang] = build
    return builds


def _relative_url(from_doc: str, to_path: str) -> str:
    """A URL from the page of `from_doc` to `to_path` (both relative to the build root)."""
    return os.path.relpath(to_path, start=str(PurePosixPath(from_doc).parent) or ".").replace(os.sep, "/")


def rewrite_links(text: str, page: Page, build: Build, builds: dict[str, Build]) -> str:
    """Point each relative link of a markdown cell at where its target lives on the site."""

    def replace(match: re.Match) -> str:
        label, target = match.group(1), match.group(2)
        path, _, anchor = target.partition("#")
        if not path.endswith(".ipynb"):
            return match.group(0)
        resolved = PurePosixPath(os.path.normpath(str(page.source.parent / path)).replace(os.sep, "/"))
        suffix = f"#{anchor}" if anchor else ""
        if (docname := build.docname(resolved)) is not None:
            return f"{label}({_relative_url(page.docname, docname + '.ipynb')}{suffix})"
        for other in builds.values():
            if other is not build and (docname := other.docname(resolved)) is not None:
                # Raw HTML: Sphinx would read a Markdown link as a cross-reference.
                url = _relative_url(page.docname, f"../{other.lang}/{docname}.html")
                text = html.escape(label[1:-1], quote=False)
                return f'<a href="{html.escape(url + suffix)}" hreflang="{other.lang}">{text}</a>'

        return label[1:-1] if not label.startswith("!") else ""

    return LINK.sub(replace, text)


def _static_outputs(cell: dict) -> None:
    """Drop `text/html` outputs that fetch a script from another host."""
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        html = data.get("text/html")
        if html is not None and EXTERNAL_SCRIPT.search("".join(html) if isinstance(html, list) else html):
            del data["text/html"]


def _index_toctrees(index: dict, build: Build) -> str:
    """Hidden toctrees, one per `## ` section of the index, in its link order."""
    groups: list[tuple[str, list[str]]] = []
    listed: set[str] = set()
    for cell in index["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        heading = INDEX_SECTION.search(text)
        docs = []
        for match in LINK.finditer(text):
            path = PurePosixPath(os.path.normpath(match.group(2).partition("#")[0]).replace(os.sep, "/"))
            docname = build.docname(path)
            if docname and docname != "index" and docname not in listed and path.parts[0] == build.lang:
                docs.append(docname)
                listed.add(docname)
        if heading and docs:
            title = heading.group(1)
            en, _, zh = title.partition(" · ")
            groups.append((zh.strip() if build.lang == "zh" and zh else en.strip(), docs))
    chapters = [p.docname for p in build.pages.values() if p.source.parts[0] == build.lang]
    unlisted = [d for d in chapters if d not in listed]
    if unlisted:
        groups.append((MORE_CAPTION[build.lang], unlisted))
    solutions = [p.docname for p in build.pages.values() if p.source.parts[0] == "solutions"]
    if solutions:
        groups.append((SOLUTIONS_CAPTION[build.lang], solutions))
    blocks = []
    for caption, docs in groups:
        body = "\n".join(docs)
        blocks.append(f"```{{toctree}}\n:hidden:\n:maxdepth: 1\n:caption: {caption}\n\n{body}\n```")
    return "\n\n".join(blocks)


def stage(build: Build, builds: dict[str, Build], src: Path) -> None:
    """Write the staged notebooks of one language and the page facts conf.py reads."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    for page in build.pages.values():
        path = BOOK / page.source
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SiteError(f"cannot read notebook {path}: {exc}") from exc
        toctrees = _index_toctrees(nb, build) if page.docname == "index" else None
        nb.get("metadata", {}).pop("widgets", None)  # no widget manager script on the page
        for cell in nb.get("cells", []):
            if cell.get("cell_type") == "markdown":
                cell["source"] = rewrite_links("".join(cell["source"]), page, build, builds)
            _static_outputs(cell)
        if page.docname == "index":
            nb["cells"].append({"cell_type": "markdown", "id": "burnbook-site-toctree", "metadata": {},
                                "source": toctrees})
        out = src / f"{page.docname}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")
    others = {o.lang: sorted(p.docname for p in o.pages.values()) for o in builds.values() if o is not build}
    facts = {
        "lang": build.lang,
        "pages": {p.docname: str(PurePosixPath("notebooks") / p.source) for p in build.pages.values()},
        "twins": others,
        "names": LANG_NAMES,
    }
    (src / "_site.json").write_text(json.dumps(facts, ensure_ascii=False, indent=1), encoding="utf-8")
    if build.lang == "zh":
        (src / "_jieba_dict.txt").write_text("".join(f"{term} 50 n\n" for term in book_terms()),
                                             encoding="utf-8")
    _stage_mathjax(src)


def book_terms() -> list[str]:
    """The book's Chinese terms, so search finds each as one word (jieba's user dictionary).

    They are the zh chapter titles of the index's links and the 中文 column
    of the terms table in notebooks/zh/GLOSSARY.md, where it exists.
    """
    cells = json.loads((BOOK / "00-index.ipynb").read_text(encoding="utf-8"))["cells"]
    names = [m.group(1)[1:-1] for c in cells for m in LINK.finditer("".join(c["source"]))]
    glossary = BOOK / "zh" / "GLOSSARY.md"
    if glossary.exists():
        for line in glossary.read_text(encoding="utf-8").splitlines():
            columns = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|") and len(columns) >= 2:
                names.append(columns[1])
    return sorted({t for name in names for t in re.findall(r"[\u4e00-\u9fff]{2,}", name)})


def _stage_mathjax(src: Path) -> None:
    """A local MathJax 2 (jupyter-server-mathjax's copy) for offline math, when installed."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(static, src / "_mathjax" / "mathjax",
                    ignore=shutil.ignore_patterns("localization", "*.md", "test"))


def sphinx(src: Path, out: Path, lang: str, quiet: bool) -> None:
    """One Sphinx html build of a staged language (its doctrees beside `src`, not in the site)."""
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(CONF_DIR), "-E", "-n",
           "-d", str(src.parent / f".doctrees-{lang}"),
           "-D", f"language={SPHINX_LANGUAGE[lang]}", str(src), str(out)]
    if quiet:
        cmd.insert(3, "-q")
    env = dict(os.environ, PYTHONHASHSEED="0")
    result = subprocess.run(cmd, env=env)
    if result.returncode != 0:
        raise SiteError(f"sphinx-build for {lang} failed (exit {result.returncode}): {' '.join(cmd)}")


# The root page, in the theme's own stylesheet (that of the first language
# built) and colours, light or dark as the reader last chose on the site.
ROOT_PAGE = """<!DOCTYPE html>
<html lang="en" data-theme="light">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>burnbook: the book · 目录</title>
<script>
try {{ document.documentElement.dataset.theme = localStorage.getItem("theme") || "light"; }} catch (e) {{}}
</script>
<link rel="icon" href="{static}/burnbook.svg">
<link rel="stylesheet" href="{static}/styles/theme.css">
<link rel="stylesheet" href="{static}/styles/pydata-sphinx-theme.css">
<style>
body {{ background: var(--pst-color-background); color: var(--pst-color-text-base); }}
main.bb-landing {{ max-width: 46rem; margin: 0 auto; padding: 4rem 1.5rem; }}
.bb-landing h1 {{ font-size: 2.6rem; margin-bottom: 1.5rem; }}
.bb-landing .bb-lead {{ font-size: 1.15rem; line-height: 1.6; margin-bottom: .6rem; }}
.bb-languages {{ display: grid; grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr)); gap: 1.25rem;
  margin: 2.5rem 0; }}
a.bb-language {{ display: block; padding: 1.4rem 1.6rem; border: 1px solid var(--pst-color-border);
  border-radius: .5rem; background: var(--pst-color-surface); color: var(--pst-color-text-base);
  text-decoration: none; box-shadow: 0 .1rem .4rem var(--pst-color-shadow); }}
a.bb-language:hover {{ border-color: var(--pst-color-primary); }}
.bb-language .bb-name {{ display: block; font-size: 1.6rem; font-weight: 600; color: var(--pst-color-primary); }}
.bb-language .bb-what {{ display: block; margin-top: .4rem; color: var(--pst-color-text-muted); }}
.bb-landing .bb-note {{ color: var(--pst-color-text-muted); font-size: .95rem; }}
</style>
</head>
<body>
<main class="bb-landing">
<h1>burnbook: the book · 目录</h1>
<p class="bb-lead" lang="en">The Burn Book, re-created in Python as runnable notebooks, one per chapter,
in reading order.</p>
<p class="bb-lead" lang="zh">Burn Book 的 Python 版本：每章一个可运行的 notebook，按阅读顺序排列。</p>
<nav class="bb-languages" aria-label="Languages">
{links}
</nav>
<p class="bb-note" lang="en">Every page links its twin in the other language and opens its notebook
on Binder or in your own JupyterLab (<code>make lab</code>).</p>
<p class="bb-note" lang="zh">每一页都链接到另一种语言的对应页面，并可在 Binder 或你自己的
JupyterLab（<code>make lab</code>）中打开对应的 notebook。</p>
</main>
</body>
</html>
"""
LANGUAGE_CARD = {
    "en": ("Read in English", "{n} chapters"),
    "zh": ("阅读中文版", "共 {n} 章"),
}


def write_root(out: Path, builds: dict[str, Build]) -> None:
    """The root `index.html`: a card per language, in the theme's colours."""
    links = []
    for lang, build in builds.items():
        chapters = sum(1 for page in build.pages.values() if page.source.parts[0] == lang)
        what, count = LANGUAGE_CARD[lang]
        links.append(f'<a class="bb-language" lang="{lang}" hreflang="{lang}" href="{lang}/index.html">'
                     f'<span class="bb-name">{LANG_NAMES[lang]}</span>'
                     f'<span class="bb-what">{what} · {count.format(n=chapters)}</span></a>')
    static = f"{next(iter(builds))}/_static"
    (out / "index.html").write_text(ROOT_PAGE.format(links="\n".join(links), static=static), encoding="utf-8")
    (out / ".nojekyll").write_text("", encoding="utf-8")


def build_site(out: Path, langs: list[str], numbers: set[str] | None, solutions: bool = True,
               quiet: bool = True) -> dict[str, int]:
    """Stage and build every language into `out`; returns the pages built per language."""
    unknown = [lang for lang in langs if lang not in LANGS]
    if unknown:
        raise SiteError(f"unknown language(s) {unknown}: the book has {list(LANGS)}")
    builds = plan(langs, numbers, solutions)
    src_root = out.parent / f"{out.name}-src"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for build in builds.values():
        stage(build, builds, src_root / build.lang)
    for build in builds.values():
        sphinx(src_root / build.lang, out / build.lang, build.lang, quiet)
    # myst-nb's extracted output files (already copied into each build's _images).
    shutil.rmtree(out / "jupyter_execute", ignore_errors=True)
    write_root(out, builds)
    return {lang: len(build.pages) for lang, build in builds.items()}


def _inputs_digest(langs: list[str], numbers: set[str] | None, solutions: bool) -> str:
    """A digest of everything a build reads: the notebooks it stages, site/ and this script."""
    digest = hashlib.sha256(repr((sorted(langs), sorted(numbers or []), solutions)).encode())
    files = [Path(__file__), *sorted(p for p in CONF_DIR.rglob("*") if p.is_file())]
    for build in plan(langs, numbers, solutions).values():
        files += [BOOK / page.source for page in build.pages.values()]
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def build_cached(out: Path, langs: list[str], numbers: set[str] | None, solutions: bool = True) -> Path:
    """Build into `out` unless it already holds a build of exactly these inputs (the smoke tests share one)."""
    stamp = out / ".inputs-sha256"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits, then finds the build done
        digest = _inputs_digest(langs, numbers, solutions)
        if not (stamp.exists() and stamp.read_text() == digest):
            build_site(out, langs, numbers, solutions)
            stamp.write_text(digest)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    parser.add_argument("--chapters", help="comma-separated chapter numbers, e.g. 07,23 (default: all)")
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--no-solutions", action="store_true", help="leave notebooks/solutions/ out")
    parser.add_argument("--verbose", action="store_true", help="Sphinx's progress output")
    args = parser.parse_args(argv)
    numbers = None
    if args.chapters:
        numbers = {n.strip().zfill(2) for n in args.chapters.split(",") if n.strip()}
    start = time.perf_counter()
    try:
        counts = build_site(args.out.resolve(), [s.strip() for s in args.langs.split(",")], numbers,
                            solutions=not args.no_solutions, quiet=not args.verbose)
    except SiteError as exc:
        print(f"build_site: {exc}", file=sys.stderr)
        return 1
    pages = ", ".join(f"{lang}: {n} pages" for lang, n in counts.items())
    print(f"build_site: {args.out}/index.html ({pages}) in {time.perf_counter() - start:.1f} s; "
          "open it in a browser (search works from the file too) or serve the folder: "
          f"python -m http.server -d {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
