"""Corpus: a dataroom folder loaded into files and chunks, scoped by path, listed for the UI."""

from __future__ import annotations

from pathlib import Path

import pytest
from dataroom_factories import make_pdf

from searchbox.dataroom import Corpus
from searchbox.settings import Settings


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    (tmp_path / "reports" / "2024").mkdir(parents=True)
    (tmp_path / "reports" / "2024" / "q1.md").write_text("Revenue grew. " * 300)
    (tmp_path / "reports" / "summary.txt").write_text("All good.")
    (tmp_path / "reports-old").mkdir()
    (tmp_path / "reports-old" / "q4.md").write_text("Old numbers.")
    make_pdf(tmp_path / "deck.pdf", ["Slide one.", "Slide two."])
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 nothing else")
    settings = Settings.resolve(env={})
    return Corpus.load(tmp_path, settings.chunk_size, settings.chunk_overlap)


def paths_of(corpus: Corpus, indices: list[int]) -> set[str]:
    return {corpus.chunks[i].path for i in indices}


def test_load_extracts_and_chunks_every_readable_file(corpus: Corpus) -> None:
    assert [f.path for f in corpus.files] == [
        "broken.pdf",
        "deck.pdf",
        "logo.png",
        "reports-old/q4.md",
        "reports/2024/q1.md",
        "reports/summary.txt",
    ]
    assert paths_of(corpus, list(range(len(corpus.chunks)))) == {
        "deck.pdf",
        "reports-old/q4.md",
        "reports/2024/q1.md",
        "reports/summary.txt",
    }
    q1 = [c for c in corpus.chunks if c.path == "reports/2024/q1.md"]
    assert len(q1) > 1 and all(len(c.text) <= 1400 for c in q1)
    assert [c.label for c in corpus.chunks if c.path == "deck.pdf"] == ["page 1"]


def test_statuses_for_the_ingestion_table(corpus: Corpus) -> None:
    rows = {row["path"]: row for row in corpus.statuses()}
    assert rows["logo.png"] == {
        "path": "logo.png",
        "status": "skipped",
        "reason": "unsupported file type .png",
        "chars": 0,
        "chunks": 0,
    }
    assert rows["broken.pdf"]["status"] == "error" and rows["broken.pdf"]["reason"]
    assert rows["reports/summary.txt"] == {
        "path": "reports/summary.txt",
        "status": "ok",
        "reason": "",
        "chars": 9,
        "chunks": 1,
    }
    assert rows["reports/2024/q1.md"]["chunks"] == sum(c.path == "reports/2024/q1.md" for c in corpus.chunks)


def test_chunks_for_files_and_folders(corpus: Corpus) -> None:
    everything = list(range(len(corpus.chunks)))
    assert corpus.chunks_for(None) == everything
    assert corpus.chunks_for(["."]) == everything
    assert paths_of(corpus, corpus.chunks_for(["deck.pdf"])) == {"deck.pdf"}
    # A folder prefix matches whole path components only: "reports" is not "reports-old".
    assert paths_of(corpus, corpus.chunks_for(["reports"])) == {"reports/2024/q1.md", "reports/summary.txt"}
    assert paths_of(corpus, corpus.chunks_for(["./reports/2024/"])) == {"reports/2024/q1.md"}
    assert paths_of(corpus, corpus.chunks_for(["reports-old", "deck.pdf"])) == {"reports-old/q4.md", "deck.pdf"}
    assert corpus.chunks_for(["missing.md"]) == []
    assert corpus.chunks_for([]) == []
    indices = corpus.chunks_for(["reports"])
    assert indices == sorted(indices)


def test_file_lookup(corpus: Corpus) -> None:
    deck = corpus.file("deck.pdf")
    assert deck is not None and deck.text == "Slide one.\n\nSlide two."
    assert corpus.file("nope.md") is None
