"""From settings to a chat model: the endpoint at LLAMA_URL, or the built-in llama.cpp runtime.

LLM_GGUF takes a local path, `repo_id:filename`, a packaged model (`packaged:qwen2.5-coder-1.5b`, ...),
a preset name, or `auto` (the largest preset the GPU holds, or on a CPU the largest fast enough here:
presets.auto_pick). When the GGUF must come from a hub
that cannot be used and is not cached, the embedded model is booted instead: the packaged
Qwen2.5-Coder-1.5B-Instruct, else the 0.5B, else Gemma 3 270M, whichever is installed and fits; one
note says so. The catalog preset of the model booted comes back with it: its limits (context, output cap,
steps per turn...) apply to the knobs the user left alone when the run's settings are fitted
(agent/run_settings.py); its context window is the one the model is loaded with.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from searchbox.llm.choice.cpu_speed import cpu_speed
from searchbox.llm.choice.presets import PRESETS, AutoPick, Preset, auto_pick, context_window_for, find_preset, fits
from searchbox.llm.clients.openai_client import OpenAIClient
from searchbox.llm.disclosure import endpoint_name
from searchbox.llm.errors import GGUFUnavailable, PackagedModelUnavailable
from searchbox.llm.llamacpp.model import load_llamacpp
from searchbox.llm.llamacpp.prefix_store import PrefixStore
from searchbox.llm.types import ChatModel
from searchbox.llm.weights.gguf import Progress, resolve_gguf
from searchbox.settings import Settings

log = logging.getLogger(__name__)

Note = Callable[[str], None]


@dataclass(frozen=True)
class Connection:
    model: ChatModel
    preset: Preset | None = None  # the catalog entry of the built-in model booted, whose limits a run's settings get
    auto: AutoPick | None = None  # what LLM_GGUF=auto picked and why


def connect(settings: Settings, *, on_note: Note | None = None, progress: Progress | None = None) -> ChatModel:
    """The chat model the settings ask for. Notes (choices, fallbacks, caps) go to `on_note`, else the log."""
    return connect_for_run(settings, on_note=on_note, progress=progress).model


def connect_for_run(settings: Settings, *, on_note: Note | None = None,
                    progress: Progress | None = None) -> Connection:
    """The chat model, with the catalog preset whose limits a run with it gets (fit_run_settings) and what
    LLM_GGUF=auto picked."""
    note = on_note or log.warning
    if settings.llama_url:
        if borrowed_key(settings) and not _said_borrowed_key.is_set():
            _said_borrowed_key.set()
            note("LLAMA_API_KEY is unset: the key in OPENAI_API_KEY is sent to the endpoint")
        return Connection(endpoint_client(settings, settings.llama_url, settings.model_id))
    preset, path, auto = _choose_gguf(settings, note, progress)
    window = context_window_for(settings, preset) if preset is not None else settings.context_window
    return Connection(load_llamacpp(path, window, prefix_store(settings), settings.llm_kv_cache, settings.llm_threads),
                      preset, auto)


def endpoint_client(settings: Settings, url: str, model_id: str) -> OpenAIClient:
    """A client of the endpoint at `url` with the run's key, streaming mode, timeouts and attempts."""
    return OpenAIClient(url, model_id, api_key=settings.llama_api_key, stream=settings.llm_stream,
                        read_timeout_s=settings.llm_timeout_seconds, max_attempts=settings.llm_attempts,
                        shown_as=endpoint_name(settings, url))


def borrowed_key(settings: Settings) -> bool:
    """Whether the run's key is OPENAI_API_KEY's, read because LLAMA_API_KEY was not given (Settings.resolve)."""
    return bool(settings.llama_api_key) and "llama_api_key" not in settings.explicit


# The OPENAI_API_KEY fallback is said once per process: it is the operator's setup, not news to every run.
_said_borrowed_key = threading.Event()


def auto_pick_here(settings: Settings, *, measure: bool = True) -> AutoPick:
    """What LLM_GGUF=auto picks on this machine; `measure=False` uses only a CPU speed measured before."""
    return auto_pick(free_vram_mb(), available_ram_mb(),
                     lambda: cpu_speed(settings.cache_dir, settings.models_dir, measure=measure),
                     settings.llm_auto_target_seconds)


def prefix_store(settings: Settings) -> PrefixStore | None:
    """Where the built-in runtime keeps shared prompt prefixes across processes; None when LLM_PREFIX_CACHE_MB=0."""
    if settings.llm_prefix_cache_mb <= 0:
        return None
    return PrefixStore(Path(settings.prefixes_dir), settings.llm_prefix_cache_mb * 2**20)


def _choose_gguf(settings: Settings, note: Note,
                 progress: Progress | None) -> tuple[Preset | None, Path, AutoPick | None]:
    spec = settings.llm_gguf.strip()
    auto = auto_pick_here(settings) if spec == "auto" else None
    picked = ""
    if auto is not None:
        spec = auto.preset.gguf
        picked = f"LLM_GGUF=auto picked {spec}: {auto.why}"
    elif (named := find_preset(spec)) is not None:
        spec = named.gguf
    try:
        path = resolve_gguf(spec, progress=progress, models_dir=settings.models_dir)
        if picked:
            note(picked)
        return find_preset(spec), path, auto
    except GGUFUnavailable as exc:
        reason = str(exc)
    except PackagedModelUnavailable as exc:
        if auto is None:  # the user named this packaged model: say what to install rather than swap it
            raise
        reason = str(exc)
    preset, path, passed = _embedded(settings, spec)
    skipped = f" ({'; '.join(passed)})" if passed else ""
    # One note for the pick and the fallback: the reason names the file again.
    note(f"{picked + ', but ' if picked else ''}{reason}: falling back to {preset.gguf}{skipped}: {preset.note}")
    fallback = None if auto is None else AutoPick(preset, f"{auto.preset.name} picked ({auto.why}), but {reason}",
                                                  auto.speed_unknown)
    return preset, path, fallback


def _embedded(settings: Settings, unavailable: str) -> tuple[Preset, Path, list[str]]:
    """The first packaged model that is installed and fits this machine, largest first (the smallest
    is tried even when it does not fit); also why the larger ones were passed over."""
    vram, ram = free_vram_mb(), available_ram_mb()
    candidates = [p for p in PRESETS if p.packaged and p.gguf != unavailable]
    passed: list[str] = []
    for preset in candidates:
        if preset is not candidates[-1] and not fits(preset, vram, ram):
            passed.append(f"{preset.gguf} needs {preset.min_ram_mb} MB of RAM")
            continue
        try:
            return preset, resolve_gguf(preset.gguf, models_dir=settings.models_dir), passed
        except PackagedModelUnavailable as exc:
            passed.append(str(exc))
    raise PackagedModelUnavailable("no packaged model can be booted either: " + "; ".join(passed))


def free_vram_mb() -> int:
    """Free memory on the first GPU, or 0 when llama.cpp has no GPU build or none is present."""
    import llama_cpp

    if not llama_cpp.llama_supports_gpu_offload():
        return 0
    try:
        import torch

        return torch.cuda.mem_get_info()[0] // 2**20 if torch.cuda.is_available() else 0
    except (ImportError, RuntimeError):
        return 0


def available_ram_mb() -> int:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
