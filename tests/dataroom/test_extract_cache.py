"""The on-disk extraction cache with real documents: a second extraction of the same bytes is read
back identical, wherever the file sits; a changed file, a damaged entry or an unwritable folder
falls back to extracting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dataroom_factories import make_docx, make_pdf, make_xlsx

from searchbox.dataroom import extract
from searchbox.dataroom.extract import extract_dataroom
from searchbox.dataroom.extract_cache import ExtractionCache
from searchbox.dataroom.work_dir import extraction_cache
from searchbox.settings import Settings


@pytest.fixture
def room(tmp_path: Path) -> Path:
    root = tmp_path / "room"
    (root / "legal").mkdir(parents=True)
    make_pdf(root / "legal" / "lease.pdf", ["The lease ends in 2031.", "Rent is EUR 4,000 a month."])
    make_docx(root / "board.docx", ["The board met in May."], [["item", "vote"], ["budget", "yes"]])
    make_xlsx(root / "kpis.xlsx", {"2025": [["metric", "value"], ["revenue", 12]]})
    (root / "notes.md").write_text("# Notes\nThe auditor is Brightwater LLP.\n")
    (root / "photo.heic").write_bytes(b"\x00" * 10)  # no extractor: never cached
    return root


def as_rows(files: list[extract.ExtractedFile]) -> list[tuple]:
    return [(f.path, f.status, f.reason, f.text) for f in files]


def test_a_second_extraction_is_read_back_identical(room: Path, tmp_path: Path) -> None:
    cache = ExtractionCache(tmp_path / "cache")
    fresh = extract_dataroom(room)
    first = extract_dataroom(room, cache.extract)
    assert (cache.hits, cache.misses) == (0, 4)
    again = ExtractionCache(tmp_path / "cache")  # another run, another process: only the folder is shared
    second = extract_dataroom(room, again.extract)
    assert (again.hits, again.misses) == (4, 0)
    assert as_rows(first) == as_rows(second) == as_rows(fresh)
    assert "Brightwater" in dict((f.path, f.text) for f in second)["notes.md"]


def test_the_same_bytes_elsewhere_hit_and_a_changed_file_misses(room: Path, tmp_path: Path) -> None:
    cache = ExtractionCache(tmp_path / "cache")
    extract_dataroom(room, cache.extract)
    (room / "legal" / "lease.pdf").rename(room / "lease-copy.pdf")
    (room / "notes.md").write_text("# Notes\nThe auditor is now Harbourline.\n")
    cache.hits = cache.misses = 0
    files = {f.path: f for f in extract_dataroom(room, cache.extract)}
    assert (cache.hits, cache.misses) == (3, 1)
    assert "2031" in files["lease-copy.pdf"].text and "Harbourline" in files["notes.md"].text


def test_a_damaged_entry_is_extracted_again_and_rewritten(room: Path, tmp_path: Path) -> None:
    cache = ExtractionCache(tmp_path / "cache")
    extract_dataroom(room, cache.extract)
    entries = sorted((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 4
    entries[0].write_bytes(b"\x00garbage{")
    entries[1].write_text('{"status": "ok"}')  # valid JSON, not an entry
    cache.hits = cache.misses = 0
    assert as_rows(extract_dataroom(room, cache.extract)) == as_rows(extract_dataroom(room))
    assert (cache.hits, cache.misses) == (2, 2)
    assert ExtractionCache(tmp_path / "cache").extract(room, "notes.md").status == "ok"


def test_an_unwritable_cache_folder_is_not_used(room: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    cache = ExtractionCache(blocked)
    assert as_rows(extract_dataroom(room, cache.extract)) == as_rows(extract_dataroom(room))
    assert "extraction cache not written" in caplog.text


def test_files_skipped_by_their_size_are_not_hashed(room: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract, "MAX_FILE_BYTES", 100)
    cache = ExtractionCache(tmp_path / "cache")
    files = {f.path: f for f in extract_dataroom(room, cache.extract)}
    assert files["board.docx"].status == "skipped" and "limit" in files["board.docx"].reason
    assert cache.misses == 1  # only notes.md is small enough to extract (and to cache)


def test_a_file_that_failed_is_tried_again_next_time(room: Path, tmp_path: Path) -> None:
    (room / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    cache = ExtractionCache(tmp_path / "cache")
    assert cache.extract(room, "broken.pdf").status == "error"
    assert cache.extract(room, "broken.pdf").status == "error" and (cache.hits, cache.misses) == (0, 2)


def text_room(root: Path, count: int, first: int = 0) -> list[str]:
    """`count` text files of about 100 kB each, each its own text."""
    root.mkdir(parents=True, exist_ok=True)
    names = [f"doc{i}.txt" for i in range(first, first + count)]
    for name in names:
        (root / name).write_text(f"{name}\n" + f"{name} says the lease ends in 2031. " * 3_000)
    return names


def held_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.json"))


def test_the_shared_cache_keeps_the_most_recently_used_within_its_bound(tmp_path: Path) -> None:
    """EXTRACT_CACHE_MB bounds <cache dir>/extracted (issue 43: every dataroom's text stayed forever)."""
    settings = Settings.resolve(env={"SEARCHBOX_CACHE_DIR": str(tmp_path / "cache"), "EXTRACT_CACHE_MB": "1"})
    room = tmp_path / "room"
    names = text_room(room, 8)
    cache = extraction_cache(settings)
    for name in names:
        cache.extract(room, name)
    assert 700_000 < held_bytes(cache.folder) < 2**20  # eight entries of about 100 kB: under the bound
    cache.extract(room, names[0])  # used again: the most recently used now
    for name in text_room(room, 2, first=8):  # past the bound: down to 90% of it, the least recently used out
        cache.extract(room, name)
    probe = ExtractionCache(cache.folder)  # no bound: its lookups remove nothing
    probe.extract(room, names[0])
    probe.extract(room, names[1])
    assert (probe.hits, probe.misses) == (1, 1)  # the one used again stayed, the one used once went
    for name in text_room(room, 20, first=10):
        cache.extract(room, name)
    assert held_bytes(cache.folder) <= 2**20  # 30 entries written, about 3 MB


_WRITER = """
import sys
from pathlib import Path
from searchbox.dataroom.extract_cache import ExtractionCache
from searchbox.dataroom.work_dir import extraction_cache
from searchbox.settings import Settings

cache = ExtractionCache(Path(sys.argv[1]), 2**20)
for name in sys.argv[3:]:
    assert cache.extract(Path(sys.argv[2]), name).status == "ok"
"""


def test_processes_sharing_a_bounded_cache_keep_it_sound(tmp_path: Path) -> None:
    """Three processes write one bounded folder at once, removing each other's entries: every entry left is
    whole, and the folder ends within the bound and what one process wrote since it last counted."""
    room, folder = tmp_path / "room", tmp_path / "cache"
    names = text_room(room, 45)
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(folder), str(room), *names[i::3]],
                                cwd=Path(__file__).resolve().parents[2]) for i in range(3)]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0]
    entries = list(folder.rglob("*.json"))
    assert entries and all(json.loads(p.read_text())["status"] == "ok" for p in entries)
    assert held_bytes(folder) <= 2**20 * 1.3
