"""The answer's [sN] links and the sources panel: ledger-checked, and safe against hostile text."""

from __future__ import annotations

import re

from searchbox.records.events import Delta, StepEnd, StepStart, ToolEnd, ToolStart
from searchbox.ui.answer import CITATION_JS, render_answer, render_sources
from searchbox.ui.feed import Feed

SOURCES = [
    {"id": "s1", "kind": "range", "path": "dataroom/legal/lease.txt", "chunk": None, "start": 1, "end": 12,
     "label": None, "preview": "The office lease runs until 31 March 2029."},
    {"id": "s2", "kind": "chunk", "path": "dataroom/finance/q3.pdf", "chunk": 4, "start": 5600, "end": 7000,
     "label": "page 3", "preview": "Revenue rose 17 percent."},
    {"id": "s3", "kind": "chunk", "path": "dataroom/evil<img src=x onerror=alert(1)>.md", "chunk": 0, "start": 0,
     "end": 90, "label": "<b>label</b>", "preview": "<script>alert('pwned')</script> & more"},
]


def link(source_id: str, text: str) -> str:
    return f'<a class="cite" href="#src-{source_id}">{text}</a>'


def test_a_citation_links_to_its_source() -> None:
    assert render_answer("Until 31 March 2029 [s1].", SOURCES) == f"Until 31 March 2029 {link('s1', '[s1]')}."


def test_grouped_citations_link_each_id() -> None:
    out = render_answer("Both [s1, s2] and [s2;s3].", SOURCES)
    assert out == f"Both [{link('s1', 's1')}, {link('s2', 's2')}] and [{link('s2', 's2')}, {link('s3', 's3')}]."


def test_a_citation_missing_from_the_ledger_is_flagged() -> None:
    out = render_answer("Per the board [s9], and [s1, s7].", SOURCES)
    assert '<span class="cite-missing" title="no such source">[s9]</span>' in out
    assert f'[{link("s1", "s1")}, <span class="cite-missing" title="no such source">s7</span>]' in out
    assert 'href="#src-s9"' not in out and 'href="#src-s7"' not in out


def test_things_that_only_look_like_citations_are_left_alone() -> None:
    text = "See [section 2], [s] and [S1] or s1 alone."
    assert render_answer(text, SOURCES) == text


def test_html_in_the_answer_is_escaped() -> None:
    out = render_answer("Hi <script>alert(1)</script> <img src=x onerror=alert(2)> & [s1]", SOURCES)
    assert "<script" not in out and "<img" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out and "&amp;" in out and link("s1", "[s1]") in out
    assert "](#blocked:" in render_answer("[click](javascript:alert(1))", SOURCES)


def test_code_is_shown_as_written_and_never_linked() -> None:
    out = render_answer("Run `grep '<b>' [s1]` then:\n\n```bash\necho '<script>' [s2]\n```\nDone [s2].", SOURCES)
    assert "<code>grep '&lt;b&gt;' \\[s1\\]</code>" in out  # Markdown after an inline <code> is read: escaped
    assert "<pre><code>echo '&lt;script&gt;' [s2]</code></pre>" in out
    assert out.endswith(f"Done {link('s2', '[s2]')}.")
    # An unclosed fence runs to the end, escaped all the same.
    assert render_answer("```\n<script>x</script> [s1]", SOURCES) == "<pre><code>&lt;script&gt;x&lt;/script&gt; [s1]</code></pre>"


def test_no_tag_from_an_answer_survives() -> None:
    hostile = ["\\`<img src=x onerror=alert(1)>\\`", "`a\n\n<iframe src=evil>\n\nb`", "  ```\n<x>\n```\n<svg onload=alert(1)>\n```",
               "<<script>script>", "[s1]<script>", "```` \n<a>\n```\n<b>"]
    for text in hostile:
        out = render_answer(text, SOURCES)
        tags = set(re.findall(r"<(/?[a-zA-Z]+)", out))
        assert tags <= {"a", "/a", "span", "/span", "code", "/code", "pre", "/pre"}, (text, out)


def test_the_sources_panel_lists_cited_sources_first_and_marks_them() -> None:
    html = render_sources(SOURCES, ["s2", "s9"])
    order = re.findall(r'<details id="(src-s\d+)"', html)
    assert order == ["src-s2", "src-s1", "src-s3"]
    s2 = html[html.index('id="src-s2"'):html.index("</details>")]
    assert 'class="source cited"' in s2 and "✓ cited" in s2 and "dataroom/finance/q3.pdf" in s2
    assert "chunk 4" in s2 and "page 3" in s2 and "Revenue rose 17 percent." in s2
    assert "lines 1–12" in html and "3 sources, 1 cited" in html
    assert "Cited but not in the ledger: s9" in html


def test_documents_cannot_inject_html_into_the_panel() -> None:
    html = render_sources(SOURCES, ["s3"])
    assert "<script" not in html and "<img" not in html and "<b>label" not in html
    assert "&lt;script&gt;alert('pwned')&lt;/script&gt; &amp; more" in html
    assert "evil&lt;img src=x onerror=alert(1)&gt;.md" in html and "&lt;b&gt;label&lt;/b&gt;" in html


def test_an_empty_ledger_still_renders() -> None:
    assert "0 sources, 0 cited" in render_sources([], [])
    assert render_answer("", []) == ""


def test_the_citation_script_opens_the_target() -> None:
    assert CITATION_JS.startswith("() =>") and "a.cite" in CITATION_JS
    assert ".open = true" in CITATION_JS and "scrollIntoView" in CITATION_JS


# --- nothing rendered loads from outside the app -------------------------------------------------

LEAK = "http://127.0.0.1:9/leak?d=SECRET"


def test_a_markdown_image_becomes_its_alt_text_and_a_link() -> None:
    out = render_answer(f'The chart ![revenue by year]({LEAK} "title") shows it [s1].', SOURCES)
    assert "![" not in out and "<img" not in out
    assert out.startswith(f"The chart revenue by year (image not loaded: [http://127\\.0\\.0\\.1:9/leak?d=SECRET]({LEAK}))")
    assert out.endswith(f"shows it {link('s1', '[s1]')}.")
    assert render_answer("![](https://x.example/a.png)", SOURCES).startswith("image (image not loaded: ")


def test_no_image_syntax_survives() -> None:
    hostile = [f"![x][ref]\n\n[ref]: {LEAK}", f"![x]\n\n[x]: {LEAK}", f"[![badge]({LEAK})]({LEAK})", f"![a [b] c]({LEAK})",
               f"![x](<{LEAK}>)", f"!![x]({LEAK})", f"![x]( {LEAK} )"]
    for text in hostile:
        out = render_answer(text, SOURCES)
        assert "![" not in out and "<img" not in out, (text, out)


def test_tags_that_load_are_shown_as_text() -> None:
    for tag in (f'<img src="{LEAK}">', f"<iframe src={LEAK}></iframe>", f"<link rel=stylesheet href={LEAK}>",
                f"<style>@import url({LEAK})</style>", f"<script src={LEAK}></script>", f"<video poster={LEAK}>"):
        out = render_answer(tag, SOURCES)
        assert "<" not in out and out.startswith("&lt;"), out


def test_the_feed_renders_the_models_text_inert() -> None:
    feed = Feed(f"What is ![q]({LEAK})?")
    feed.add(StepStart(turn=1, step=1))
    feed.add(Delta(turn=1, step=1, kind="reasoning", text=f"<img src={LEAK}>"))
    feed.add(Delta(turn=1, step=1, kind="text", text=f"See ![x]({LEAK})"))
    question, reasoning, text = feed.messages
    assert "![" not in question["content"] and "image not loaded" in question["content"]
    assert reasoning["content"] == f"&lt;img src={LEAK}&gt;"
    assert "![" not in text["content"]
    feed.add(StepEnd(turn=1, step=1, text=f"Done ![y]({LEAK})", llm_ms=1))
    assert text["content"].startswith("Done y (image not loaded: ")


def test_the_feeds_tool_titles_and_logs_are_inert() -> None:
    feed = Feed("q")
    arguments = {"path": "notes.md", "content": f"![x]({LEAK}) <img src={LEAK}>"}
    feed.add(ToolStart(turn=1, step=1, call_id="c", name="write", arguments=arguments))
    assert "![" not in feed.messages[-1]["metadata"]["title"]
    feed.add(ToolEnd(turn=1, step=1, call_id="c", name="write", arguments=arguments, is_error=True,
                     preview="", gist=f"![y]({LEAK})", duration_ms=1))
    metadata = feed.messages[-1]["metadata"]
    assert "![" not in metadata["title"] and "<img" not in metadata["title"]
    assert metadata["log"] == f"![y]({LEAK})"  # Gradio sets a log as text: shown as written, nothing rendered
