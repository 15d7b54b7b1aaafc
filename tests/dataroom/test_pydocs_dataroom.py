"""Checks of the second dataroom (assets/pydocs_dataroom.zip: documentation shipped inside Python
packages) and its question set (assets/pydocs_questions.jsonl): well-formed, licences noted, every
answer grounded in the text of its gold files, and the dataroom loads and indexes."""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from testkit.question_checks import fact_problems
from conftest import make_engine

from searchbox.assets import PYDOCS_DATAROOM, PYDOCS_QUESTIONS
from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.evaluation.questions import load_questions
from searchbox.settings import Settings

BUILDER = PYDOCS_DATAROOM.parent / "pydocs_source" / "build.py"
TYPES = {"literal", "paraphrased", "multihop", "aggregate", "negative"}
QUESTION_KEYS = {"id", "question", "answer", "must_facts", "gold_files", "type"}


@pytest.fixture(scope="module")
def texts(pydocs_texts: dict[str, str]) -> dict[str, str]:
    return pydocs_texts


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return load_questions(PYDOCS_QUESTIONS)


def test_dataroom_is_small_normalised_and_notes_every_licence(texts: dict[str, str]) -> None:
    assert PYDOCS_DATAROOM.stat().st_size < 1024 * 1024
    with zipfile.ZipFile(PYDOCS_DATAROOM) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)
    assert all(i.date_time == (2026, 1, 1, 0, 0, 0) for i in infos)
    assert 30 <= len(texts) <= 80, len(texts)
    licences = texts["LICENSES.md"]
    listed = dict(re.findall(r"^\| (\S+) \| \S+ \| (.+?) \| \d+ \|$", licences, re.M))
    assert listed and all(re.search(r"MIT|BSD|Apache", lic) for lic in listed.values()), listed
    documents = set(texts) - {"LICENSES.md"}
    credited = set(re.findall(r"`([^`]+\.(?:md|rst))`", licences))
    assert documents <= credited, sorted(documents - credited)  # every document is under a named licence


def test_questions_are_well_formed_and_cover_every_type(questions: list[dict]) -> None:
    assert len(questions) >= 30
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert QUESTION_KEYS <= set(q) <= QUESTION_KEYS | {"computed_facts"}, q["id"]
        assert q["question"].strip() and q["answer"].strip() and q["must_facts"] and q["gold_files"], q["id"]
    counts = collections.Counter(q["type"] for q in questions)
    assert set(counts) == TYPES and min(counts.values()) >= 6, counts


def test_every_fact_is_in_a_gold_file_and_every_gold_file_holds_a_fact(questions: list[dict],
                                                                        texts: dict[str, str]) -> None:
    problems = fact_problems(questions, texts)
    assert not problems, "\n".join(map(str, problems))



def _installed_versions(licences: str) -> bool:
    rows = re.findall(r"^\| (\S+) \| (\S+) \| .+? \| \d+ \|$", licences, re.M)
    try:
        return all(metadata.version(name) == version for name, version in rows)
    except metadata.PackageNotFoundError:
        return False


def test_builder_reproduces_the_committed_zip(tmp_path: Path, texts: dict[str, str]) -> None:
    if not _installed_versions(texts["LICENSES.md"]):
        pytest.skip("the installed packages differ from those the dataroom was built from")
    done = subprocess.run([sys.executable, str(BUILDER), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / PYDOCS_DATAROOM.name).read_bytes() == PYDOCS_DATAROOM.read_bytes()


def test_dataroom_loads_and_keyword_search_finds_a_gold_file(tmp_path: Path, packaged_settings: Settings,
                                                             minilm, questions: list[dict]) -> None:
    engine = make_engine(prepare_work_dir(tmp_path / "job", PYDOCS_DATAROOM), packaged_settings, minilm)
    assert len(engine.corpus.files) >= 30 and all(f.status == "ok" for f in engine.corpus.files)
    q = next(q for q in questions if q["id"] == "p005")  # the Olivetti faces: dates and laboratory
    top = engine.corpus.chunks[engine.keyword_search(q["question"], 1)[0].chunk].path
    assert top in q["gold_files"]


@pytest.mark.slow
def test_dataroom_indexes_densely_and_finds_a_paraphrased_question(tmp_path: Path, packaged_settings: Settings,
                                                                   minilm, questions: list[dict]) -> None:
    engine = make_engine(prepare_work_dir(tmp_path / "job", PYDOCS_DATAROOM), packaged_settings, minilm)
    q = next(q for q in questions if q["id"] == "p010")  # the sloth: no query word in common but "sloth"
    hits, _ = engine.hybrid_search(q["question"], 5)
    assert q["gold_files"][0] in {engine.corpus.chunks[h.chunk].path for h in hits}
