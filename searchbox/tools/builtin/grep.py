"""grep: ripgrep over work/, documents of the dataroom searched in the text read shows, each match
in the dataroom cited as a line range.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from searchbox.cancel import on_cut
from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.builtin.common import (
    LIMIT_NOTE,
    OPTIONAL_PATH_ARGUMENT,
    document_lines,
    existing,
    is_document,
    limit_note,
    noted,
    rg_binary,
    rg_command,
    rg_text,
    under_work,
)
from searchbox.tools.gist import counted
from searchbox.tools.paths import DATAROOM_DIR, open_regular, relative_to_work
from searchbox.tools.builtin.rg_events import rg_events
from searchbox.tools.tool import ToolContext, ToolResult, tool
from searchbox.tools.truncate import MAX_LINE_CHARS, shorten_line, truncate_head

# Extracted document text grep keeps between calls (_document_text), least recently searched dropped first.
_DOCUMENT_TEXT_BYTES = 64 * 2**20
_DOCUMENT_TEXTS: OrderedDict[tuple[str, int, int, int, int], bytes] = OrderedDict()
_DOCUMENT_TEXTS_LOCK = threading.Lock()


@tool(
    brief="Search file contents with ripgrep; rows path:line:text, dataroom matches with a source id [sN].",
    description="Search file contents with ripgrep (regular expressions); documents in dataroom/ (PDF, DOCX, ...) "
    "are searched in the extracted text read shows. Returns path:line:text rows, paths relative to the working "
    "folder; a match in dataroom/ starts with a source id [sN] to cite. Context rows are path-line-text. "
    f"At most `limit` matches; output cut at {LIMIT_NOTE}; lines cut at {MAX_LINE_CHARS} characters.",
    properties={
        "pattern": {"type": "string", "description": "regular expression (or literal text with literal=true)",
                    "maxLength": 500},
        "path": OPTIONAL_PATH_ARGUMENT,
        "glob": {"type": "string", "description": "only files matching this glob, e.g. '*.md' or '**/*.txt'",
                 "maxLength": 500, "minLength": 0},
        "ignoreCase": {"type": "boolean", "description": "case-insensitive search", "default": False},
        "literal": {"type": "boolean", "description": "treat the pattern as literal text", "default": False},
        "context": {"type": "integer", "description": "lines to show before and after each match", "default": 0,
                    "minimum": 0, "maximum": 20},
        "limit": {"type": "integer", "description": "most matches to return", "default": 100, "minimum": 1,
                  "maximum": 1000},
    },
    required=["pattern"],
)
def grep(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    target = existing(ctx, args.get("path") or ".", "Path")
    if not target.is_dir():  # ripgrep would wait forever on a FIFO it is named (it skips them in folders)
        os.close(open_regular(target, relative_to_work(ctx.work_dir, target)))
    folder, where = (target, ".") if target.is_dir() else (target.parent, target.name)
    context, limit, glob = args["context"], args["limit"], args.get("glob")
    search = ["--json"] + ["--ignore-case"] * args["ignoreCase"] + ["--fixed-strings"] * args["literal"]
    search += ["--context", str(context)] if context else []
    search += ["--regexp", args["pattern"]]
    rows: list[_GrepRow | None] = []  # None: the "--" between two groups of lines
    matches, limit_hit, lines_cut = 0, False, False
    last: tuple[str, int] | None = None
    last_match = 0
    # A pause or stop kills ripgrep at once, wherever the search is.
    with subprocess.Popen(rg_command(ctx, folder, glob) + search + ["--", where], cwd=folder,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as rg, \
            on_cut(ctx.cancel, rg.kill):
        assert rg.stdout is not None and rg.stderr is not None
        documents = _document_events(ctx, folder, where, glob, search)
        try:
            for path, event in heapq.merge(_plain_events(ctx, folder, rg.stdout), documents, key=_path_order):
                data = event["data"]
                is_match = event["type"] == "match"
                if is_match and matches == limit:
                    limit_hit = True
                    break
                number = data["line_number"]
                if matches == limit and (last is None or path != last[0] or number > last_match + context):
                    continue  # the lead-in context of a match past the limit
                matches += is_match
                last_match = number if is_match else last_match
                if context and last is not None and last != (path, number - 1):
                    rows.append(None)
                line, was_cut = shorten_line(rg_text(data["lines"]).rstrip("\r\n"))
                lines_cut = lines_cut or was_cut
                rows.append(_GrepRow(path, number, is_match, line))
                last = (path, number)
        finally:
            documents.close()
        if limit_hit:
            rg.kill()
        errors = rg.stderr.read().decode("utf-8", "replace").strip()
        code = rg.wait()
    if code < 0 and not limit_hit and ctx.cancel is not None:  # killed for a cut: not the search's result
        ctx.cancel.check()
    if not matches:
        if code == 2 and errors:
            raise ToolArgumentError(f"grep: {errors}")
        return ToolResult("No matches found", details={"matches": 0}, gist=counted(0, "matches", []))
    # Cut with the widest id every match row could get, so the rows shown with their real ids fit too.
    widest = f"[s{len(ctx.ledger.sources()) + matches}] "
    cut = truncate_head("\n".join(_grep_row(row, widest) for row in rows), max_bytes=ctx.max_bytes)
    shown = rows[:cut.shown_lines]
    ids = _cite_matches(ctx, shown, context)
    notes = []
    if limit_hit:
        notes.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine the pattern")
    if cut.truncated:
        notes.append(f"{limit_note(ctx)} output limit reached; narrow the search with path or glob")
    if lines_cut:
        notes.append(f"Some lines were cut to {MAX_LINE_CHARS} characters. Use read to see them whole")
    text = noted("\n".join(_grep_row(row, f"[{ids[n]}] " if n in ids else "") for n, row in enumerate(shown)), notes)
    sources = list(dict.fromkeys(ids.values()))
    return ToolResult(text, details={"matches": matches, "limit_reached": limit_hit, "truncated": cut.truncated,
                                     "sources": sources}, sources=sources,
                      gist=counted(matches, "matches", [row.path for row in shown if row and row.is_match]))


class _GrepRow(NamedTuple):
    path: str  # relative to work/
    number: int  # 1-based, as read numbers the file's lines
    is_match: bool
    line: str  # cut to MAX_LINE_CHARS


def _grep_row(row: _GrepRow | None, source: str) -> str:
    """ripgrep's row (path:line:text for a match, path-line-text for context); a match row cited in the
    ledger starts with its id."""
    if row is None:
        return "--"
    if row.is_match:
        return f"{source if row.path.startswith(DATAROOM_DIR + '/') else ''}{row.path}:{row.number}:{row.line}"
    return f"{row.path}-{row.number}-{row.line}"


def _cite_matches(ctx: ToolContext, rows: list[_GrepRow | None], context: int) -> dict[int, str]:
    """The source id of each shown match row of a dataroom file: a range of the match line and the
    context lines shown around it, merged with the ranges it overlaps, so one passage is one source."""
    ids: dict[int, str] = {}
    for block in _blocks(rows):
        first, last = block[0][1].number, block[-1][1].number
        ranges: list[tuple[list[int], int, int]] = []  # (indices of the match rows, first line, last line)
        for index, row in block:
            if row.is_match and row.path.startswith(DATAROOM_DIR + "/"):
                low, high = max(row.number - context, first), min(row.number + context, last)
                if ranges and low <= ranges[-1][2]:  # matches come in line order: only the last can overlap
                    ranges[-1] = ([*ranges[-1][0], index], ranges[-1][1], max(high, ranges[-1][2]))
                else:
                    ranges.append(([index], low, high))
        for indices, low, high in ranges:
            text = "\n".join(row.line for _, row in block if low <= row.number <= high)
            source = ctx.ledger.cite_range(block[0][1].path, low, high, text)
            ids.update(dict.fromkeys(indices, source.id))
    return ids


def _blocks(rows: list[_GrepRow | None]) -> Iterator[list[tuple[int, _GrepRow]]]:
    """Runs of rows on consecutive lines of one file, with their indices."""
    block: list[tuple[int, _GrepRow]] = []
    for index, row in enumerate(rows):
        if block and (row is None or (row.path, row.number - 1) != (block[-1][1].path, block[-1][1].number)):
            yield block
            block = []
        if row is not None:
            block.append((index, row))
    if block:
        yield block


def _path_order(found: tuple[str, dict[str, Any]]) -> list[str]:
    """ripgrep's --sort path order: by name within each folder, folder by folder."""
    return found[0].split("/")


def _plain_events(ctx: ToolContext, folder: Path, stream: IO[bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """ripgrep's match and context events with their paths relative to work/, less those of documents,
    whose bytes are not the text read shows (_document_events searches that)."""
    for event in rg_events(stream):
        if event["type"] in ("match", "context"):
            path = under_work(ctx, folder, rg_text(event["data"]["path"]))
            if not is_document(path):
                yield path, event


def _document_events(ctx: ToolContext, folder: Path, where: str, glob: str | None,
                     search: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The match and context events of the dataroom's documents (PDF, DOCX, ...) under `where`, in path
    order: ripgrep searches the extracted text read shows, so a match's line number is the line read
    shows it on, and a cited range opens on the right lines."""
    listed = subprocess.run(rg_command(ctx, folder, glob) + ["--files", "--", where], cwd=folder,
                            stdin=subprocess.DEVNULL, capture_output=True)
    for name in listed.stdout.decode("utf-8", "surrogateescape").splitlines():
        rel = under_work(ctx, folder, name)
        if not is_document(rel):
            continue
        if ctx.cancel is not None:  # extracting a document can take seconds: look between two
            ctx.cancel.check()
        text = _document_text(ctx, rel)
        # --text: the extracted text is searched whole, as read shows it, even where it holds a NUL.
        with subprocess.Popen([rg_binary(), "--no-config", "--color=never", "--text", *search, "-"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as rg:
            assert rg.stdin is not None and rg.stdout is not None
            # Fed from a thread: ripgrep writes matches while it reads, and a full pipe either way would stall both.
            feeder = threading.Thread(target=_feed, args=(rg.stdin, text), daemon=True)
            feeder.start()
            try:
                for event in rg_events(rg.stdout):
                    if event["type"] in ("match", "context"):
                        yield rel, event
                if rg.wait() == 2:
                    return  # a bad pattern, bad in every document: the search of the other files says why
            finally:  # also when grep stops early (its limit reached): the search must not outlive it
                rg.kill()
                feeder.join()


def _document_text(ctx: ToolContext, rel: str) -> bytes:
    """A document's text as read shows it (nothing where read cannot show it), kept while the file is
    unchanged: extracting a dataroom's PDFs and workbooks is most of a grep's time, and a run greps often."""
    stat = (ctx.work_dir / rel).stat()
    key = (str(ctx.work_dir.resolve() / rel), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _DOCUMENT_TEXTS_LOCK:
        if key in _DOCUMENT_TEXTS:
            _DOCUMENT_TEXTS.move_to_end(key)
            return _DOCUMENT_TEXTS[key]
    try:
        text = "\n".join(document_lines(ctx, rel)).encode("utf-8", "replace")
    except ToolArgumentError:
        text = b""
    with _DOCUMENT_TEXTS_LOCK:
        _DOCUMENT_TEXTS[key] = text
        while sum(map(len, _DOCUMENT_TEXTS.values())) > _DOCUMENT_TEXT_BYTES:  # the least recently searched go
            _DOCUMENT_TEXTS.popitem(last=False)
    return text


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError):  # ripgrep was stopped before it read everything
        pipe.write(data)
        pipe.close()
