"""Why a small model's preset turns each of its assists on (SMALL_MODEL_ASSISTS, llm/choice/presets.py): the
evidence a run records beside the assists its preset chose (run_meta.json's preset_assists)."""

from __future__ import annotations

from searchbox.llm.choice.presets import SMALL_MODEL_ASSISTS

# The assists a small model's preset turns on: only those whose benefit an ablation showed, each with why
# (each assist alone at three seeds, ten literal questions, packaged 1.5B: docs/findings/2026-12-02-minimal-loop-
# vs-assists.md; minimal loop 0.17). The others stay off: source_hint alone scored 0.15 and its words were
# read as the answer (issue 31); force_tool_steps (0.55, p = 0.070) adds nothing the forced first call lacks;
# empty_reply, repeat_guard and wrap_up never acted in the 30 minimal runs.
SMALL_MODEL_ASSIST_EVIDENCE = {
    "forced_tool": "alone 0.65 [0.35, 0.86] against the minimal loop's 0.17; 7 questions up, none down, p = 0.016",
    "ask_sources": "answers citing: 24 of 30 alone against 10 of 30 in the minimal loop (accuracy unchanged, 0.18)",
    "keep_answer": "ask_sources' companion: keeps the answer when the reply to a request for sources drops it",
}

if ",".join(SMALL_MODEL_ASSIST_EVIDENCE) != SMALL_MODEL_ASSISTS:  # the presets name them; each needs its evidence
    raise ImportError(f"the evidence covers {tuple(SMALL_MODEL_ASSIST_EVIDENCE)}, "
                      f"the presets turn on {SMALL_MODEL_ASSISTS}")
