"""One run of a job, start or resume: the workspace, the tools, the records and the loop wired
together. The app's scheduler, sweeps and `python -m searchbox run` all start a run through
`connect_and_run`; `run_job` runs one with a model already at hand. Either way the run's settings are
fitted once, in run_job (agent/run_settings.py), and recorded in config.json before anything of the run
itself (its workspace, its records, the events after the model's loading notices) is written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from searchbox.agent.assists.evidence import SMALL_MODEL_ASSIST_EVIDENCE
from searchbox.agent.control import RunControl
from searchbox.agent.harness import harness_record
from searchbox.records.events import EventBus, Listener, Notice, Stop
from searchbox.agent.native import NativeDriver
from searchbox.agent.pi.install import pi_problem
from searchbox.agent.pi.driver import PiDriver
from searchbox.agent.prompts import run_system_prompt
from searchbox.agent.recording import RunRecording
from searchbox.agent.run_settings import fit_run_settings
from searchbox.agent.support_judge import configured_judge
from searchbox.agent.toolbox import RunToolbox, tools_on_offer
from searchbox.agent.turns import TurnMachine
from searchbox.llm.dialects.call_parsing import with_call_parsing
from searchbox.llm.disclosure import endpoint_name
from searchbox.llm.choice.presets import AutoPick, Preset
from searchbox.llm.types import ChatModel
from searchbox.records.job_folder import JobFolder
from searchbox.records.recorder import RunRecorder
from searchbox.settings import Settings
from searchbox.tools.catalog.search import DENSE_TOOLS
from searchbox.tools.sandbox import dataroom_mount_readonly, requested_level
from searchbox.workspace import Workspace

if TYPE_CHECKING:
    from searchbox.llm.llamacpp.model import KeptPrefix


def preset_assists(settings: Settings) -> dict[str, Any]:
    """Why each assist a small model's preset turned on is on (the evidence in agent/assists/evidence.py), when
    the preset chose them."""
    if "HARNESS_ASSISTS" not in settings.derived_config():
        return {}
    return {"preset_assists": {name: SMALL_MODEL_ASSIST_EVIDENCE.get(name, "") for name in settings.assists}}


def run_info(toolbox: RunToolbox, model: ChatModel, settings: Settings,
             llm_auto: AutoPick | None = None) -> dict[str, Any]:
    """What run_meta.json says of the run's setup: fixed for the run, so taken once at its start (what the
    retrieval loads, which a run learns as it goes, the recording asks the workspace at each write)."""
    return {
        **({"llm_auto": llm_auto.record()} if llm_auto else {}),
        "harness": harness_record(settings),
        "model_id": model.model_id,
        # THINKING as asked, and why it does not do that here when the backend cannot pass it on
        "thinking": {"level": settings.thinking, "no_effect": model.thinking_effect(settings.thinking)},
        "tools_enabled": toolbox.names,
        "backends": {
            "llm": "openai" if settings.llama_url else "llamacpp",
            **({"llm_runtime": model.runtime} if model.runtime else {}),
            "embed": {"backend": settings.embed_backend, "model": settings.embed_model},
            "rerank": {"backend": settings.rerank_backend, "model": settings.rerank_model},
        },
        "derived": settings.derived_config(),  # limits fitted to the model, not set by the user
        **preset_assists(settings),
        "airgap": toolbox.sandbox_level.airgap,
        "bash_filesystem": toolbox.sandbox_level.filesystem,
        "bash_sandbox": toolbox.sandbox_level.record(),
        "dataroom_readonly_for_bash": dataroom_mount_readonly(requested_level(settings)),
    }


def run_job(job_dir: Path, settings: Settings, model: ChatModel, listeners: list[Listener] | None = None,
            control: RunControl | None = None, llm_auto: AutoPick | None = None, preset: Preset | None = None) -> str:
    """Run the job in job_dir until it stops; returns the stop reason. Resumes when the job has a session.
    `settings`: the run's as asked, fitted here to `model` and this machine (fit_run_settings; `preset`: the
    catalog entry of the built-in model that runs, whose limits apply); `llm_auto`: what LLM_GGUF=auto picked
    for it, and why."""
    control = control or RunControl()
    folder = JobFolder(job_dir)
    recorded = folder.read_config()  # a resumed run's, from its first start; {} before
    settings, notes = fit_run_settings(settings, model, preset=preset, recorded=recorded)
    config = settings.as_config()
    if config != recorded:  # config.json's one writer: a resume rewrites it only where the settings differ
        folder.write_config(config)
    model = with_call_parsing(model, settings.tool_call_parsing)
    workspace = Workspace.open(job_dir, settings, control.token)  # a stop request cuts the tool that runs
    workspace.judge, judge_client = configured_judge(settings, lambda: model)
    toolbox = RunToolbox(workspace, settings)
    recording = RunRecording(workspace, RunRecorder(job_dir, settings), run_info(toolbox, model, settings, llm_auto))
    bus = EventBus(folder.events, [recording, *(listeners or [])])
    thinking = model.thinking_effect(settings.thinking)
    for note in [*notes, *toolbox.notes, *([thinking] if thinking else [])]:
        bus.emit(Notice(level="warning", message=note))
    if settings.background_index and DENSE_TOOLS & set(toolbox.names):
        workspace.start_indexing()  # the model's first step overlaps it
    try:
        return make_loop(job_dir, settings, model, toolbox, bus, control).run(folder.question())
    finally:
        workspace.stop_indexing()
        if judge_client is not None:
            judge_client.close()


def run_prompt_head(settings: Settings) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The system message and tool schemas a native run with these settings opens with: what every run of a
    configuration sends before its question."""
    _, tools = tools_on_offer(settings)
    schemas = tools.schemas(settings.tool_descriptions)
    return {"role": "system", "content": run_system_prompt(settings, schemas)}, schemas


def keep_prompt_prefix(settings: Settings, on_note: Callable[[str], None]) -> KeptPrefix | None:
    """Boot the built-in model these settings pick and have it hold the prompt prefix their runs start with
    today (system prompt and tool schemas): loaded from the prefix store, or evaluated and kept there. The app
    does it at start-up, so that its first visitor does not pay for it. None where runs use an endpoint (or a
    pool of them), the Pi harness, or LLM_PREFIX_CACHE_MB=0."""
    from searchbox.llm.choice.connect import connect_for_run
    from searchbox.llm.llamacpp.model import LlamaCppModel

    if settings.llama_url or settings.searchbox_endpoints or settings.harness != "native" or settings.llm_prefix_cache_mb <= 0:
        return None
    connection = connect_for_run(settings, on_note=on_note)
    if not isinstance(connection.model, LlamaCppModel):
        return None
    system, schemas = run_prompt_head(fit_run_settings(settings, connection.model, preset=connection.preset)[0])
    return connection.model.keep_prefix([system], schemas or None)


def make_loop(job_dir: Path, settings: Settings, model: ChatModel, toolbox: RunToolbox, bus: EventBus,
              control: RunControl) -> TurnMachine:
    """The turn machine, its turns driven by the harness HARNESS names: `run(question)` returns the stop reason."""
    return TurnMachine(job_dir, settings, model, toolbox, bus, control,
                       PiDriver if settings.harness == "pi" else NativeDriver)


def connect_and_run(job_dir: Path, settings: Settings, control: RunControl, listeners: list[Listener]) -> str:
    """What every run goes through (the app's scheduler, sweeps, the CLI): boot (or reuse) the model, saying so
    on the run's event stream, then run.

    The llama.cpp runtime keeps one loaded model per GGUF and context size, so later runs reuse it.
    """
    import time

    from searchbox.llm.choice.connect import connect_for_run

    boot = EventBus(JobFolder(job_dir).events, listeners)
    if settings.harness == "pi" and (problem := pi_problem()):  # before minutes of model loading, not after
        boot.emit(Notice(level="error", message=problem))
        boot.emit(Stop(reason="error_harness", done=False))
        return "error_harness"
    last_report = [0.0]

    def progress(done: int, total: int | None) -> None:
        if time.monotonic() - last_report[0] > 1.0 or (total and done >= total):
            last_report[0] = time.monotonic()
            share = f" ({100 * done / total:.0f}%)" if total else ""
            boot.emit(Notice(level="info", message=f"downloading the model: {done / 2**20:,.0f} MB{share}"))

    boot.emit(Notice(level="info", message=_loading_message(settings)))
    started = time.monotonic()
    connection = connect_for_run(settings, on_note=lambda note: boot.emit(Notice(level="warning", message=note)),
                                 progress=progress)
    model = connection.model
    boot.emit(Notice(level="info", message=f"model {model.model_id} ready in {time.monotonic() - started:.1f} s"))
    try:
        return run_job(job_dir, settings, model, listeners, control, connection.auto, connection.preset)
    finally:
        if settings.llama_url:  # an HTTP client is cheap to remake; a loaded llama.cpp model is kept
            model.close()


def _loading_message(settings: Settings) -> str:
    """Which model the run is about to use, before the wait for it: the endpoint as llm.disclosure lets a
    visitor see it (a public app's feed is every visitor's), its host for an operator (a URL may carry
    credentials); a local GGUF's file name only (the folder is the server's)."""
    if settings.llama_url:
        where = endpoint_name(settings, settings.llama_url) or urlsplit(settings.llama_url).hostname
        return f"connecting to {settings.model_id or 'the model'} at {where}"
    gguf = Path(settings.llm_gguf).name if os.path.isabs(settings.llm_gguf) else settings.llm_gguf
    return f"loading the model {gguf} (a first load reads the whole file)"
