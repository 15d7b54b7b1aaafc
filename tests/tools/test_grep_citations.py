"""grep's matches are sources: each shown match row of a dataroom file is a line range in the ledger,
with the id on the row, so a grep-only run can cite what it found (issue 14, item 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dataroom_factories import make_docx, make_pdf

from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.assists.ask_sources import ask_sources
from searchbox.agent.run import run_job
from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.jobs.job import create_job
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.records.events import load_events
from searchbox.records.files import read_json
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.tools.builtin import grep as grep_tool
from searchbox.tools.registry import REGISTRY
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import ToolContext, ToolResult
from searchbox.ui.answer import render_answer, render_sources
from searchbox.ui.feed import Feed

CLAUSES = "".join(f"Clause {n}: {'the tenant pays rent' if n in (4, 6, 20) else 'general terms'}.\n"
                  for n in range(1, 31))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    source = write_tree(tmp_path / "source", {"legal/lease.txt": "The office lease at 14 Harbour Street.\n"
                                              "It runs until 31 March 2029.\n", "legal/clauses.txt": CLAUSES})
    make_pdf(source / "audit.pdf", ["Audit opinion: unqualified.", "Signed by Baker & Co, Harbour office."])
    make_docx(source / "minutes.docx", ["Board minutes.", "The board met at the Harbour office."], [["a", "b"]])
    return prepare_work_dir(tmp_path / "job", source)


@pytest.fixture
def ctx(work: Path) -> ToolContext:
    return ToolContext(work, SourceLedger())


def grep(ctx: ToolContext, **args: Any) -> ToolResult:
    out = REGISTRY["grep"].run(ctx, args)
    assert not out.is_error, out.text
    return out


def source(ctx: ToolContext, source_id: str) -> dict[str, Any]:
    return next(vars(s) for s in ctx.ledger.sources() if s.id == source_id)


def test_each_shown_match_in_the_dataroom_is_a_cited_line_range(ctx: ToolContext, work: Path) -> None:
    (work / "notes.md").write_text("Harbour notes of my own\n")  # outside dataroom/: nothing to cite
    out = grep(ctx, pattern="Harbour", glob="*.txt")
    assert out.text.splitlines() == ["[s1] dataroom/legal/lease.txt:1:The office lease at 14 Harbour Street."]
    assert out.sources == ["s1"]
    assert {k: source(ctx, "s1")[k] for k in ("kind", "path", "start", "end", "preview")} == {
        "kind": "range", "path": "dataroom/legal/lease.txt", "start": 1, "end": 1,
        "preview": "The office lease at 14 Harbour Street."}
    everywhere = grep(ctx, pattern="Harbour notes")
    assert everywhere.text == "notes.md:1:Harbour notes of my own" and everywhere.sources == []
    # The same range grepped again, or read, is the same source.
    assert grep(ctx, pattern="Harbour", glob="*.txt").text.startswith("[s1] ")
    assert REGISTRY["read"].run(ctx, {"path": "dataroom/legal/lease.txt", "limit": 1}).sources == ["s1"]
    assert len(ctx.ledger.sources()) == 1


def test_context_lines_join_the_range_and_overlapping_ranges_merge(ctx: ToolContext) -> None:
    out = grep(ctx, pattern="rent", path="dataroom/legal/clauses.txt", context=1)
    rows = out.text.splitlines()
    assert rows[:5] == ["dataroom/legal/clauses.txt-3-Clause 3: general terms.",
                        "[s1] dataroom/legal/clauses.txt:4:Clause 4: the tenant pays rent.",
                        "dataroom/legal/clauses.txt-5-Clause 5: general terms.",
                        "[s1] dataroom/legal/clauses.txt:6:Clause 6: the tenant pays rent.",
                        "dataroom/legal/clauses.txt-7-Clause 7: general terms."]
    assert rows[5:] == ["--", "dataroom/legal/clauses.txt-19-Clause 19: general terms.",
                        "[s2] dataroom/legal/clauses.txt:20:Clause 20: the tenant pays rent.",
                        "dataroom/legal/clauses.txt-21-Clause 21: general terms."]
    merged, alone = source(ctx, "s1"), source(ctx, "s2")
    assert (merged["start"], merged["end"], alone["start"], alone["end"]) == (3, 7, 19, 21)
    assert merged["preview"] == "\n".join(f"Clause {n}: {'the tenant pays rent' if n in (4, 6) else 'general terms'}."
                                          for n in range(3, 8))
    # Without context each match is its own line.
    plain = grep(ctx, pattern="rent", path="dataroom/legal/clauses.txt")
    assert [row.split(" ")[0] for row in plain.text.splitlines()] == ["[s3]", "[s4]", "[s5]"]
    assert [(source(ctx, i)["start"], source(ctx, i)["end"]) for i in ("s3", "s4", "s5")] == [(4, 4), (6, 6), (20, 20)]


def test_only_rows_shown_get_ids(work: Path) -> None:
    many = "".join(f"line {n}: rent {'x' * 60}\n" for n in range(1, 201))
    (work / "dataroom" / "legal" / "clauses.txt").chmod(0o644)
    (work / "dataroom" / "legal" / "clauses.txt").write_text(many)
    ctx = ToolContext(work, SourceLedger(), max_bytes=2048)
    out = grep(ctx, pattern="rent", path="dataroom/legal/clauses.txt", limit=1000)
    shown = [row for row in out.text.splitlines() if row.startswith("[s")]
    assert out.details["truncated"] and 10 < len(shown) < 40 and len(out.text.split("\n\n[")[0].encode()) <= 2048
    assert len(ctx.ledger.sources()) == len(shown) == len(out.sources)
    assert [source(ctx, f"s{n}")["start"] for n in range(1, len(shown) + 1)] == list(range(1, len(shown) + 1))
    limited = grep(ctx, pattern="rent", path="dataroom/legal/clauses.txt", limit=2)
    assert limited.sources == ["s1", "s2"] and len(ctx.ledger.sources()) == len(shown)


@pytest.mark.parametrize("document", ["audit.pdf", "minutes.docx"])
def test_a_match_in_a_document_cites_the_lines_read_shows(ctx: ToolContext, document: str) -> None:
    out = grep(ctx, pattern="Harbour office", path=f"dataroom/{document}")
    [row] = out.text.splitlines()
    cited = source(ctx, out.sources[0])
    assert row.startswith(f"[{cited['id']}] dataroom/{document}:{cited['start']}:")
    # Reading exactly that range shows the matched line and is the same source.
    read = REGISTRY["read"].run(ctx, {"path": f"dataroom/{document}", "offset": cited["start"], "limit": 1})
    assert read.sources == [cited["id"]] and read.text.splitlines()[1] == row.split(":", 2)[2]
    assert "Harbour office" in cited["preview"]


def test_documents_are_searched_in_path_order_with_the_glob_and_limit(ctx: ToolContext) -> None:
    out = grep(ctx, pattern="Harbour")
    paths = [row.split(" ")[1].split(":")[0] for row in out.text.splitlines()]
    assert paths == ["dataroom/audit.pdf", "dataroom/legal/lease.txt", "dataroom/minutes.docx"]
    assert grep(ctx, pattern="Harbour", glob="*.docx").text.splitlines()[0].endswith(
        "dataroom/minutes.docx:3:The board met at the Harbour office.")
    first = grep(ctx, pattern="Harbour", limit=1)
    assert first.details["limit_reached"] and first.text.splitlines()[0].startswith("[s1] dataroom/audit.pdf:")


def test_a_document_is_extracted_once_while_it_is_unchanged(ctx: ToolContext, work: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    extracted: list[str] = []
    document_lines = grep_tool.document_lines
    monkeypatch.setattr(grep_tool, "document_lines", lambda c, rel: extracted.append(rel) or document_lines(c, rel))
    for _ in range(3):
        assert grep(ctx, pattern="Baker", path="dataroom").details["matches"] == 1
    assert sorted(extracted) == ["dataroom/audit.pdf", "dataroom/minutes.docx"]
    pdf = work / "dataroom" / "audit.pdf"
    pdf.chmod(0o644)
    make_pdf(pdf, ["Signed by Baker & Co."])
    assert grep(ctx, pattern="Baker", path="dataroom/audit.pdf").text.endswith("audit.pdf:2:Signed by Baker & Co.")
    assert extracted.count("dataroom/audit.pdf") == 2


def test_the_description_says_matches_carry_source_ids() -> None:
    spec = REGISTRY["grep"]
    assert "[sN]" in spec.description and "[sN]" in spec.brief


# --- a grep-only run, through the loop, the records and the app's panels -------------------------


def test_a_grep_only_run_cites_what_it_found_and_the_panels_show_it(tmp_path: Path) -> None:
    source_dir = write_tree(tmp_path / "room", SMALL_DATAROOM)
    script = [Reply(tool_calls=[{"name": "grep", "arguments": {"pattern": "Harbour"}}]),
              Reply(text="The lease runs until 31 March 2029."),  # cites nothing: asked once for its sources
              Reply(text="The lease runs until 31 March 2029 [s1].")]
    with ScriptedEndpoint(script) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                    harness_assists="ask_sources")
        job_dir = tmp_path / "job"
        create_job(job_dir, "When does the office lease end?", source_dir, settings)
        run_job(job_dir, settings, OpenAIClient(endpoint.url, "scripted", max_attempts=2, backoff_s=0.01), [])
        requests = [r.body["messages"] for r in endpoint.requests]
    tool_message = next(m for m in requests[1] if m["role"] == "tool")
    assert tool_message["content"].startswith("[s1] dataroom/legal/lease.txt:1:The office lease at 14 Harbour Street")
    assert requests[2][-1] == {"role": "user", "content": ask_sources(["s1"])}  # the loop saw that grep showed s1
    meta = read_json(job_dir / "run_meta.json")
    assert meta["tool_counts"] == {"grep": 1}
    citations = meta["citations"]
    assert {k: citations[k] for k in ("cited", "valid", "invalid", "invalid_ids")} == \
        {"cited": ["s1"], "valid": 1, "invalid": 0, "invalid_ids": []}
    # The grepped line holds the date: the citation is checked against it and supported.
    assert [(c["id"], c["verdict"], c["matched"]) for c in citations["checks"]] == [("s1", "supported", ["31 March 2029"])]
    sources = JobFolder(job_dir).read_sources()
    assert [(s["id"], s["kind"], s["path"], s["start"], s["end"]) for s in sources] == [
        ("s1", "range", "dataroom/legal/lease.txt", 1, 1)]

    answer = render_answer("The lease runs until 31 March 2029 [s1].", sources)
    assert '<a class="cite" href="#src-s1">[s1]</a>' in answer
    panel = render_sources(sources, ["s1"])
    assert '<details id="src-s1" class="source cited">' in panel and "<code>dataroom/legal/lease.txt</code>" in panel
    assert '<span class="src-loc">line 1</span>' in panel and "14 Harbour Street" in panel
    feed = Feed("When does the office lease end?")
    for event in load_events(job_dir):
        feed.add(event)
    grep_message = next(m for m in feed.messages if "grep" in str(m.get("metadata", {}).get("title", "")))
    assert "[s1] dataroom/legal/lease.txt:1:" in grep_message["content"]
    assert grep_message["metadata"]["log"] == "1 matches in 1 file: lease.txt"
