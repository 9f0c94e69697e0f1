// Search result snippets from the chapters' own words, with no request.
//
// Sphinx's search page fetches every result's page to quote it: a browser
// refuses that from a file:// URL (the site opened from disk), and over
// http it quotes the theme's buttons. site/conf.py turns that off
// (html_show_search_summary = False) and writes each searchable page's
// words to burnbook-search-text.js (window.BURNBOOK_SEARCH_TEXT: {docname:
// {text, sections: {id: [start, end]}}}); this script adds the snippet,
// 240 characters around the first word of the query, under each result
// as Sphinx's own would be (<p class="context">, words highlighted).
(() => {
  "use strict";
  const pages = window.BURNBOOK_SEARCH_TEXT || {};
  const suffix = (window.DOCUMENTATION_OPTIONS || {}).LINK_SUFFIX || ".html";

  const queryWords = () => {
    const query = new URLSearchParams(window.location.search).get("q") || "";
    const split = typeof splitQuery === "function" ? splitQuery : (q) => q.split(/\s+/);
    const words = new Set();
    const stemmer = typeof Stemmer === "function" ? new Stemmer() : null;
    for (const raw of split(query)) {
      const word = raw.toLowerCase();
      if (!word || word.startsWith("-")) continue;
      words.add(word);
      if (stemmer) {
        const stem = stemmer.stemWord(word);
        if (stem && stem.length > 1) words.add(stem);
      }
    }
    return [...words];
  };

  const locate = (href) => {
    let [path, anchor] = href.split("#");
    try {
      path = decodeURIComponent(path);
      anchor = anchor === undefined ? "" : decodeURIComponent(anchor);
    } catch (e) {
      anchor = anchor || "";
    }
    const docname = path.endsWith(suffix) ? path.slice(0, -suffix.length) : path;
    return [docname, anchor];
  };

  const snippet = (page, anchor, words) => {
    let text = page.text;
    const range = anchor && page.sections[anchor];
    if (range) text = text.slice(range[0], range[1]);
    if (!text) return null;
    const lower = text.toLowerCase();
    let at = -1;
    for (const word of words) {
      const i = lower.indexOf(word);
      if (i > -1 && (at < 0 || i < at)) at = i;
    }
    const start = Math.max(at - 120, 0);
    const piece = text.substr(start, 240).trim();
    const p = document.createElement("p");
    p.classList.add("context");
    p.append(start > 0 ? "..." : "");
    // the query's words highlighted, as Sphinx's summaries are
    const pattern = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
    let last = 0;
    if (pattern) {
      for (const match of piece.matchAll(new RegExp(pattern, "gi"))) {
        p.append(piece.slice(last, match.index));
        const mark = document.createElement("span");
        mark.classList.add("highlighted");
        mark.textContent = match[0];
        p.append(mark);
        last = match.index + match[0].length;
      }
    }
    p.append(piece.slice(last));
    if (start + 240 < text.length) p.append("...");
    return p;
  };

  const annotate = (item, words) => {
    if (item.dataset.bbSnippet) return;
    item.dataset.bbSnippet = "1";
    const link = item.querySelector("a[href]");
    if (!link) return;
    const [docname, anchor] = locate(link.getAttribute("href"));
    const page = pages[docname];
    const summary = page && snippet(page, anchor, words);
    if (summary) item.appendChild(summary);
  };

  const start = () => {
    const results = document.getElementById("search-results");
    if (!results) return;
    const words = queryWords();
    results.querySelectorAll("li").forEach((li) => annotate(li, words));
    new MutationObserver((changes) => {
      for (const change of changes) {
        for (const node of change.addedNodes) {
          if (node.nodeName === "LI") annotate(node, words);
        }
      }
    }).observe(results, { childList: true, subtree: true });
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
