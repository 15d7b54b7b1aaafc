"""The agent loop's knobs: its turns and their budget and time limits, the harness that drives them (and, under
Pi, when its compaction runs), the assists that are on, and the day its prompt names."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.knob import SettingsError, at_least, knob

# The assists the agent loop may run (agent/assists/, one module each), in the order they are consulted.
ASSIST_NAMES = ("forced_tool", "force_tool_steps", "empty_reply", "ask_sources", "source_hint", "keep_answer",
                "repeat_guard", "wrap_up")
# Assists with a knob of their own, named like it: set by the user (to a value that does something), it turns them on.
_ASSISTS_WITH_A_KNOB = frozenset({"force_tool_steps", "forced_tool"})


@dataclass(frozen=True)
class LoopSettings:
    """How many turns a run takes and how long they may run, which harness drives them and when Pi compacts,
    which assists act, and the day the system prompt names."""

    TITLE: ClassVar[str] = "The agent loop"

    turn_budget: int = knob(10, "turns the agent may take", deploy=True)
    force_budget: bool = knob(False, "spend the whole turn budget (send Continue.) instead of stopping after turn 1")
    budget_metric: str = knob("input", "token field reported as spent", choices=("input", "output", "total"))
    turn_timeout_seconds: int = knob(900, "a turn running longer than this is aborted (the run goes on to the next turn)")
    ceiling_seconds: int = knob(3600, "wall-clock ceiling of a whole run (stop reason ceiling_seconds)")
    max_steps_per_turn: int = knob(
        40, "LLM responses per turn before the turn is ended (unless set, the built-in runtime's model preset fits it)"
    )
    harness: str = knob(
        "native", "which agent harness runs the loop: native (searchbox's own) or pi (the Pi coding agent in RPC mode, "
        "with searchbox's tools, sandbox and records; needs Node.js and `npm ci --prefix pi`)", choices=("native", "pi"),
        deploy=True
    )
    # The seed's values (hanxiao/searchbox, server/run_searchbox.py), set for its 128K window.
    pi_compaction_reserve_tokens: int = knob(
        40000, "HARNESS=pi: Pi compacts once the context passes the window less this many tokens (its "
        "compaction.reserveTokens; a window at or below it makes Pi compact whenever something is old enough)"
    )
    pi_compaction_keep_recent_tokens: int = knob(
        20000, "HARNESS=pi: the most recent tokens Pi's compaction keeps as they are and does not summarise (its "
        "compaction.keepRecentTokens; with a window smaller than this, nothing is ever old enough)"
    )
    harness_assists: str = knob(
        "", "the assists of the agent loop that are on, a comma list of " + ", ".join(ASSIST_NAMES) + " (empty: the "
        "minimal loop); unless set, the built-in runtime's model preset fits it (for the packaged models, those an "
        "ablation showed to help; the run records which and why, preset_assists)"
    )
    force_tool_steps: int = knob(
        1, "with the force_tool_steps or forced_tool assist: how many first steps of a turn must call a tool "
        "(0 turns both off; set, it turns force_tool_steps on)"
    )
    forced_tool: str = knob(
        "search_dataroom", "with the forced_tool assist: the tool turn 1's forced steps must call when the run offers "
        "it (empty turns the assist off; set, it turns it on)"
    )
    prompt_date: str = knob(
        "", "the day the system prompt names as today, YYYY-MM-DD (empty: the day the run starts, recorded under "
        "derived and kept when the run resumes); set it to repeat a run of another day, whose prompt differed"
    )


def assists_on(settings: LoopSettings, explicit: frozenset[str]) -> tuple[str, ...]:
    """The assists that are on, in ASSIST_NAMES order: those HARNESS_ASSISTS names, and force_tool_steps or
    forced_tool when the user set its knob (`explicit`: the knobs the user set); neither with FORCE_TOOL_STEPS=0,
    nor forced_tool with no FORCED_TOOL."""
    on = set(assist_names(settings.harness_assists))
    on |= _ASSISTS_WITH_A_KNOB & explicit
    if settings.force_tool_steps == 0:
        on -= {"force_tool_steps", "forced_tool"}
    if not settings.forced_tool:
        on.discard("forced_tool")
    return tuple(name for name in ASSIST_NAMES if name in on)


def assist_names(value: str) -> list[str]:
    """The names of a HARNESS_ASSISTS list; SettingsError for a name that is no assist."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in ASSIST_NAMES]
    if unknown:
        raise SettingsError(f"HARNESS_ASSISTS names no assist {', '.join(map(repr, unknown))}; "
                            f"the assists are {', '.join(ASSIST_NAMES)}")
    return names


def check(settings: LoopSettings, explicit: frozenset[str]) -> None:
    """SettingsError for a value of this section's knobs that cannot be used (`explicit`: the knobs the user
    set, which turn some assists on)."""
    assists = assists_on(settings, explicit)
    if settings.harness == "pi" and assists:
        raise SettingsError(f"HARNESS=pi runs no assists (Pi is the minimal harness), but {', '.join(assists)} "
                            "would be on: leave HARNESS_ASSISTS, FORCED_TOOL and FORCE_TOOL_STEPS unset")
    if settings.prompt_date:
        try:
            dt.date.fromisoformat(settings.prompt_date)
        except ValueError:
            raise SettingsError(f"PROMPT_DATE must be a date, YYYY-MM-DD (got {settings.prompt_date!r})") from None
    at_least(settings, 1, ("turn_budget", "turn_timeout_seconds", "ceiling_seconds", "max_steps_per_turn"))
    at_least(settings, 0, ("pi_compaction_reserve_tokens", "pi_compaction_keep_recent_tokens"))
    if settings.force_tool_steps < 0:
        raise SettingsError("FORCE_TOOL_STEPS must be 0 or more")
