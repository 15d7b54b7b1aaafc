"""Why a small model's preset turns each of its assists on (SMALL_MODEL_ASSISTS, llm/choice/presets.py): the
evidence a run records beside the assists its preset chose (run_meta.json's preset_assists)."""

from __future__ import annotations

from searchbox.llm.choice.presets import SMALL_MODEL_ASSISTS

# The assists a small model's preset turns on: only those whose benefit an ablation showed, each with why. The
# others stay off: source_hint's words were read as the answer (issue 31), force_tool_steps adds nothing the forced
# first call lacks, and the rest never acted. The figures: docs/findings/2026-12-06-figures-from-code-comments.md.
_FINDING = "docs/findings/2026-12-02-minimal-loop-vs-assists.md"
SMALL_MODEL_ASSIST_EVIDENCE = {
    "forced_tool": f"alone it answered more questions right than the minimal loop, none fewer ({_FINDING})",
    "ask_sources": f"alone it made answers cite far more often, accuracy unchanged ({_FINDING})",
    "keep_answer": "ask_sources' companion: keeps the answer when the reply to a request for sources drops it",
}

if ",".join(SMALL_MODEL_ASSIST_EVIDENCE) != SMALL_MODEL_ASSISTS:  # the presets name them; each needs its evidence
    raise ImportError(f"the evidence covers {tuple(SMALL_MODEL_ASSIST_EVIDENCE)}, "
                      f"the presets turn on {SMALL_MODEL_ASSISTS}")
