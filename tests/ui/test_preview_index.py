"""The upload preview's background indexing: bounded (one per address, a cap on the app), says how far it
got, and stops when the visitor's run starts, leaving its vectors for the run."""

from __future__ import annotations

from pathlib import Path

from conftest import make_engine

from searchbox.retrieval.cache import EmbeddingCache
from searchbox.settings import Settings
from searchbox.ui.preview_index import PreviewIndexing


def test_one_per_address_within_the_apps_share(small_work: Path, packaged_settings: Settings, minilm,
                                                tmp_path: Path) -> None:
    indexing = PreviewIndexing(most=1, keep_s=600)
    assert indexing.status("a") == ("", False)
    disk = tmp_path / "cache.sqlite"
    first = indexing.start("a", make_engine(small_work, packaged_settings, minilm, EmbeddingCache(disk)))
    assert first is not None
    assert indexing.start("b", make_engine(small_work, packaged_settings, minilm)) is None  # the share is taken
    assert first.wait(120)
    assert indexing.status("a") == ("Ready for search: 5 of 5 chunks embedded.", False)
    again = indexing.start("b", make_engine(small_work, packaged_settings, minilm))  # a finished one frees its place
    assert again is not None and again.wait(120)
    indexing.stop("b")
    assert indexing.status("b") == ("", False)
    # What the preview embedded is the run's: a new engine over the same disk cache embeds nothing.
    run = make_engine(small_work, packaged_settings, minilm, EmbeddingCache(disk))
    assert run.vectors().coverage(list(range(5))).complete and run.encoder.stats.texts_embedded == 0


def test_a_new_upload_of_the_address_replaces_its_last(small_work: Path, packaged_settings: Settings, minilm) -> None:
    indexing = PreviewIndexing(most=1, keep_s=600)
    first = indexing.start("a", make_engine(small_work, packaged_settings, minilm))
    second = indexing.start("a", make_engine(small_work, packaged_settings, minilm))
    assert first is not None and second is not None
    assert first.wait(120) and second.wait(120)
    status, going = indexing.status("a")
    assert status.startswith("Ready for search") and not going


def test_none_when_the_app_allows_none(small_work: Path, packaged_settings: Settings, minilm) -> None:
    assert PreviewIndexing(most=0, keep_s=600).start("a", make_engine(small_work, packaged_settings, minilm)) is None
