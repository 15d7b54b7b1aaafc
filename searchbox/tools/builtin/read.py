"""read: a file's lines, documents of the dataroom as their extracted text, each range a source."""

from __future__ import annotations

from typing import IO, Any
from collections.abc import Iterable

from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.gist import clip
from searchbox.tools.builtin.common import LIMIT_NOTE, PATH_ARGUMENT, document_lines, existing, is_document
from searchbox.tools.paths import open_regular, relative_to_work
from searchbox.tools.tool import ToolContext, ToolResult, tool
from searchbox.tools.truncate import MAX_BYTES, MAX_LINES, Truncation, format_size, truncate_head

_SNIFF_BYTES = 8192
_BLOCK_BYTES = 1 << 20
# Bytes kept of one line: just past the byte limit, so the truncation still says the line was cut.
_LINE_BYTES = MAX_BYTES + 1


@tool(
    brief="Read a file (documents in dataroom/ as text); offset and limit read on.",
    description="Read a file. Text files are shown as they are; documents in dataroom/ (PDF, DOCX, XLSX, e-mail, "
    f"HTML, notebooks) as their extracted text. Output is cut at {LIMIT_NOTE}; use offset/limit to read on. "
    "Each read gets a source id [sN] to cite.",
    properties={
        "path": PATH_ARGUMENT,
        "offset": {"type": "integer", "description": "line number to start at (1-based)", "default": 1, "minimum": 1},
        "limit": {"type": "integer", "description": "how many lines to read at most", "minimum": 1},
    },
    required=["path"],
)
def read(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path, offset, limit = args["path"], args.get("offset") or 1, args.get("limit")
    target = existing(ctx, path, "File")
    if target.is_dir():
        raise ToolArgumentError(f"'{path}' is a directory; use ls to list it")
    rel = relative_to_work(ctx.work_dir, target)
    with open(open_regular(target, rel), "rb") as handle:  # a FIFO or device would block or never end
        extracted = is_document(rel)
        if extracted:
            lines, total = _select(document_lines(ctx, rel), offset, limit, ctx.max_bytes)
        else:
            if b"\x00" in handle.read(_SNIFF_BYTES):
                raise ToolArgumentError(
                    f"'{rel}' is a binary file; inspect it with bash (e.g. `file`, `strings`, `xxd | head`)"
                )
            handle.seek(0)
            lines, total = _text_lines(handle, offset, limit, ctx.max_bytes)
    if total == 0:
        empty = ": no text could be extracted" if extracted else ""
        return ToolResult(f"[{rel} is empty{empty}]", details={"path": rel})
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
    whole = first == 1 and last == total
    gist = note.strip("[]") if note else f"{total} lines (the whole file)" if whole else f"lines {first}-{last} of {total}"
    return ToolResult(text + (f"\n\n{note}" if note else ""), details=details, sources=[source.id], gist=clip(gist))


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
