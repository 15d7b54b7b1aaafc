"""Shared fixtures. Tests run offline: models come from PyPI packages, never from a hub."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The system prompt names its day, so a seeded real-model run would change from one day to the next:
# the whole suite (and the app and CLI processes it starts, which inherit this) runs on one day.
os.environ.setdefault("PROMPT_DATE", "2026-12-02")

from searchbox.assets import LIBREF_DATAROOM, PYDOCS_DATAROOM  # noqa: E402
from searchbox.dataroom.extract import extract_dataroom  # noqa: E402
from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir  # noqa: E402
from searchbox.jobs.store import JobStore  # noqa: E402
from searchbox.retrieval.cache import EmbeddingCache  # noqa: E402
from searchbox.retrieval.encoder import Encoder  # noqa: E402
from searchbox.retrieval.engine import RetrievalEngine  # noqa: E402
from searchbox.retrieval.models import embedding_cache_name, load_embedder  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.tools.registry import REGISTRY  # noqa: E402
from searchbox.citations.ledger import SourceLedger  # noqa: E402
from searchbox.tools.tool import ToolContext  # noqa: E402
from testkit.small_room import SMALL_DATAROOM, write_tree  # noqa: F401  (tests import them from here too)


def deep_chain(top: Path, depth: int, leaf: str = "f.txt") -> None:
    """`top`/d/d/.../d/`leaf`, `depth` folders deep, as one `mkdir -p` in bash or the old explorer `write` made
    it (issue #43): built through folder handles, since its path outgrows PATH_MAX."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            fd, above = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
            os.close(above)
        os.close(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


# A small dataroom whose facts the retrieval tests look for.
@pytest.fixture
def source(tmp_path: Path) -> Path:
    """The small dataroom as a folder, for job-store tests."""
    return write_tree(tmp_path / "room", SMALL_DATAROOM)


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "jobs")


@pytest.fixture(scope="session")
def packaged_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    cache = tmp_path_factory.mktemp("cache")
    return Settings.resolve(env={}, retrieval_preset="packaged", searchbox_cache_dir=str(cache))


@pytest.fixture(scope="session")
def minilm(packaged_settings: Settings):
    """The packaged MiniLM embedder, loaded once for the whole session."""
    return load_embedder(packaged_settings)


def make_engine(work: Path, settings: Settings, minilm, cache: EmbeddingCache | None = None) -> RetrievalEngine:
    encoder = Encoder(embedding_cache_name(settings), lambda: minilm, cache or EmbeddingCache())
    return RetrievalEngine(load_corpus(work, settings), settings, encoder)


@pytest.fixture
def small_work(tmp_path: Path) -> Path:
    source = write_tree(tmp_path / "source", SMALL_DATAROOM)
    return prepare_work_dir(tmp_path / "job", source)


@pytest.fixture
def tool_context(small_work: Path, packaged_settings: Settings, minilm) -> ToolContext:
    engine = make_engine(small_work, packaged_settings, minilm)
    return ToolContext(small_work, SourceLedger(), retrieval=lambda: engine)


def catalog_result(ctx: ToolContext, name: str, args: dict) -> dict:
    """A catalog tool's whole JSON result, run as every caller's toolbox runs it (`Tool.run`)."""
    result = REGISTRY[name].run(ctx, args)
    assert not result.is_error and result.data is not None, result.text
    return result.data


def zip_texts(dataroom: Path, root: Path) -> dict[str, str]:
    """Each document's text of a committed dataroom as the project's extractor sees it (wrapper folder
    stripped)."""
    with zipfile.ZipFile(dataroom) as zf:
        zf.extractall(root)
    (wrapper,) = [p for p in root.iterdir() if p.is_dir()]
    files = extract_dataroom(wrapper)
    assert all(f.status == "ok" for f in files), [(f.path, f.reason) for f in files if f.status != "ok"]
    return {f.path: f.text for f in files}


@pytest.fixture(scope="session")
def pydocs_texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return zip_texts(PYDOCS_DATAROOM, tmp_path_factory.mktemp("pydocs"))


@pytest.fixture(scope="session")
def libref_texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return zip_texts(LIBREF_DATAROOM, tmp_path_factory.mktemp("libref"))
