"""chunk_file: bounded, overlapping windows that end at natural breaks and map back to the text."""

from __future__ import annotations

import random
import string

import pytest

from searchbox.dataroom import Chunk, ExtractedFile, Segment, chunk_file
from searchbox.dataroom.chunking import heading_trail


def text_file(text: str, path: str = "doc.md") -> ExtractedFile:
    return ExtractedFile(path, "ok", segments=[Segment(None, text)])


def check_invariants(f: ExtractedFile, chunks: list[Chunk], size: int) -> None:
    text = f.text
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.path == f.path
        assert c.text == text[c.start : c.end]
        assert 0 < c.end - c.start <= size
        assert c.text.strip() and c.text == c.text.strip()
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end < b.end
        assert not text[a.end : b.start].strip()  # nothing between neighbours is lost
    if text.strip():
        assert chunks[0].start == len(text) - len(text.lstrip())
        assert chunks[-1].end == len(text.rstrip())


def test_short_file_is_one_chunk() -> None:
    f = text_file("  A short note.\n")
    assert chunk_file(f, 100, 10) == [Chunk("doc.md", 0, 2, 15, "A short note.", None, "A short note.")]  # its first line is its title


def test_empty_file_has_no_chunks() -> None:
    assert chunk_file(text_file(""), 100, 10) == []
    assert chunk_file(text_file(" \n\t\n"), 100, 10) == []


def test_prefers_paragraph_then_line_then_sentence_then_word() -> None:
    para = "word " * 17 + "end.\n\n" + "next " * 40
    assert chunk_file(text_file(para), 100, 0)[0].text.endswith("end.")
    line = "word " * 17 + "end\n" + "next " * 40
    assert chunk_file(text_file(line), 100, 0)[0].text.endswith("end")
    sentence = "word " * 17 + "end. " + "next " * 40
    assert chunk_file(text_file(sentence), 100, 0)[0].text.endswith("end.")
    words = "abcdefg " * 40
    first = chunk_file(text_file(words), 100, 0)[0]
    assert first.text.endswith("abcdefg") and first.end - first.start <= 100


def test_a_break_early_in_the_window_is_not_used() -> None:
    text = "intro.\n\n" + "word " * 60  # the paragraph break lies outside the last fifth of the window
    first = chunk_file(text_file(text), 100, 0)[0]
    assert first.end - first.start > 80


def test_an_unbroken_run_is_cut_at_the_size() -> None:
    text = "x" * 250
    chunks = chunk_file(text_file(text), 100, 10)
    assert [(c.start, c.end) for c in chunks] == [(0, 100), (90, 190), (180, 250)]


def test_overlap_is_shared_and_starts_at_a_word() -> None:
    words = [f"w{i:03d}" for i in range(400)]
    text = " ".join(words)
    chunks = chunk_file(text_file(text), 200, 50)
    check_invariants(text_file(text), chunks, 200)
    for a, b in zip(chunks, chunks[1:]):
        shared = a.end - b.start
        assert 40 <= shared <= 50
        assert text[b.start - 1] == " "  # a neighbour starts at a word, not inside one


def test_labels_follow_the_segment_of_the_chunk_start() -> None:
    pages = [Segment(f"page {n}", f"Page {n} says " + "blah " * 50) for n in (1, 2, 3)]
    f = ExtractedFile("r.pdf", "ok", segments=pages)
    chunks = chunk_file(f, 120, 20)
    check_invariants(f, chunks, 120)
    for c in chunks:
        page = f.text.count("\n\n", 0, c.start) + 1
        assert c.label == f"page {page}"
    assert {c.label for c in chunks} == {"page 1", "page 2", "page 3"}


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        chunk_file(text_file("abc"), 100, 100)
    with pytest.raises(ValueError):
        chunk_file(text_file("abc"), 0, 0)


def test_random_texts_keep_the_invariants() -> None:
    rng = random.Random(1234)
    alphabet = string.ascii_letters + "      ..!?\n\n\t" + "é日本"
    for _ in range(300):
        n = rng.randint(0, 3000)
        text = "".join(rng.choice(alphabet) for _ in range(n))
        if rng.random() < 0.2:
            text = "y" * rng.randint(0, 500) + text  # long unbroken runs
        size = rng.randint(20, 400)
        overlap = rng.randint(0, size // 2)
        f = text_file(text)
        chunks = chunk_file(f, size, overlap)
        check_invariants(f, chunks, size)


def test_five_megabytes_chunk_whole() -> None:
    # Speed is measured by bench/retrieval.py; this checks a big text chunks correctly.
    rng = random.Random(7)
    vocabulary = ["revenue", "grew", "in", "the", "third", "quarter", "churn", "cohort", "board", "memo"]
    sentence = lambda: " ".join(rng.choices(vocabulary, k=rng.randint(5, 20))) + ". "  # noqa: E731
    paragraphs = ["".join(sentence() for _ in range(rng.randint(1, 8))) for _ in range(2000)]
    text = "\n\n".join(paragraphs)
    text = (text * (5_000_000 // len(text) + 1))[:5_000_000]
    f = text_file(text)
    chunks = chunk_file(f, 1400, 180)
    assert len(chunks) > 3500
    check_invariants(f, chunks, 1400)


def test_each_chunk_carries_the_headings_in_force_where_it_starts() -> None:
    text = ("# Guide\n\nIntro.\n\n## Install\n\n```bash\n# not a heading\npip install x\n```\n\n"
            "### On Windows\n\nUse the wheel.\n\n## Usage\n\nCall it.\n")
    assert [trail for _, trail in heading_trail(text)] == [  # no "not a heading": a comment in fenced code
        "Guide", "Guide > Install", "Guide > Install > On Windows", "Guide > Usage"]  # a sibling replaces the deeper section
    by_start = {c.text.split("\n")[0]: c.heading for c in chunk_file(text_file(text), 30, 0)}
    assert by_start["# Guide"] == "Guide"
    assert by_start["Use the wheel."] == "Guide > Install > On Windows"
    assert by_start["Call it."] == "Guide > Usage"


def test_restructuredtext_underlines_are_headings_and_plain_files_take_their_first_line() -> None:
    rst = "Cache\n=====\n\nIntro text.\n\nEviction\n~~~~~~~~\n\nLeast recently used.\n"
    assert [c.heading for c in chunk_file(text_file(rst, "cache.rst"), 25, 0)][-1] == "Cache > Eviction"
    csv_chunks = chunk_file(text_file("id | country | arr\n" + "7 | UK | 10\n" * 20, "customers.csv"), 60, 0)
    assert {c.heading for c in csv_chunks} == {"id | country | arr"}  # the header row names every chunk's columns


def test_indexed_text_names_the_file_in_words() -> None:
    (chunk,) = chunk_file(text_file("id | shares\n12 | 4000", "05_hr/option_grants_2025.csv"), 100, 0)
    assert chunk.indexed_text() == "05 hr option grants 2025 csv | id | shares\nid | shares\n12 | 4000"


def test_comments_in_code_are_not_headings() -> None:
    code = "import os\n\n# load the settings\nvalue = 1\n\n# then run\nrun(value)\n"
    assert {c.heading for c in chunk_file(text_file(code, "tool.py"), 30, 0)} == {"import os"}
