"""The README and docs/ hold together: every relative link and anchor resolves, and the README stays an introduction."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
README_MAX_LINES = 120


def _tokens(page: Path) -> list:
    return MarkdownIt("commonmark").enable("table").parse(page.read_text())


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_~]|<[^>]+>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    tokens = _tokens(page)
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            slug = github_slug(inline.content)
            n, candidate = 0, slug
            while candidate in found:  # GitHub numbers repeated headings: x, x-1, x-2
                n += 1
                candidate = f"{slug}-{n}"
            found.add(candidate)
    return found


def links(page: Path) -> list[str]:
    out = []
    for token in _tokens(page):
        for child in token.children or []:
            target = child.attrs.get("href") if child.type == "link_open" else child.attrs.get("src") if child.type == "image" else None
            if target:
                out.append(str(target))
    return out


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: leave the repository
            continue
        path_part, _, anchor = target.partition("#")
        goal = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and goal.suffix == ".md" and unquote(anchor) not in anchors(goal):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert not broken_links(page), broken_links(page)


def test_a_broken_link_and_a_missing_anchor_are_both_caught(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading, with punctuation!\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#a-heading-with-punctuation) [dup](other.md#twice-1) [gone](nowhere.md) "
                    "[bad anchor](other.md#no-such) [web](https://example.com/x) `[code](not-a-link.md)`\n")
    assert broken_links(page) == ["nowhere.md: no such file", "other.md#no-such: no heading with that anchor"]


def test_the_readme_introduces_and_docs_explain() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README has {len(lines)} lines; move detail to docs/"
    readme_links = links(ROOT / "README.md")
    unreached = [p.relative_to(ROOT / "docs").as_posix() for p in PAGES[1:]
                 if p.parent == ROOT / "docs" and f"docs/{p.name}" not in readme_links]
    assert not unreached, f"docs pages the README never points to: {unreached}"


def test_the_records_page_lists_every_event_type() -> None:
    from searchbox.records import events

    types = {cls.type for cls in vars(events).values()
             if isinstance(cls, type) and issubclass(cls, events.Event) and cls is not events.Event}
    page = (ROOT / "docs" / "records.md").read_text()
    assert types and not [t for t in sorted(types) if f"| `{t}` |" not in page]


_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
REFERENCE_PAGES = [p for p in PAGES if "findings" not in p.relative_to(ROOT).parts]


def dated_text(page: Path) -> list[str]:
    """Dates in a page's prose: a measurement belongs in a dated finding, which the page links. A date in
    code (a file name, an example value) or in a link to a finding is no measurement."""
    found: list[str] = []
    for token in _tokens(page):
        in_finding_link = False
        for child in token.children or []:
            if child.type == "link_open":
                in_finding_link = "findings/" in str(child.attrs.get("href", ""))
            elif child.type == "link_close":
                in_finding_link = False
            elif child.type == "text" and not in_finding_link:
                found += [f"{page.name}: ...{child.content[max(0, m.start() - 40):m.end() + 40]}..."
                          for m in _DATE.finditer(child.content)]
    return found


@pytest.mark.parametrize("page", REFERENCE_PAGES, ids=[str(p.relative_to(ROOT)) for p in REFERENCE_PAGES])
def test_reference_pages_carry_no_dated_figures(page: Path) -> None:
    assert not dated_text(page), "a dated figure belongs in docs/findings/, linked from here: " + "; ".join(dated_text(page))


def test_a_dated_figure_is_caught_and_a_date_in_code_or_a_finding_link_is_not(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Measured 2026-12-05: 52 s. `PROMPT_DATE=2026-12-02` and [2026-12-04-x.md](findings/2026-12-04-x.md)\n\n"
                    "```\nrun --date 2026-12-01\n```\n")
    assert [line.split(": ", 1)[1] for line in dated_text(page)] == ["...Measured 2026-12-05: 52 s. ..."]
