"""A small catalog of real GGUFs, the limits that suit each, and LLM_GGUF=auto's pick for this machine.

Memory figures are estimates for the preset's context window with a q8_0 KV cache (LLM_KV_CACHE's type on
a GPU; on a CPU the f16 cache takes twice the cache's part): the file, the cache and about a gigabyte of
compute buffers. `min_vram_mb` offloads every layer; `min_ram_mb` runs on the CPU.
On a CPU, auto also weighs how long a typical run would take here (cpu_speed.py).
A run's context window, output cap, steps per turn and assists come from the preset of the model that
runs, unless the user set them (`fit_limits`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from searchbox.llm.choice.cpu_speed import TYPICAL_OUTPUT_TOKENS, CpuSpeed
from searchbox.llm.weights.packaged import PACKAGED, PACKAGED_GEMMA, PACKAGED_QWEN_05B, PACKAGED_QWEN_15B
from searchbox.settings import Settings

# The knobs a preset fits to its model; each is also a field of Preset.
LIMIT_KNOBS = ("context_window", "max_output_tokens", "max_steps_per_turn", "harness_assists", "tool_output_bytes",
               "tool_descriptions")

# The assists a small model's preset turns on, in ASSIST_NAMES order: only those an ablation showed to help. The
# evidence for each, which a run records (preset_assists), is the agent's: agent/assists/evidence.py.
SMALL_MODEL_ASSISTS = "forced_tool,ask_sources,keep_answer"


@dataclass(frozen=True)
class Preset:
    name: str
    gguf: str  # an LLM_GGUF value
    file_mb: int
    min_vram_mb: int
    min_ram_mb: int
    max_ctx: int  # the most context a run gets: what the model was trained for, or the memory allows
    context_window: int  # a run's context unless CONTEXT_WINDOW is set; the memory figures assume it
    max_output_tokens: int
    max_steps_per_turn: int
    note: str
    # On a CPU a 1.5B model prefills about 15 tokens/s: every 4 KB of tool output costs a minute, and the
    # full tool descriptions (about 1,700 tokens) two. Small models get brief tools and short results.
    tool_output_bytes: int = 50 * 1024
    tool_descriptions: str = "full"
    harness_assists: str = ""  # a capable model gets the minimal loop
    active_mb: int = 0  # the weights one token reads, where fewer than the file's (a mixture of experts)
    answers: bool = True  # an instruct model; a base model is for plumbing only, never auto's pick for speed
    typical_output_tokens: int = TYPICAL_OUTPUT_TOKENS  # what a typical run writes (cpu_speed.py)

    @property
    def packaged(self) -> bool:
        return self.gguf in PACKAGED

    @property
    def read_mb(self) -> int:
        """The weights one token reads: what its speed on a CPU scales with."""
        return self.active_mb or self.file_mb


# Largest first.
PRESETS: tuple[Preset, ...] = (
    Preset(
        "qwen3.6-35b-a3b",
        "unsloth/Qwen3.6-35B-A3B-GGUF:Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf",
        file_mb=22_400,
        min_vram_mb=26_000,
        min_ram_mb=30_000,
        max_ctx=131_072,
        context_window=131_072,
        max_output_tokens=8192,
        max_steps_per_turn=40,
        note="production default: MoE with 3B active parameters (only 10 of 40 layers keep a KV cache); XML tool calls",
        active_mb=2_000,  # 3B of its 35B parameters
    ),
    Preset(
        "qwen3-4b-instruct-2507",
        "unsloth/Qwen3-4B-Instruct-2507-GGUF:Qwen3-4B-Instruct-2507-Q4_K_M.gguf",
        file_mb=2_500,
        min_vram_mb=5_500,
        min_ram_mb=6_000,
        max_ctx=32_768,
        context_window=32_768,
        max_output_tokens=4096,
        max_steps_per_turn=24,
        note="a small GPU or a fast CPU; no thinking; JSON tool calls in <tool_call>",
    ),
    Preset(
        "qwen3-1.7b",
        "unsloth/Qwen3-1.7B-GGUF:Qwen3-1.7B-Q4_K_M.gguf",
        file_mb=1_110,
        min_vram_mb=3_500,
        min_ram_mb=4_000,
        max_ctx=32_768,
        context_window=16_384,
        max_output_tokens=4096,  # it thinks before it answers
        max_steps_per_turn=16,
        note="CPU; thinks in <think> before it answers; JSON tool calls in <tool_call>",
        typical_output_tokens=5 * TYPICAL_OUTPUT_TOKENS,  # its thinking: assumed, not measured here
    ),
    # The packaged models need no network: the embedded default and its fallbacks (connect.py).
    # Qwen2.5 is trained for 32k tokens; 16k keeps prefill and memory sane on a CPU.
    Preset(
        "qwen2.5-coder-1.5b",
        PACKAGED_QWEN_15B,
        file_mb=1_066,
        min_vram_mb=2_500,
        min_ram_mb=2_500,
        max_ctx=32_768,
        context_window=16_384,
        max_output_tokens=2048,
        max_steps_per_turn=12,
        note="embedded default from PyPI packages: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, an instruct model "
             "with Qwen's chat template; JSON tool calls in <tool_call>",
        # 2 KB (one hit as an excerpt) against 4 KB, 3 seeds of 20 questions of both sets, verdicts read where
        # they differ: as accurate (+0.03 [-0.04, +0.11]) for half the new prompt tokens
        # (docs/findings/2026-12-05-hits-shown-seed-3.md).
        tool_output_bytes=2048,
        tool_descriptions="brief",
        harness_assists=SMALL_MODEL_ASSISTS,
    ),
    Preset(
        "qwen2.5-coder-0.5b",
        PACKAGED_QWEN_05B,
        file_mb=469,
        min_vram_mb=1_600,
        min_ram_mb=1_600,
        max_ctx=32_768,
        context_window=16_384,
        max_output_tokens=1024,
        max_steps_per_turn=12,
        note="from PyPI packages: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, a tiny instruct model with Qwen's chat "
             "template; JSON tool calls in <tool_call> (expect weak answers)",
        tool_output_bytes=4096,
        tool_descriptions="brief",
        harness_assists=SMALL_MODEL_ASSISTS,
    ),
    Preset(
        "gemma3-270m",
        PACKAGED_GEMMA,
        file_mb=253,
        min_vram_mb=0,
        min_ram_mb=700,
        max_ctx=32_768,
        context_window=8192,
        max_output_tokens=512,
        max_steps_per_turn=8,
        note="last fallback from a PyPI package: Gemma 3 270M, a base model with no chat template; tool calls "
             "only under a grammar (expect no real answers)",
        tool_output_bytes=3072,
        tool_descriptions="brief",
        harness_assists=SMALL_MODEL_ASSISTS,
        answers=False,
    ),
)


def fits(preset: Preset, gpu_free_mb: int, ram_mb: int) -> bool:
    """Whether the preset fits the free VRAM (fully offloaded) or else the RAM (on the CPU)."""
    return (gpu_free_mb > 0 and gpu_free_mb >= preset.min_vram_mb) or ram_mb >= preset.min_ram_mb


@dataclass(frozen=True)
class AutoPick:
    preset: Preset
    why: str
    speed_unknown: bool = False  # the rule asked for this CPU's speed and had none

    def record(self) -> dict[str, str]:
        return {"picked": self.preset.name, "gguf": self.preset.gguf, "why": self.why}


def auto_pick(gpu_free_mb: int, ram_mb: int, cpu: Callable[[], CpuSpeed | None], target_s: int) -> AutoPick:
    """LLM_GGUF=auto's pick. `gpu_free_mb` is the free VRAM llama.cpp can offload to (0 for a build without
    GPU offload): the largest preset it holds whole. Else, on the CPU, the largest that fits the RAM and whose
    typical run this CPU (measured only when it comes to this) finishes within `target_s`; none: the fastest
    instruct model; speed unknown: the largest packaged instruct model that fits (no download, sized for any
    CPU; the largest that fits the RAM put a 22 GB model on the CPU of a 128 GB GPU machine whose llama.cpp
    cannot offload). Nothing fits: the smallest."""
    on_gpu = next((p for p in PRESETS if 0 < p.min_vram_mb <= gpu_free_mb), None)
    if on_gpu is not None:
        return AutoPick(on_gpu, f"{gpu_free_mb:,} MB of free VRAM llama.cpp can offload to holds it whole "
                                f"({on_gpu.min_vram_mb:,} MB)")
    fitting = [p for p in PRESETS if ram_mb >= p.min_ram_mb]
    if not fitting:
        return AutoPick(PRESETS[-1], f"nothing fits {ram_mb:,} MB of RAM: the smallest")
    speed = cpu()
    if speed is None:
        safe = next((p for p in fitting if p.packaged and p.answers), fitting[-1])
        return AutoPick(safe, f"this CPU's speed is unknown (not measured, or measured while other work held its "
                              f"CPUs): the largest packaged instruct model that fits "
                              f"{ram_mb:,} MB of RAM, which needs no download and runs on any CPU", True)
    answering = [p for p in fitting if p.answers] or fitting
    seconds = {p.name: speed.typical_run_seconds(p.read_mb, p.typical_output_tokens) for p in answering}
    picked = next((p for p in answering if seconds[p.name] <= target_s), answering[-1])
    measured = (f"this CPU: {speed.speed.prefill_tps:.0f} prompt and {speed.speed.decode_tps:.0f} output tokens/s "
                f"with {speed.reference_mb:,} MB of weights, load {speed.load_average:g}")
    larger = [f"{p.name} ~{seconds[p.name]:.0f} s" for p in answering[: answering.index(picked)]]
    within = "within" if seconds[picked.name] <= target_s else "the fastest; none within"
    return AutoPick(picked, f"a typical run ~{seconds[picked.name]:.0f} s, {within} the {target_s} s target "
                            f"({measured}; larger: {', '.join(larger) or 'none that fits'})")


def find_preset(name_or_gguf: str) -> Preset | None:
    return next((p for p in PRESETS if name_or_gguf in (p.name, p.gguf)), None)


def context_window_for(settings: Settings, preset: Preset) -> int:
    """The context window a run of the preset gets, and its model is loaded with: CONTEXT_WINDOW where the user
    set it, else the preset's; at most the preset's max_ctx."""
    wanted = settings.context_window if "context_window" in settings.explicit else preset.context_window
    return min(wanted, preset.max_ctx)


def fit_limits(settings: Settings, preset: Preset) -> tuple[Settings, list[str]]:
    """The settings with the preset's limits for every limit knob the user left alone, and the context
    capped at the preset's max_ctx; the changed knobs are recorded as derived. Also returns notes for
    the user's own settings that had to change."""
    values = {name: getattr(preset, name) for name in LIMIT_KNOBS if name not in settings.explicit}
    if settings.harness == "pi":  # Pi is the minimal harness: no assist runs, so none is recorded as chosen
        values.pop("harness_assists", None)
    notes = []
    window = context_window_for(settings, preset)
    if window < values.get("context_window", settings.context_window):
        notes.append(f"context window capped at {preset.max_ctx} tokens for {preset.name} "
                     f"(CONTEXT_WINDOW={settings.context_window})")
    values["context_window"] = window
    changed = {name: value for name, value in values.items() if getattr(settings, name) != value}
    return (settings.with_derived(**changed) if changed else settings), notes
