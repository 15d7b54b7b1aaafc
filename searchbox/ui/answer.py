"""The answer with clickable [sN] citations, and the sources panel they point to (design §2.5).

The ledger, not the prose, is the authority: a marker whose id is not in sources.json is flagged.
Each citation the checker judged (run_meta.json's "citations" → "checks") carries its verdict: a
mark and colour (✓ supported, ✗! contradicted, ✗ unsupported, ? unchecked) and the reason as its tooltip.
Answers and documents are untrusted text: the answer is Markdown made inert by the one rule
(searchbox.inert: HTML escaped, images as links, code shown as written), with the citation links
built here the only live markup; the panel is HTML with every value escaped.
"""

from __future__ import annotations

from typing import Any

from searchbox import inert
from searchbox.citations.markers import MARKER, marker_citations

_VERDICT_MARKS = {"supported": "✓", "contradicted": "✗!", "unsupported": "✗", "unchecked": "?"}

CITATION_JS = """() => {
  if (window.__searchboxCitations) return;
  window.__searchboxCitations = true;
  // Delegated: the answer and the panel are re-rendered while the run streams.
  document.addEventListener("click", (event) => {
    const link = event.target.closest ? event.target.closest("a.cite") : null;
    if (!link) return;
    // The Search and Jobs tabs each have a sources panel with the same ids: open the one in this tab.
    const id = link.getAttribute("href").slice(1);
    const tab = link.closest("[role=tabpanel]");
    const target = (tab && tab.querySelector(`[id="${id}"]`)) || document.getElementById(id);
    if (!target) return;
    event.preventDefault();
    target.open = true;
    target.scrollIntoView({behavior: "smooth", block: "center"});
    target.classList.add("src-flash");
    setTimeout(() => target.classList.remove("src-flash"), 1500);
  });
}"""

CITATION_CSS = """
a.cite { text-decoration: none; font-weight: 600; }
.cite-supported { color: #2e7d32; }
.cite-unsupported { color: #c62828; }
.cite-contradicted { color: #b71c1c; text-decoration: underline wavy; }
.cite-unchecked { color: #8d6e00; }
.cite-verdict { font-size: 0.8em; vertical-align: super; cursor: help; }
.cite-missing { color: #c62828; text-decoration: line-through wavy; cursor: help; }
.sources details.source { border-left: 3px solid transparent; padding: 2px 6px; margin: 2px 0; }
.sources details.cited { border-left-color: #1e88e5; }
.sources details.src-flash { background: rgba(30, 136, 229, 0.15); }
.sources pre.src-preview { white-space: pre-wrap; max-height: 16em; overflow: auto; }
.sources .src-missing { color: #c62828; }
"""


def render_answer(markdown: str, sources: list[dict[str, Any]], checks: list[dict[str, Any]] | None = None) -> str:
    """`checks`: the citation checks made on this very answer (run_meta.json), or None."""
    known = {str(s.get("id")) for s in sources}
    verdicts = {(c.get("id"), c.get("occurrence")): c for c in checks or []}
    seen: dict[str, int] = {}

    def numbered(inner: str) -> list[tuple[str, str | None, dict[str, Any] | None]]:
        items = []
        for source_id, quote in marker_citations(inner):
            items.append((source_id, quote, verdicts.get((source_id, seen.get(source_id, 0)))))
            seen[source_id] = seen.get(source_id, 0) + 1
        return items

    def prose(text: str) -> str:
        return MARKER.sub(lambda group: _cite_group(numbered(group.group(1)), known), inert.prose(text))

    def code(text: str) -> None:  # markers in code are shown as written, but counted as the checker counts them
        for group in MARKER.finditer(text):
            numbered(group.group(1))

    return inert.split_code(markdown, prose, code)


def render_sources(sources: list[dict[str, Any]], cited: list[str]) -> str:
    by_id = {str(s.get("id")): s for s in sources}
    first = [by_id[i] for i in cited if i in by_id]
    cited_set = set(cited)
    rest = [s for s in sources if str(s.get("id")) not in cited_set]
    missing = [i for i in cited if i not in by_id]
    count = f"{len(sources)} source" + ("" if len(sources) == 1 else "s")
    parts = [f'<div class="sources"><p class="src-count">{count}, {len(first)} cited</p>']
    if missing:
        parts.append(f'<p class="src-missing">⚠ Cited but not in the ledger: {inert.html(", ".join(missing))}</p>')
    parts.extend(_source(s, cited=True) for s in first)
    parts.extend(_source(s, cited=False) for s in rest)
    parts.append("</div>")
    return "\n".join(parts)


def _cite_group(items: list[tuple[str, str | None, dict[str, Any] | None]], known: set[str]) -> str:
    """One marker's links. Its text is already escaped (the quote too), so it is used as it is."""
    if len(items) == 1:
        source_id, quote, check = items[0]
        return _cite(source_id, known, f"[{_label(source_id, quote)}]", check)
    return "[" + ", ".join(_cite(i, known, _label(i, q), c) for i, q, c in items) + "]"


def _label(source_id: str, quote: str | None) -> str:
    return f"{source_id} “{quote}”" if quote else source_id


def _cite(source_id: str, known: set[str], text: str, check: dict[str, Any] | None = None) -> str:
    if source_id not in known:
        return f'<span class="cite-missing" title="no such source">{text}</span>'
    if check is None or check.get("verdict") not in _VERDICT_MARKS:
        return f'<a class="cite" href="#src-{source_id}">{text}</a>'
    verdict = str(check["verdict"])
    tip = inert.html(f"{verdict}: {check.get('reason', '')}")
    return (f'<a class="cite cite-{verdict}" href="#src-{source_id}" title="{tip}">{text}</a>'
            f'<span class="cite-verdict cite-{verdict}" title="{tip}">{_VERDICT_MARKS[verdict]}</span>')


def _source(source: dict[str, Any], cited: bool) -> str:
    source_id = str(source.get("id"))
    summary = [f"<b>{inert.html(source_id)}</b>"]
    if cited:
        summary.append('<span class="src-cited">✓ cited</span>')
    summary.append(f"<code>{inert.html(source.get('path', ''))}</code>")
    summary.append(f'<span class="src-loc">{inert.html(_locator(source))}</span>')
    if source.get("label"):
        summary.append(f'<span class="src-label">{inert.html(source["label"])}</span>')
    classes = "source cited" if cited else "source"
    return (f'<details id="src-{inert.html(source_id)}" class="{classes}"><summary>{" ".join(summary)}</summary>'
            f'<pre class="src-preview">{inert.html(source.get("preview", ""))}</pre></details>')


def _locator(source: dict[str, Any]) -> str:
    if source.get("kind") == "chunk":
        return f"chunk {source.get('chunk')}"
    start, end = source.get("start"), source.get("end")
    return f"line {start}" if start == end else f"lines {start}–{end}"
