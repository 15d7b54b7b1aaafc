"""Checks of the third dataroom (assets/libref_dataroom.zip: the docstrings of scikit-learn and SciPy, one
page per module) and its question set (assets/libref_questions.jsonl): the size people upload, licences
noted, every answer grounded in the text of its gold files, reproducible from the installed packages,
and BM25 finds a gold file without any embedder."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from testkit.question_checks import fact_problems

from searchbox.assets import LIBREF_DATAROOM, LIBREF_QUESTIONS
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir
from searchbox.evaluation.questions import QUESTION_TYPES, load_questions
from searchbox.retrieval.cache import EmbeddingCache
from searchbox.retrieval.encoder import Encoder
from searchbox.retrieval.engine import RetrievalEngine
from searchbox.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
BUILDER = LIBREF_DATAROOM.parent / "libref_source" / "build.py"
QUESTION_KEYS = {"id", "question", "answer", "must_facts", "gold_files", "type"}


@pytest.fixture(scope="module")
def texts(libref_texts: dict[str, str]) -> dict[str, str]:
    return libref_texts


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return load_questions(LIBREF_QUESTIONS)


def test_dataroom_is_upload_sized_normalised_and_notes_every_licence(texts: dict[str, str]) -> None:
    assert LIBREF_DATAROOM.stat().st_size < 2 * 1024 * 1024  # committed: a few MB at most
    with zipfile.ZipFile(LIBREF_DATAROOM) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)
    assert all(i.date_time == (2026, 1, 1, 0, 0, 0) for i in infos)
    assert 180 <= len(texts) <= 260, len(texts)
    assert 4_500_000 <= sum(map(len, texts.values())) <= 7_000_000
    licences = texts["LICENSES.md"]
    listed = dict(re.findall(r"^\| (\S+) \| \S+ \| (.+?) \| \d+ \|$", licences, re.M))
    assert set(listed) == {"scikit-learn", "scipy"} and all(re.search(r"MIT|BSD|Apache", v) for v in listed.values())
    documents = set(texts) - {"LICENSES.md"}
    credited = set(re.findall(r"`([^`]+\.md)`", licences))
    assert documents <= credited, sorted(documents - credited)  # every document is under a named licence


def test_questions_are_well_formed_and_cover_every_type(questions: list[dict]) -> None:
    assert len(questions) >= 24
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert set(q) == QUESTION_KEYS, q["id"]
    counts = collections.Counter(q["type"] for q in questions)
    assert set(counts) == set(QUESTION_TYPES) and min(counts.values()) >= 4, counts
    # Some answers need two documents, of the two libraries.
    two_libraries = [q for q in questions if {f.split("/")[0] for f in q["gold_files"]} == {"sklearn", "scipy"}]
    assert len(two_libraries) >= 3, [q["id"] for q in two_libraries]


def test_every_fact_is_in_a_gold_file_and_every_gold_file_holds_a_fact(questions: list[dict],
                                                                        texts: dict[str, str]) -> None:
    problems = fact_problems(questions, texts)
    assert not problems, "\n".join(map(str, problems))



def _built_here(licences: str) -> bool:
    """Whether the installed packages and Python are those the committed room was built from."""
    rows = re.findall(r"^\| (\S+) \| (\S+) \| .+? \| \d+ \|$", licences, re.M)
    python = re.search(r"`ast` module of Python (\d+\.\d+)", licences)
    try:
        versions = all(metadata.version(name) == version for name, version in rows)
    except metadata.PackageNotFoundError:
        return False
    return versions and python is not None and python[1] == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_builder_reproduces_the_committed_zip(tmp_path: Path, texts: dict[str, str]) -> None:
    if not _built_here(texts["LICENSES.md"]):
        pytest.skip("the installed packages differ from those the dataroom was built from")
    done = subprocess.run([sys.executable, str(BUILDER), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / LIBREF_DATAROOM.name).read_bytes() == LIBREF_DATAROOM.read_bytes()


def test_dataroom_chunks_at_upload_size_and_keyword_search_needs_no_embedder(tmp_path: Path,
                                                                              questions: list[dict]) -> None:
    settings = Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"))
    corpus = load_corpus(prepare_work_dir(tmp_path / "job", LIBREF_DATAROOM), settings)
    assert all(f.status == "ok" for f in corpus.files)
    assert 4_000 <= len(corpus.chunks) <= 6_500, len(corpus.chunks)

    def no_embedder():
        raise AssertionError("BM25 must not load an embedder")

    engine = RetrievalEngine(corpus, settings, Encoder("none", no_embedder, EmbeddingCache()))
    q = next(q for q in questions if q["id"] == "l015")  # two documents, one of each library
    top = {corpus.chunks[h.chunk].path for h in engine.keyword_search(q["question"], 10)}
    assert set(q["gold_files"]) <= top, top


def test_retrieval_eval_measures_bm25_alone_on_the_room(tmp_path: Path) -> None:
    """What the finding's recall rests on: the command over this room and set, BM25 only, no model loaded."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "searchbox", "retrieval-eval", "--dataroom", str(LIBREF_DATAROOM),
               "--questions", str(LIBREF_QUESTIONS), "--out", str(tmp_path / "out")]
    refused = subprocess.run(command + ["--methods", "bm25,dense2"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 2 and "dense2" in refused.stderr
    done = subprocess.run(command + ["--methods", "bm25"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "retrieval.json").read_text())
    assert list(result["methods"]) == ["bm25"] and result["questions"] == len(load_questions(LIBREF_QUESTIONS))
    assert result["methods"]["bm25"]["all"]["R@10"] >= 0.8  # the set names what it asks about: BM25 finds most
