"""A small catalog of real GGUFs, and a pick of the largest one this machine can hold.

Memory figures are estimates for the preset's context with a q8_0 KV cache: the file, the cache and
about a gigabyte of compute buffers. `min_vram_mb` offloads every layer; `min_ram_mb` runs on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchbox.llm.gguf import PACKAGED_GEMMA


@dataclass(frozen=True)
class Preset:
    name: str
    gguf: str  # an LLM_GGUF value
    file_mb: int
    min_vram_mb: int
    min_ram_mb: int
    max_ctx: int  # context the memory figures assume; also the cap the runtime applies
    note: str


# Largest first.
PRESETS: tuple[Preset, ...] = (
    Preset(
        "qwen3.6-35b-a3b",
        "unsloth/Qwen3.6-35B-A3B-GGUF:Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf",
        file_mb=22_400,
        min_vram_mb=26_000,
        min_ram_mb=30_000,
        max_ctx=131_072,
        note="production default: MoE with 3B active parameters (only 10 of 40 layers keep a KV cache); XML tool calls",
    ),
    Preset(
        "qwen3-4b-instruct-2507",
        "unsloth/Qwen3-4B-Instruct-2507-GGUF:Qwen3-4B-Instruct-2507-Q4_K_M.gguf",
        file_mb=2_500,
        min_vram_mb=5_500,
        min_ram_mb=6_000,
        max_ctx=32_768,
        note="a small GPU or a fast CPU; no thinking; JSON tool calls in <tool_call>",
    ),
    Preset(
        "qwen3-1.7b",
        "unsloth/Qwen3-1.7B-GGUF:Qwen3-1.7B-Q4_K_M.gguf",
        file_mb=1_110,
        min_vram_mb=3_500,
        min_ram_mb=4_000,
        max_ctx=32_768,
        note="CPU; thinks in <think> before it answers; JSON tool calls in <tool_call>",
    ),
    Preset(
        "gemma3-270m",
        PACKAGED_GEMMA,
        file_mb=253,
        min_vram_mb=0,
        min_ram_mb=700,
        max_ctx=32_768,
        note="offline fallback from a PyPI package: a base model, no chat template; tool calls only under a grammar",
    ),
)


def pick_preset(gpu_free_mb: int, ram_mb: int) -> Preset:
    """The largest preset that fits the free VRAM (fully offloaded) or else the RAM (on the CPU)."""
    for preset in PRESETS:
        if (gpu_free_mb > 0 and gpu_free_mb >= preset.min_vram_mb) or ram_mb >= preset.min_ram_mb:
            return preset
    return PRESETS[-1]


def find_preset(name_or_gguf: str) -> Preset | None:
    return next((p for p in PRESETS if name_or_gguf in (p.name, p.gguf)), None)
