"""Which model boots, and with which limits: the embedded default offline, its fallbacks, and limits
fitted to the model unless the user set them (recorded as derived in the run's records).

The packaged models are real and load for real (llama.cpp, on the CPU); the hub is offline.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
from pathlib import Path

import huggingface_hub.constants
import pytest

from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.agent.assists.evidence import SMALL_MODEL_ASSIST_EVIDENCE
from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.choice.connect import connect_for_run
from searchbox.llm.errors import LLMError, PackagedModelUnavailable
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.llm.weights.packaged import PACKAGED, PACKAGED_GEMMA, PACKAGED_QWEN_05B, PACKAGED_QWEN_15B, Part
from searchbox.llm.choice.cpu_speed import CpuSpeed
from searchbox.llm.llamacpp.speed import Speed
from searchbox.llm.choice.presets import PRESETS, SMALL_MODEL_ASSISTS, AutoPick, auto_pick, find_preset, fit_limits
from searchbox.records.files import read_json
from searchbox.records.job_folder import SCHEMA_VERSION
from searchbox.settings import Settings, SettingsError
from searchbox.settings.docs import knob_docs

NOT_CACHED = "searchbox-tests/never-cached-GGUF:model-Q4_K_M.gguf"
# The module, not the function searchbox.llm re-exports under the same name.
connect_module = importlib.import_module("searchbox.llm.choice.connect")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def machine(monkeypatch: pytest.MonkeyPatch, ram_mb: int, speed: CpuSpeed | None = None) -> None:
    """This machine, as connect sees it: no GPU, ram_mb of available memory, and a CPU of this speed, else one
    whose speed is unknown (auto then picks a packaged model; tests/llm/test_auto_pick.py has the speed rule)."""
    monkeypatch.setattr(connect_module, "free_vram_mb", lambda: 0)
    monkeypatch.setattr(connect_module, "available_ram_mb", lambda: ram_mb)
    monkeypatch.setattr(connect_module, "cpu_speed", lambda *args, **kwargs: speed)


def uninstall(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    """As if one part package of `spec` were not installed (use with a fresh cache: a model assembled
    and verified before is used without its packages)."""
    model = PACKAGED[spec]
    gone = Part("searchbox-tests-part-not-installed", "x/data/part99.bin")
    monkeypatch.setitem(PACKAGED, spec, dataclasses.replace(model, parts=(*model.parts, gone)))


# -- settings remember what the user set ----------------------------------------------------------


def test_settings_know_which_knobs_were_set_explicitly() -> None:
    settings = Settings.resolve(env={"MAX_OUTPUT_TOKENS": "300"}, turn_budget=2, retrieval_preset="packaged")
    assert settings.explicit == {"max_output_tokens", "turn_budget", "retrieval_preset"}  # not the preset's knobs
    later = settings.with_overrides(context_window=4096)
    assert later.explicit == settings.explicit | {"context_window"}
    fitted = later.with_derived(max_steps_per_turn=12)
    assert fitted.derived == {"max_steps_per_turn"} and fitted.explicit == later.explicit
    assert fitted.derived_config() == {"MAX_STEPS_PER_TURN": 12}
    # Bookkeeping is not a knob: not in the config a run records, not in the docs, not settable.
    assert "EXPLICIT" not in fitted.as_config() and "DERIVED" not in fitted.as_config()
    assert {k["name"] for k in knob_docs()} == set(fitted.as_config())
    assert fitted.with_overrides(max_steps_per_turn=5).derived == frozenset()  # the user's choice again


def test_limits_come_from_the_preset_unless_the_user_set_them() -> None:
    preset = find_preset(PACKAGED_QWEN_15B)
    fitted, notes = fit_limits(Settings.resolve(env={}), preset)
    assert (fitted.context_window, fitted.max_output_tokens, fitted.max_steps_per_turn) == (16384, 2048, 12)
    assert fitted.derived_config() == {"CONTEXT_WINDOW": 16384, "MAX_OUTPUT_TOKENS": 2048, "MAX_STEPS_PER_TURN": 12,
                                       "HARNESS_ASSISTS": SMALL_MODEL_ASSISTS, "TOOL_OUTPUT_BYTES": 2048,
                                       "TOOL_DESCRIPTIONS": "brief"}
    # A small model gets the assists whose benefit was measured, each recorded with why.
    assert fitted.assists == tuple(SMALL_MODEL_ASSIST_EVIDENCE) and notes == []

    mine = Settings.resolve(env={"MAX_OUTPUT_TOKENS": "300", "CONTEXT_WINDOW": "24000", "FORCE_TOOL_STEPS": "0",
                                 "TOOL_OUTPUT_BYTES": "51200", "TOOL_DESCRIPTIONS": "full"})
    fitted, notes = fit_limits(mine, preset)
    assert (fitted.context_window, fitted.max_output_tokens, fitted.max_steps_per_turn) == (24000, 300, 12)
    assert (fitted.force_tool_steps, fitted.tool_output_bytes, fitted.tool_descriptions) == (0, 51200, "full")
    assert fitted.derived_config() == {"MAX_STEPS_PER_TURN": 12, "HARNESS_ASSISTS": SMALL_MODEL_ASSISTS} and notes == []
    assert "force_tool_steps" not in fitted.assists and "forced_tool" not in fitted.assists  # FORCE_TOOL_STEPS=0 is the user's
    # The user's own assists, even none, are never replaced by the preset's.
    fitted, _ = fit_limits(Settings.resolve(env={"HARNESS_ASSISTS": ""}), preset)
    assert fitted.assists == () and "harness_assists" not in fitted.derived
    # Under Pi no assist runs, so the preset fills in none (config.json showed all eight before).
    fitted, _ = fit_limits(Settings.resolve(env={"HARNESS": "pi"}), preset)
    assert fitted.harness_assists == "" and "HARNESS_ASSISTS" not in fitted.derived_config()
    with pytest.raises(SettingsError, match="HARNESS=pi runs no assists"):
        Settings.resolve(env={"HARNESS": "pi", "HARNESS_ASSISTS": "wrap_up"})

    # Past what the model takes, the user's window is capped, with a note, and recorded as derived.
    fitted, notes = fit_limits(Settings.resolve(env={}, context_window=100_000), preset)
    assert fitted.context_window == 32768 and fitted.derived_config()["CONTEXT_WINDOW"] == 32768
    assert len(notes) == 1 and "capped at 32768" in notes[0] and "CONTEXT_WINDOW=100000" in notes[0]


def test_the_production_preset_derives_nothing_from_the_defaults() -> None:
    fitted, _ = fit_limits(Settings.resolve(env={}), PRESETS[0])
    assert fitted.derived == frozenset()


@pytest.mark.parametrize(("ram_mb", "name"), [(3_000, "qwen2.5-coder-1.5b"), (2_000, "qwen2.5-coder-0.5b"),
                                              (1_000, "gemma3-270m")])
def test_small_machines_pick_the_packaged_models(ram_mb: int, name: str) -> None:
    assert auto_pick(0, ram_mb, lambda: None, 90).preset.name == name


# -- the embedded default, for real -----------------------------------------------------------------


@pytest.mark.real_model
def test_auto_offline_boots_the_packaged_instruct_model_with_its_limits(
    offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CPU fast enough that auto picks the hub's Qwen3-1.7B, which is not cached.
    machine(monkeypatch, ram_mb=4_500, speed=CpuSpeed(Speed(prefill_tps=2_000.0, decode_tps=500.0), 468, 0.0))
    notes: list[str] = []
    requested = Settings.resolve(env={})
    connection = connect_for_run(requested, on_note=notes.append)
    assert connection.model.model_id == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert connection.model.context_window == 16384
    settings, _ = fit_limits(requested, connection.preset)  # as the run's settings are fitted (run_settings.py)
    assert settings.derived_config() == {"CONTEXT_WINDOW": 16384, "MAX_OUTPUT_TOKENS": 2048, "MAX_STEPS_PER_TURN": 12,
                                         "HARNESS_ASSISTS": SMALL_MODEL_ASSISTS, "TOOL_OUTPUT_BYTES": 2048,
                                         "TOOL_DESCRIPTIONS": "brief"}
    assert connection.auto.preset.gguf == PACKAGED_QWEN_15B and ", but " in connection.auto.why  # run_meta's llm_auto
    [fallback] = notes  # one note says what auto picked and why it fell back
    assert fallback.startswith("LLM_GGUF=auto picked unsloth/Qwen3-1.7B-GGUF") and ", but unsloth/Qwen3-1.7B" in fallback
    assert "HF_HUB_OFFLINE is set" in fallback and f"falling back to {PACKAGED_QWEN_15B}" in fallback


@pytest.mark.real_model
def test_a_hub_gguf_that_cannot_be_had_falls_back_to_the_embedded_model(
    offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(monkeypatch, ram_mb=8_000)
    notes: list[str] = []
    settings = Settings.resolve(env={}, llm_gguf=NOT_CACHED, max_output_tokens=256)
    connection = connect_for_run(settings, on_note=notes.append)
    assert connection.model.model_id == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert fit_limits(settings, connection.preset)[0].max_output_tokens == 256  # the user's own setting wins
    assert len(notes) == 1 and NOT_CACHED in notes[0] and PACKAGED_QWEN_15B in notes[0]


@pytest.mark.real_model
def test_without_the_15b_packages_the_05b_boots_and_the_note_says_why(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    machine(monkeypatch, ram_mb=4_500)
    uninstall(monkeypatch, PACKAGED_QWEN_15B)
    notes: list[str] = []
    requested = Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path))
    connection = connect_for_run(requested, on_note=notes.append)
    assert connection.model.model_id == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert fit_limits(requested, connection.preset)[0].max_output_tokens == 1024
    fallback = notes[-1]
    assert f"falling back to {PACKAGED_QWEN_05B}" in fallback
    assert "searchbox-tests-part-not-installed==0.2.0" in fallback and "pip install -r requirements.txt" in fallback


def test_a_packaged_model_the_user_named_is_not_swapped_for_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    uninstall(monkeypatch, PACKAGED_QWEN_05B)
    with pytest.raises(PackagedModelUnavailable, match="pip install -r requirements.txt"):
        connect_for_run(Settings.resolve(env={}, llm_gguf=PACKAGED_QWEN_05B, searchbox_cache_dir=str(tmp_path)))


@pytest.mark.real_model
def test_with_no_packaged_instruct_model_gemma_is_the_last_resort(
    offline: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    machine(monkeypatch, ram_mb=4_500)
    uninstall(monkeypatch, PACKAGED_QWEN_15B)
    uninstall(monkeypatch, PACKAGED_QWEN_05B)
    notes: list[str] = []
    settings = Settings.resolve(env={}, context_window=2048, searchbox_cache_dir=str(tmp_path))
    connection = connect_for_run(settings, on_note=notes.append)
    assert connection.model.model_id == "gemma-3-270m-q4_k_m.gguf"
    assert f"falling back to {PACKAGED_GEMMA}" in notes[-1]


# -- the run records what was derived ---------------------------------------------------------------


def test_the_run_records_the_derived_limits(tmp_path: Path) -> None:
    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    job_dir = tmp_path / "job"
    with ScriptedEndpoint([Reply(text="No tool needed.")]) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools="",
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp_path / "cache"),
                                    max_steps_per_turn=3)
        create_job(job_dir, "When does the lease end?", source, settings)
        preset = find_preset(PACKAGED_QWEN_05B)  # the preset connect_for_run would name; run_job fits its limits
        picked = AutoPick(preset, "a typical run ~40 s, within the 90 s target")
        run_job(job_dir, settings, OpenAIClient(endpoint.url, "scripted"), llm_auto=picked, preset=preset)
        sent = endpoint.requests[0].body
    assert sent["max_tokens"] == 1024
    meta = read_json(job_dir / "run_meta.json")
    # Steps per turn were the user's; a small model gets the preset's assists;
    # the prompt's day is the run's own.
    assert meta["derived"] == {"CONTEXT_WINDOW": 16384, "MAX_OUTPUT_TOKENS": 1024, "HARNESS_ASSISTS": SMALL_MODEL_ASSISTS,
                               "TOOL_OUTPUT_BYTES": 4096, "TOOL_DESCRIPTIONS": "brief",
                               "PROMPT_DATE": datetime.date.today().isoformat()}
    # forced_tool forces search_dataroom, which this run (built-ins only) does not offer.
    assert meta["harness"]["assists"] == list(SMALL_MODEL_ASSIST_EVIDENCE) and sent["tool_choice"] == "auto"
    assert meta["preset_assists"] == SMALL_MODEL_ASSIST_EVIDENCE
    assert meta["config"]["MAX_STEPS_PER_TURN"] == 3 and meta["config"]["CONTEXT_WINDOW"] == 16384
    assert meta["llm_auto"] == {"picked": "qwen2.5-coder-0.5b", "gguf": PACKAGED_QWEN_05B,
                                "why": "a typical run ~40 s, within the 90 s target"}
    assert read_json(job_dir / "config.json") == {"schema_version": SCHEMA_VERSION, **meta["config"]}


def test_the_loading_notice_names_a_local_models_file_not_the_servers_folder(tmp_path: Path) -> None:
    from searchbox.agent.control import RunControl
    from searchbox.agent.run import connect_and_run
    from searchbox.records.files import read_jsonl

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    gguf = tmp_path / "operators-models" / "mine.gguf"
    settings = Settings.resolve(env={}, llm_gguf=str(gguf), retrieval_preset="packaged",
                                searchbox_cache_dir=str(tmp_path / "cache"))
    job_dir = tmp_path / "job"
    create_job(job_dir, "When does the lease end?", source, settings)
    with pytest.raises(LLMError):  # there is no such file: the run stops after saying what it loads
        connect_and_run(job_dir, settings, RunControl(), [])
    notice = read_jsonl(job_dir / "events.jsonl")[0]
    assert notice["message"] == "loading the model mine.gguf (a first load reads the whole file)"
