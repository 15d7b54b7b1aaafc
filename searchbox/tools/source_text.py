"""The text of a ledger source as the tool that recorded it showed it: what a citation checker reads.

A chunk is its characters of the file's extracted text; a range is its lines of what `read` shows
(a document's extracted text with page and sheet labels, or a text file's own lines).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

from searchbox.dataroom.extract import ExtractedFile
from searchbox.records.citation_check import UnreadableSource
from searchbox.tools.builtins import is_document
from searchbox.tools.catalog import ToolArgumentError
from searchbox.tools.paths import DATAROOM_DIR, confine, open_regular
from searchbox.tools.sources import Source

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
        with os.fdopen(open_regular(target, source.path), "r", encoding="utf-8", errors="replace") as handle:
            return "".join(itertools.islice(handle, (source.start or 1) - 1, source.end))
    except (ToolArgumentError, OSError) as exc:
        raise UnreadableSource(f"{source.path}: {exc}") from None


def _lines(source: Source) -> slice:
    return slice((source.start or 1) - 1, source.end)
