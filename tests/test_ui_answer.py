"""The answer's [sN] links and the sources panel: ledger-checked, and safe against hostile text."""

from __future__ import annotations

import re

from searchbox.ui.answer import CITATION_JS, render_answer, render_sources

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
    assert "<code>grep '&lt;b&gt;' [s1]</code>" in out
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
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt; &amp; more" in html
    assert "evil&lt;img src=x onerror=alert(1)&gt;.md" in html and "&lt;b&gt;label&lt;/b&gt;" in html


def test_an_empty_ledger_still_renders() -> None:
    assert "0 sources, 0 cited" in render_sources([], [])
    assert render_answer("", []) == ""


def test_the_citation_script_opens_the_target() -> None:
    assert CITATION_JS.startswith("() =>") and "a.cite" in CITATION_JS
    assert ".open = true" in CITATION_JS and "scrollIntoView" in CITATION_JS
