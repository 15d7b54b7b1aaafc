"""The job folder (design §2.7): every path in it, and reading and writing its record files.

One owner, so that a reader finds a record where the writer left it, and so that each record file says
which schema wrote it. Version 0 is what searchbox wrote before records carried a version (the same
shape, no `schema_version`, and sources.json a bare list); a file from a newer searchbox is refused
with a clear error rather than misread.

    <job>/query.txt  config.json  input.zip  run_meta.json  timing.json  sources.json
          session.jsonl  events.jsonl  turns.jsonl  snapshots/ANSWER-t<N>.md  bundle.zip  score.json
          download/ANSWER.md (the copy handed out)
          work/ANSWER.md  work/dataroom/ (read-only)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.records.files import append_jsonl, read_json, read_jsonl, write_json
from searchbox.records.work_files import ANSWER_MAX_BYTES, WorkFile, create_new, entry_exists, read_bytes, read_text

SCHEMA_VERSION = 1
ANSWER_NAME = "ANSWER.md"
WORK_NAME = "work"
DATAROOM_NAME = "dataroom"


class RecordVersionError(ValueError):
    """A record file written by a newer searchbox than this one."""


def record_version(data: Any, path: Path) -> int:
    """The schema version of one record (a JSON object or a JSONL row); 0 when it has none."""
    version = data.get("schema_version", 0) if isinstance(data, dict) else 0
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise RecordVersionError(f"{path} has schema_version {version!r}; this searchbox reads up to "
                                 f"{SCHEMA_VERSION}: open it with a newer searchbox")
    return version


@dataclass(frozen=True)
class JobFolder:
    root: Path

    # -- paths ---------------------------------------------------------------------------------

    @property
    def work(self) -> Path:
        """The agent's working folder: the only place its tools see."""
        return self.root / WORK_NAME

    @property
    def dataroom(self) -> Path:
        return self.work / DATAROOM_NAME

    @property
    def answer(self) -> Path:
        return self.work / ANSWER_NAME

    @property
    def question_file(self) -> Path:
        return self.root / "query.txt"

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def input_zip(self) -> Path:
        return self.root / "input.zip"

    @property
    def run_meta(self) -> Path:
        return self.root / "run_meta.json"

    @property
    def timing(self) -> Path:
        return self.root / "timing.json"

    @property
    def sources(self) -> Path:
        return self.root / "sources.json"

    @property
    def session(self) -> Path:
        return self.root / "session.jsonl"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def turns(self) -> Path:
        return self.root / "turns.jsonl"

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    @property
    def score(self) -> Path:
        """The run's score (`python -m searchbox score`, or a sweep's judged run with the judge's prompt and reply)."""
        return self.root / "score.json"

    @property
    def bundle(self) -> Path:
        return self.root / "bundle.zip"

    @property
    def downloads(self) -> Path:
        """The app's own copies of work/ files it hands out (download/ANSWER.md): never a path into work/."""
        return self.root / "download"

    # -- records ---------------------------------------------------------------------------------

    def question(self) -> str:
        return self.question_file.read_text(encoding="utf-8").strip()

    def write_question(self, question: str) -> None:
        self.question_file.write_text(question.strip() + "\n", encoding="utf-8")

    def read_answer(self) -> WorkFile:
        """ANSWER.md as written so far, read as work/ must be (no link followed, size capped); its
        `problem` says why it was not read when something else stands at the name."""
        return read_text(self.work, ANSWER_NAME, ANSWER_MAX_BYTES)

    def answer_text(self) -> str:
        """ANSWER.md's text; empty when there is none or it was refused."""
        return self.read_answer().text

    def answer_bytes(self) -> bytes | None:
        """ANSWER.md's bytes (at most ANSWER_MAX_BYTES); None when there is no answer file or it was refused."""
        try:
            return read_bytes(self.work, ANSWER_NAME, ANSWER_MAX_BYTES)[0]
        except OSError:
            return None

    def has_answer(self) -> bool:
        """Whether anything stands at work/ANSWER.md (a link counts: it is not for the app to write through)."""
        return entry_exists(self.work, ANSWER_NAME)

    def create_answer(self, text: str) -> bool:
        """Write ANSWER.md when there is no answer file; a link or FIFO the model left there is removed, never
        written through. False when a file (or a folder) already holds the name."""
        return create_new(self.work, ANSWER_NAME, text, replace_special=True)

    def read_meta(self) -> dict[str, Any]:
        return self._read_object(self.run_meta)

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._write_object(self.run_meta, meta)

    def read_timing(self) -> dict[str, Any]:
        return self._read_object(self.timing)

    def write_timing(self, timing: dict[str, Any]) -> None:
        self._write_object(self.timing, timing)

    def read_config(self) -> dict[str, Any]:
        return self._read_object(self.config)

    def write_config(self, config: dict[str, Any]) -> None:
        self._write_object(self.config, config)

    def read_turns(self) -> list[dict[str, Any]]:
        rows = read_jsonl(self.turns)
        for row in rows:
            record_version(row, self.turns)
        return rows

    def append_turn(self, row: dict[str, Any]) -> None:
        append_jsonl(self.turns, {"schema_version": SCHEMA_VERSION, **row})

    def read_sources(self) -> list[dict[str, Any]]:
        """The source ledger's rows; version 0 wrote a bare list."""
        data = read_json(self.sources, [])
        if isinstance(data, list):
            return data
        record_version(data, self.sources)
        return list(data.get("sources", []))

    def write_sources(self, rows: list[dict[str, Any]]) -> None:
        write_json(self.sources, {"schema_version": SCHEMA_VERSION, "sources": rows})

    def _read_object(self, path: Path) -> dict[str, Any]:
        """A JSON object record without its version key; {} when the file is missing or unreadable."""
        data = read_json(path, {}) or {}
        if not isinstance(data, dict):
            return {}
        record_version(data, path)
        return {key: value for key, value in data.items() if key != "schema_version"}

    def _write_object(self, path: Path, data: dict[str, Any]) -> None:
        write_json(path, {"schema_version": SCHEMA_VERSION, **data})
