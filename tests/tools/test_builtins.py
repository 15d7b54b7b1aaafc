"""The built-in tools on a real working folder, with the dataroom installed read-only as in production.

Tests may run as root, where file permissions do not stop a write: every refusal is asserted to come
from the tools' own rule (the file is unchanged and the message names the reason)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dataroom_factories import make_pdf

from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.tools.builtin import BUILTIN_TOOLS
from searchbox.tools.registry import REGISTRY
from searchbox.citations.ledger import SourceLedger
from searchbox.tools.tool import Tool, ToolContext, ToolResult
from searchbox.tools.truncate import MAX_BYTES, MAX_LINES, truncate_head, truncate_tail

BIG_LINES = 9000


@pytest.fixture
def work(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    (source / "finance").mkdir(parents=True)
    (source / "notes").mkdir()
    (source / "finance" / "revenue.md").write_text(
        "# Revenue\nTotal revenue was 48.2 million euros.\nRecurring revenue: 81 percent.\n"
    )
    (source / "finance" / "costs.md").write_text("# Costs\nHeadcount costs rose.\nRevenue impact: none.\n")
    (source / "notes" / "lease.txt").write_text("The lease runs until 2029.\nrevenue is not mentioned here\n")
    (source / "big.log").write_text("".join(f"line {n}\n" for n in range(1, BIG_LINES + 1)))
    (source / ".gitignore").write_text("*.md\n")  # must not hide documents from grep or find
    make_pdf(source / "audit.pdf", ["Audit opinion: unqualified.", "Signed by Baker & Co."])
    work = prepare_work_dir(tmp_path / "job", source)
    assert oct((work / "dataroom" / "big.log").stat().st_mode & 0o777) == "0o444"
    return work


@pytest.fixture
def ctx(work: Path) -> ToolContext:
    return ToolContext(work, SourceLedger())


def edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"oldText": old, "newText": new} for old, new in pairs]


def call(ctx: ToolContext, name: str, **args: object) -> ToolResult:
    return REGISTRY[name].run(ctx, args)


def ok(ctx: ToolContext, name: str, **args: object) -> ToolResult:
    out = call(ctx, name, **args)
    assert not out.is_error, out.text
    return out


def error(ctx: ToolContext, name: str, **args: object) -> ToolResult:
    out = call(ctx, name, **args)
    assert out.is_error, out.text
    return out


# --- declarations --------------------------------------------------------------------------------


def test_seven_builtins_with_openai_schemas() -> None:
    assert [tool.name for tool in BUILTIN_TOOLS] == ["read", "bash", "edit", "write", "grep", "find", "ls"]
    for tool in BUILTIN_TOOLS:
        assert isinstance(tool, Tool) and tool.group == "builtin" and callable(tool.function)
    schemas = {s["function"]["name"]: s["function"] for s in REGISTRY.schemas()}
    assert schemas["read"]["parameters"]["required"] == ["path"]
    assert set(schemas["grep"]["parameters"]["properties"]) == {
        "pattern", "path", "glob", "ignoreCase", "literal", "context", "limit"}
    assert schemas["edit"]["parameters"]["properties"]["edits"]["items"]["required"] == ["oldText", "newText"]


def test_bad_arguments_are_error_outputs(ctx: ToolContext) -> None:  # an unknown name: test_registry.py
    assert "needs the argument 'path'" in error(ctx, "read").text
    assert "must be a list of objects" in error(ctx, "edit", path="a.md", edits="not json").text
    clamped = ok(ctx, "grep", pattern="revenue", limit=99999)
    assert "'limit' clamped from 99999 to 1000" in clamped.text
    assert ok(ctx, "read", path="dataroom/finance/costs.md", offset="2", limit="1").details["first_line"] == 2


# --- read ----------------------------------------------------------------------------------------


def test_read_shows_lines_with_a_source_id(ctx: ToolContext) -> None:
    out = ok(ctx, "read", path="dataroom/finance/revenue.md")
    assert out.text.splitlines()[0] == "[source s1: dataroom/finance/revenue.md lines 1-3]"
    assert "48.2 million euros" in out.text and "continue" not in out.text
    source = ctx.ledger.sources()[0]
    assert (source.path, source.start, source.end) == ("dataroom/finance/revenue.md", 1, 3)


def test_read_offset_limit_and_how_to_continue(ctx: ToolContext, work: Path) -> None:
    out = ok(ctx, "read", path="dataroom/big.log", offset=10, limit=5)
    assert out.text.splitlines()[1:6] == [f"line {n}" for n in range(10, 15)]
    assert out.text.endswith(f"[{BIG_LINES - 14} more lines in file. Use offset=15 to continue.]")
    absolute = ok(ctx, "read", path=str(work / "dataroom" / "big.log"), offset=BIG_LINES)
    assert absolute.text.splitlines()[1:] == [f"line {BIG_LINES}"]
    assert "beyond the end" in error(ctx, "read", path="dataroom/big.log", offset=BIG_LINES + 1).text


def test_read_of_a_big_file_stops_at_2000_lines(ctx: ToolContext) -> None:
    out = ok(ctx, "read", path="dataroom/big.log")
    body = out.text.splitlines()
    assert body[0] == "[source s1: dataroom/big.log lines 1-2000]"
    assert body[MAX_LINES] == f"line {MAX_LINES}"
    assert body[-1] == f"[Showing lines 1-2000 of {BIG_LINES}. Use offset=2001 to continue.]"
    more = ok(ctx, "read", path="dataroom/big.log", offset=2001)
    assert more.text.splitlines()[1] == "line 2001"
    assert "Use offset=4001 to continue." in more.text


def test_read_cuts_at_50kb_and_cuts_an_overlong_line(ctx: ToolContext, work: Path) -> None:
    (work / "wide.txt").write_text(("x" * 1000 + "\n") * 100)
    out = ok(ctx, "read", path="wide.txt")
    assert out.details["last_line"] == 51 and "(50KB limit). Use offset=52 to continue." in out.text
    (work / "one.txt").write_text("é" * 40_000 + "\nnext\n")  # 80 KB on one line, two bytes a character
    one = ok(ctx, "read", path="one.txt")
    shown = one.text.splitlines()[1]
    assert shown.endswith("[... line cut]") and len(shown.encode()) <= MAX_BYTES
    assert "Use offset=2 to continue" in one.text


def test_read_records_each_range_once(ctx: ToolContext) -> None:
    first = ok(ctx, "read", path="dataroom/finance/revenue.md")
    again = ok(ctx, "read", path="./dataroom/finance/revenue.md")
    other = ok(ctx, "read", path="dataroom/finance/revenue.md", offset=2)
    assert [first.sources, again.sources, other.sources] == [["s1"], ["s1"], ["s2"]]
    assert [s.id for s in ctx.ledger.sources()] == ["s1", "s2"]


def test_read_gives_the_extracted_text_of_a_pdf(ctx: ToolContext) -> None:
    out = ok(ctx, "read", path="dataroom/audit.pdf")
    assert out.text.splitlines()[0].startswith("[source s1: dataroom/audit.pdf lines 1-")
    assert "text extracted from the document" in out.text.splitlines()[0]
    assert "[page 1]" in out.text and "Audit opinion: unqualified." in out.text and "Baker & Co." in out.text
    assert out.details["extracted"] is True


def test_read_errors(ctx: ToolContext, work: Path) -> None:
    assert "is a directory; use ls" in error(ctx, "read", path="dataroom").text
    assert "File not found: dataroom/nope.md" in error(ctx, "read", path="dataroom/nope.md").text
    assert "outside the working folder" in error(ctx, "read", path="../input.zip").text
    assert "outside the working folder" in error(ctx, "read", path="/etc/passwd").text
    (work / "blob.bin").write_bytes(b"\x00\x01binary")
    assert "binary file" in error(ctx, "read", path="blob.bin").text
    assert ctx.ledger.sources() == []


# --- write and edit ------------------------------------------------------------------------------


def test_write_creates_folders_and_overwrites(ctx: ToolContext, work: Path) -> None:
    assert ok(ctx, "write", path="out/deep/ANSWER.md", content="draft").text == \
        "Successfully wrote 5 bytes to out/deep/ANSWER.md"
    ok(ctx, "write", path=str(work / "out" / "deep" / "ANSWER.md"), content="")
    assert (work / "out" / "deep" / "ANSWER.md").read_text() == ""


def test_write_and_edit_never_touch_the_dataroom_or_leave_work(ctx: ToolContext, work: Path, tmp_path: Path) -> None:
    target = work / "dataroom" / "finance" / "revenue.md"
    before = target.read_text()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (work / "escape").symlink_to(outside)
    (work / "into_dataroom").symlink_to(target)
    for path in ("dataroom/finance/revenue.md", "dataroom/new.md", "./dataroom/../dataroom/x.md", "into_dataroom"):
        assert "inside dataroom/" in error(ctx, "write", path=path, content="x").text
        assert "inside dataroom/" in error(ctx, "edit", path=path, edits=edits(("Revenue", "X"))).text
    for path in ("../outside.txt", str(outside), "/tmp/searchbox-test-write.txt", "escape"):
        assert "outside the working folder" in error(ctx, "write", path=path, content="x").text
        assert "outside the working folder" in error(ctx, "edit", path=path, edits=edits(("keep", "x"))).text
    assert target.read_text() == before and outside.read_text() == "keep"
    assert not (work / "dataroom" / "new.md").exists() and not Path("/tmp/searchbox-test-write.txt").exists()


def test_edit_replaces_unique_text_all_or_nothing(ctx: ToolContext, work: Path) -> None:
    note = work / "note.md"
    note.write_text("alpha\nbeta\ngamma\nbeta\n")
    ambiguous = error(ctx, "edit", path="note.md", edits=edits(("alpha", "A"), ("beta", "B")))
    assert "Found 2 occurrences of edits[2].oldText" in ambiguous.text
    missing = error(ctx, "edit", path="note.md", edits=edits(("alpha", "A"), ("delta", "D")))
    assert "Could not find edits[2].oldText" in missing.text
    assert note.read_text() == "alpha\nbeta\ngamma\nbeta\n"  # nothing applied
    out = ok(ctx, "edit", path="note.md", edits=edits(("alpha\nbeta", "A\nB"), ("gamma\n", "")))
    assert note.read_text() == "A\nB\nbeta\n"
    assert out.text.startswith("Successfully replaced 2 blocks in note.md (+2 -3 lines).")
    assert "-gamma" in out.text and out.details["replacements"] == 2
    assert "overlap" in error(ctx, "edit", path="note.md", edits=edits(("A\nB", "x"), ("B\nbeta", "y"))).text
    assert "File not found" in error(ctx, "edit", path="nope.md", edits=edits(("a", "b"))).text


def test_edit_keeps_crlf_line_endings(ctx: ToolContext, work: Path) -> None:
    (work / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    ok(ctx, "edit", path="dos.txt", edits='[{"oldText": "one\\ntwo", "newText": "1\\n2"}]')
    assert (work / "dos.txt").read_bytes() == b"1\r\n2\r\n"


# --- grep ----------------------------------------------------------------------------------------


def test_grep_pattern_and_options(ctx: ToolContext) -> None:
    out = ok(ctx, "grep", pattern="revenue")
    assert out.text.splitlines() == [
        "[s1] dataroom/finance/revenue.md:2:Total revenue was 48.2 million euros.",
        "[s2] dataroom/finance/revenue.md:3:Recurring revenue: 81 percent.",
        "[s3] dataroom/notes/lease.txt:2:revenue is not mentioned here",
    ]
    insensitive = ok(ctx, "grep", pattern="revenue", ignoreCase=True, glob="*.md")
    assert len(insensitive.text.splitlines()) == 4 and "lease.txt" not in insensitive.text
    assert ok(ctx, "grep", pattern="48.2", literal=True).details["matches"] == 1
    assert ok(ctx, "grep", pattern="4.\\.2").details["matches"] == 1
    assert "No matches found" in ok(ctx, "grep", pattern="4.\\.2", literal=True).text
    scoped = ok(ctx, "grep", pattern="revenue", path="dataroom/notes/lease.txt")
    assert scoped.text == "[s3] dataroom/notes/lease.txt:2:revenue is not mentioned here"


def test_grep_context_limit_and_long_lines(ctx: ToolContext, work: Path) -> None:
    out = ok(ctx, "grep", pattern="^line 50$", context=2, path="dataroom")
    assert out.text.splitlines() == [f"dataroom/big.log-{n}-line {n}" if n != 50 else "[s1] dataroom/big.log:50:line 50"
                                     for n in range(48, 53)]
    limited = ok(ctx, "grep", pattern="^line 1", limit=3, context=1)
    lines = limited.text.splitlines()
    assert lines[:4] == ["[s2] dataroom/big.log:1:line 1", "dataroom/big.log-2-line 2", "--", "dataroom/big.log-9-line 9"]
    assert sum(":" in line.split("line")[0] for line in lines if line.startswith(("dataroom/", "[s"))) == 3
    assert lines[-1] == "[3 matches limit reached. Use limit=6 for more, or refine the pattern]"
    (work / "wide.txt").write_text("needle " + "y" * 5000 + "\n")
    wide = ok(ctx, "grep", pattern="needle", path="wide.txt")
    assert len(wide.text.splitlines()[0]) < 600 and "cut to 500 characters" in wide.text


def test_grep_errors_and_confinement(ctx: ToolContext) -> None:
    assert "regex parse error" in error(ctx, "grep", pattern="(unclosed").text
    assert "outside the working folder" in error(ctx, "grep", pattern="root", path="/etc").text
    assert "Path not found" in error(ctx, "grep", pattern="x", path="nope").text


def test_grep_skips_scratch_files_unless_asked(ctx: ToolContext, work: Path) -> None:
    (work / ".searchbox").mkdir()
    (work / ".searchbox" / "bash-1.log").write_text("Total revenue was 48.2 million euros.\n")
    assert ok(ctx, "grep", pattern="48.2", literal=True).details["matches"] == 1
    assert ok(ctx, "grep", pattern="48.2", literal=True, path=".searchbox").details["matches"] == 1


# --- find and ls ---------------------------------------------------------------------------------


def test_find_globs(ctx: ToolContext) -> None:
    markdown = ["dataroom/finance/costs.md", "dataroom/finance/revenue.md"]
    assert ok(ctx, "find", pattern="*.md").text.splitlines() == markdown
    assert ok(ctx, "find", pattern="**/*.pdf").text == "dataroom/audit.pdf"
    assert ok(ctx, "find", pattern="finance/*.md", path="dataroom").text.splitlines() == markdown
    limited = ok(ctx, "find", pattern="*", limit=2)
    assert limited.text.splitlines()[:2] == ["dataroom/.gitignore", "dataroom/audit.pdf"]
    assert "2 results limit reached (6 in all). Use limit=4 for more" in limited.text
    assert ok(ctx, "find", pattern="*.docx").text == "No files found matching pattern"
    assert "Not a directory" in error(ctx, "find", pattern="*", path="dataroom/big.log").text


def test_ls_sorted_with_dirs_and_dotfiles(ctx: ToolContext) -> None:
    assert ok(ctx, "ls", path="dataroom").text.splitlines() == [
        ".gitignore", "audit.pdf", "big.log", "finance/", "notes/"]
    assert ok(ctx, "ls").text == "dataroom/"
    limited = ok(ctx, "ls", path="dataroom", limit=2)
    assert limited.text.endswith("[2 entries limit reached (5 in all). Use limit=4 for more]")
    assert "outside the working folder" in error(ctx, "ls", path="..").text


def test_tools_never_raise(ctx: ToolContext) -> None:
    for tool in BUILTIN_TOOLS:
        out = tool.call(ctx, {})  # unvalidated: every required argument missing
        assert isinstance(out, ToolResult) and out.is_error and tool.name in out.text


# --- the shared truncation rule ------------------------------------------------------------------


def test_truncation_keeps_head_or_tail_on_character_boundaries() -> None:
    text = "".join(f"{n}\n" for n in range(1, 3001))
    head, tail = truncate_head(text), truncate_tail(text)
    assert (head.shown_lines, head.total_lines, head.truncated_by) == (MAX_LINES, 3000, "lines")
    assert head.text.splitlines()[-1] == "2000" and tail.text.splitlines()[0] == "1001"
    emoji = "😀" * 20_000  # 80 KB, four bytes a character, no newline
    for cut in (truncate_head(emoji), truncate_tail(emoji)):
        assert cut.partial_line and cut.shown_bytes <= MAX_BYTES
        assert set(cut.text.replace("[... line cut]", "").strip()) == {"😀"}
    small = truncate_head("a\nb\n")
    assert not small.truncated and small.text == "a\nb\n" and small.total_lines == 2


def test_read_refuses_a_fifo_instead_of_blocking(ctx: ToolContext, work: Path) -> None:
    os.mkfifo(work / "pipe")
    out = REGISTRY["read"].run(ctx, {"path": "pipe"})
    assert out.is_error and "not a regular file" in out.text
