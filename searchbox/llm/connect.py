"""From settings to a chat model: the endpoint at LLAMA_URL, or the built-in llama.cpp runtime.

LLM_GGUF takes a local path, `repo_id:filename`, `packaged:gemma3-270m`, a preset name, or `auto`
(the largest preset this machine holds). When the GGUF must come from an unreachable hub and is not
cached, the packaged Gemma 3 270M is booted instead, and a note says so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from searchbox.llm.errors import GGUFUnavailable
from searchbox.llm.gguf import PACKAGED_GEMMA, Progress, resolve_gguf
from searchbox.llm.llamacpp_runtime import load_llamacpp
from searchbox.llm.openai_client import OpenAIClient
from searchbox.llm.presets import find_preset, pick_preset
from searchbox.llm.types import ChatModel
from searchbox.settings import Settings

log = logging.getLogger(__name__)


def connect(
    settings: Settings, *, on_note: Callable[[str], None] | None = None, progress: Progress | None = None
) -> ChatModel:
    """The chat model the settings ask for. Notes (choices, fallbacks, caps) go to `on_note`, else the log."""

    def note(message: str) -> None:
        (on_note or log.warning)(message)

    if settings.llama_url:
        return OpenAIClient(settings.llama_url, settings.model_id, read_timeout_s=settings.llm_timeout_seconds,
                            max_attempts=settings.llm_attempts)
    spec = settings.llm_gguf.strip()
    if spec == "auto":
        vram, ram = free_vram_mb(), available_ram_mb()
        spec = pick_preset(vram, ram).gguf
        note(f"LLM_GGUF=auto picked {spec} for {vram} MB free VRAM and {ram} MB available RAM")
    elif (named := find_preset(spec)) is not None:
        spec = named.gguf
    try:
        path = resolve_gguf(spec, progress=progress)
    except GGUFUnavailable as exc:
        note(f"{exc}: falling back to the packaged Gemma 3 270M, a small base model (expect weak answers)")
        spec = PACKAGED_GEMMA
        path = resolve_gguf(spec)
    preset = find_preset(spec)
    n_ctx = settings.context_window
    if preset is not None and preset.max_ctx < n_ctx:
        n_ctx = preset.max_ctx
        note(f"context window capped at {n_ctx} tokens for {preset.name} (CONTEXT_WINDOW={settings.context_window})")
    return load_llamacpp(path, n_ctx)


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
