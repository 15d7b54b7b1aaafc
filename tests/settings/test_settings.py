"""Settings: one object resolves every knob, section by section, from defaults, presets, environment and overrides."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from searchbox.settings import Settings, SettingsError
from searchbox.settings.bundles import RETRIEVAL_PRESETS
from searchbox.settings.docs import knob_docs, knobs_markdown
from searchbox.settings.resolved import SECTIONS, knob_fields

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_match_the_spec() -> None:
    s = Settings.resolve(env={})
    assert (s.context_window, s.max_output_tokens) == (131072, 8192)
    assert (s.embed_backend, s.rerank_backend) == ("local", "local")
    assert s.embed_model == "jinaai/jina-embeddings-v5-text-small"
    assert s.rerank_model == "jinaai/jina-reranker-v3"
    assert (s.embed_device, s.min_free_vram_mb) == ("cpu", 1500)
    assert s.searchbox_tools is None
    assert (s.turn_budget, s.force_budget, s.budget_metric) == (10, False, "input")
    assert (s.chunk_size, s.chunk_overlap) == (1400, 180)
    assert s.search_mode == "dense"


def test_environment_then_overrides() -> None:
    env = {"CHUNK_SIZE": "900", "FORCE_BUDGET": "true", "SEARCH_MODE": "hybrid", "TURN_BUDGET": "4"}
    s = Settings.resolve(env=env, turn_budget=7)
    assert (s.chunk_size, s.force_budget, s.search_mode, s.turn_budget) == (900, True, "hybrid", 7)


def test_empty_tools_differs_from_unset() -> None:
    assert Settings.resolve(env={"SEARCHBOX_TOOLS": ""}).searchbox_tools == ""
    assert Settings.resolve(env={}).searchbox_tools is None


def test_preset_fills_only_what_the_user_did_not_set() -> None:
    s = Settings.resolve(env={"RETRIEVAL_PRESET": "cpu", "RERANK_MODEL": "my/reranker"})
    assert s.embed_model == RETRIEVAL_PRESETS["cpu"]["embed_model"]
    assert s.dense_prefilter == RETRIEVAL_PRESETS["cpu"]["dense_prefilter"]
    assert s.rerank_model == "my/reranker"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CHUNK_SIZE": "big"}, "CHUNK_SIZE must be a whole number"),
        ({"EMBED_BACKEND": "cloud"}, "EMBED_BACKEND must be one of local, api"),
        ({"CHUNK_OVERLAP": "900"}, "CHUNK_OVERLAP"),
        ({"TURN_BUDGET": "0"}, "TURN_BUDGET"),
        ({"RETRIEVAL_PRESET": "turbo"}, "RETRIEVAL_PRESET must be one of"),
        ({"PROMPT_DATE": "2 December 2026"}, "PROMPT_DATE must be a date, YYYY-MM-DD"),
    ],
)
def test_bad_values_get_clear_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.resolve(env=env)


def test_unknown_override_is_refused() -> None:
    with pytest.raises(SettingsError, match="unknown setting"):
        Settings.resolve(env={}, turbo=True)


def test_config_records_every_knob_but_no_secret() -> None:
    s = Settings.resolve(env={"JINA_API_KEY": "jina_secret_value"})
    config = s.as_config()
    assert set(config) == {k["name"] for k in knob_docs()}
    assert config["JINA_API_KEY"] == "set"
    assert "jina_secret_value" not in repr(config)


def test_the_knobs_page_is_generated_from_settings() -> None:
    page = (ROOT / "docs" / "knobs.md").read_text()
    assert page == knobs_markdown(), "docs/knobs.md is stale: python -m searchbox knobs --markdown > docs/knobs.md"
    assert all(f"| `{k['name']}` |" in page for k in knob_docs())


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest" in readme and "python -m pytest" in ci


def test_switching_preset_per_run_applies_its_bundle() -> None:
    base = Settings.resolve(env={})
    cpu = base.with_overrides(retrieval_preset="cpu")
    assert (cpu.embed_model, cpu.search_mode, cpu.dense_prefilter) == ("minishlab/potion-retrieval-32M", "hybrid", 1000)
    back = cpu.with_overrides(retrieval_preset="packaged")
    assert (back.embed_model, back.search_mode, back.dense_prefilter) == ("packaged:minilm", "hybrid", 50)
    assert back.with_overrides(retrieval_preset="default").dense_prefilter == 0  # a knob the new preset leaves resets
    static = base.with_overrides(retrieval_preset="packaged-static")
    assert (static.search_mode, static.hybrid_bm25_candidates) == ("hybrid", 10)  # both help on both question sets
    mixed = base.with_overrides(retrieval_preset="cpu", search_mode="dense")
    assert mixed.search_mode == "dense" and mixed.rerank_model == "none"


def test_the_sampling_seed_is_a_number_or_unset() -> None:
    assert Settings.resolve(env={}).llm_seed is None
    assert Settings.resolve(env={"LLM_SEED": "7"}).llm_seed == 7
    assert Settings.resolve(env={}, llm_seed="42").with_overrides(llm_seed=3).llm_seed == 3
    assert Settings.resolve(env={"LLM_SEED": " "}).llm_seed is None
    with pytest.raises(SettingsError, match="LLM_SEED must be a whole number"):
        Settings.resolve(env={"LLM_SEED": "lucky"})


def test_every_knob_is_in_one_section_and_the_page_lists_it_there() -> None:
    names = [f.name for section in SECTIONS for f in fields(section)]
    assert len(names) == len(set(names)) == len(knob_fields())  # a name in two sections would hide one of them
    page = knobs_markdown()
    for section in SECTIONS:
        heading = page.index(f"\n## {section.TITLE}\n")
        following = [page.find(f"\n## {other.TITLE}\n") for other in SECTIONS]
        end = min((at for at in following if at > heading), default=len(page))
        assert all(f"| `{f.name.upper()}` |" in page[heading:end] for f in fields(section)), section.TITLE


def test_on_a_space_with_persistent_storage_the_caches_go_where_a_restart_keeps_them(tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from searchbox.settings import storage

    data = tmp_path / "data"
    monkeypatch.setattr(storage, "SPACE_STORAGE", str(data))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPACE_ID", raising=False)
    data.mkdir()
    home_cache = str(tmp_path / "home" / ".cache" / "searchbox")
    assert Settings.resolve(env={}).cache_dir == home_cache  # not a Space: a /data is not ours to fill
    monkeypatch.setenv("SPACE_ID", "someone/searchbox")
    settings = Settings.resolve(env={})
    assert settings.cache_dir == str(data / "searchbox") and settings.jobs_dir == str(data / "searchbox" / "jobs")
    assert Settings.resolve(env={"SEARCHBOX_CACHE_DIR": "/elsewhere"}).cache_dir == "/elsewhere"  # an operator's choice
    data.rmdir()  # a Space without persistent storage
    assert Settings.resolve(env={}).cache_dir == home_cache
