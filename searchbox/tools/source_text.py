"""The text of a ledger source as the tool that recorded it showed it: what a citation checker reads.

A chunk is its characters of the file's extracted text; a range is its lines of what `read` shows
(a document's extracted text with page and sheet labels, or a text file's own lines).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from searchbox.dataroom.extract import ExtractedFile
from searchbox.citations.check import UnreadableSource
from searchbox.tools.builtin.common import is_document
from searchbox.tools.arguments import ToolArgumentError
from searchbox.tools.paths import DATAROOM_DIR, confine, open_regular
from searchbox.citations.ledger import Source

# The most of a text file a range is looked for in: a file the agent wrote may be huge, or one endless line.
MAX_TEXT_BYTES = 8 * 2**20
Extracted = Callable[[str], ExtractedFile]  # a dataroom file's extraction, by its path relative to work/


def source_text(work_dir: Path, source: Source, extracted: Extracted) -> str:
    """Raises UnreadableSource with the reason when the text cannot be had."""
    if source.kind == "chunk" or is_document(source.path):
        if not source.path.startswith(DATAROOM_DIR + "/"):
            raise UnreadableSource(f"{source.path} is not in the dataroom")
        found = extracted(source.path)
        if found.status != "ok":
            raise UnreadableSource(f"{source.path}: {found.reason or found.status}")
        if source.kind == "chunk":
            return found.text[source.start:source.end]
        return "\n".join(found.shown_text.split("\n")[_lines(source)])
    try:
        target = confine(work_dir, source.path)
        with os.fdopen(open_regular(target, source.path), "rb") as handle:
            head = handle.read(MAX_TEXT_BYTES)
    except (ToolArgumentError, OSError) as exc:
        raise UnreadableSource(f"{source.path}: {exc}") from None
    lines = head.decode("utf-8", "replace").splitlines(keepends=True)[_lines(source)]
    if not lines:
        raise UnreadableSource(f"{source.path}: lines {source.start}-{source.end} are not in its first "
                               f"{MAX_TEXT_BYTES:,} bytes")
    return "".join(lines)


def _lines(source: Source) -> slice:
    return slice((source.start or 1) - 1, source.end)
