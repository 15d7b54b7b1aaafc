"""The one truncation rule for built-in tool output (design §2.4): at most 2000 lines or 50 KB, whichever
comes first. read, grep, find and ls keep the head; bash keeps the tail. Each tool turns the returned
`Truncation` into its own actionable note ("Use offset=2001 to continue.", "Full output: ...").
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
# grep shows single lines: a minified file must not fill the whole budget with one match.
MAX_LINE_CHARS = 500
HEAD_CUT_MARKER = " [... line cut]"
TAIL_CUT_MARKER = "[... line cut] "


@dataclass(frozen=True)
class Truncation:
    text: str  # what is kept
    truncated: bool
    truncated_by: str | None  # "lines", "bytes" or None
    total_lines: int
    total_bytes: int
    shown_lines: int  # lines (whole or cut) in `text`
    shown_bytes: int
    partial_line: bool  # a single line longer than the byte limit was cut, with a marker


def truncate_head(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncation:
    """Keep the first whole lines that fit; a first line longer than `max_bytes` is cut."""
    return _truncate(text, max_lines, max_bytes, from_end=False)


def truncate_tail(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncation:
    """Keep the last whole lines that fit; a last line longer than `max_bytes` keeps its end."""
    return _truncate(text, max_lines, max_bytes, from_end=True)


def shorten_line(line: str, max_chars: int = MAX_LINE_CHARS) -> tuple[str, bool]:
    """One line cut to `max_chars` characters, with a marker; and whether it was cut."""
    if len(line) <= max_chars:
        return line, False
    return line[:max_chars] + HEAD_CUT_MARKER, True


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB".replace(".0KB", "KB")
    return f"{n / 1024 / 1024:.1f}MB"


def byte_size(text: str) -> int:
    return len(_encode(text))


def _encode(text: str) -> bytes:
    # surrogatepass: file names decoded with surrogateescape must not crash a size check
    return text.encode("utf-8", "surrogatepass")


def _split_lines(text: str) -> list[str]:
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):  # a final newline ends the last line; it does not start another
        lines.pop()
    return lines


def _truncate(text: str, max_lines: int, max_bytes: int, *, from_end: bool) -> Truncation:
    lines = _split_lines(text)
    total_bytes = byte_size(text)
    ordered = reversed(lines) if from_end else iter(lines)
    kept: list[str] = []
    used = 0
    truncated_by: str | None = None
    partial = False
    for line in ordered:
        if len(kept) == max_lines:
            truncated_by = "lines"
            break
        size = byte_size(line) + (1 if kept else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            if not kept:  # the one line does not fit: keep what fits of it, never half a character
                kept.append(_cut_tail(line, max_bytes) if from_end else _cut_head(line, max_bytes))
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) == len(lines) and not partial:
        return Truncation(text, False, None, len(lines), total_bytes, len(lines), total_bytes, False)
    if from_end:
        kept.reverse()
    shown = "\n".join(kept)
    return Truncation(shown, True, truncated_by, len(lines), total_bytes, len(kept), byte_size(shown), partial)


def _cut_head(line: str, max_bytes: int) -> str:
    room = max(max_bytes - byte_size(HEAD_CUT_MARKER), 0)
    return _encode(line)[:room].decode("utf-8", "ignore") + HEAD_CUT_MARKER


def _cut_tail(line: str, max_bytes: int) -> str:
    room = max(max_bytes - byte_size(TAIL_CUT_MARKER), 0)
    data = _encode(line)
    return TAIL_CUT_MARKER + data[len(data) - room :].decode("utf-8", "ignore")
