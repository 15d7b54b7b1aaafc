"""A readable live view of a run for the terminal: turns, steps, tool calls, tokens, the stop.

It only formats the loop's events; the app renders the same events its own way.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from searchbox.records.events import (AssistFired, Compaction, Delta, Event, Notice, RunStart, StepEnd, Stop, ToolEnd,
                                      ToolStart, TurnEnd, TurnStart)

_ARG_CHARS = 90


def _arguments(arguments: dict) -> str:
    text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return text if len(text) <= _ARG_CHARS else text[: _ARG_CHARS - 1] + "…"


class ProgressPrinter:
    def __init__(self, out: TextIO = sys.stdout, stream_text: bool = False) -> None:
        self.out = out
        self.stream_text = stream_text
        self._mid_line = False

    def __call__(self, event: Event) -> None:
        line = self._format(event)
        if line is None:
            return
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False
        self.out.write(line + "\n")
        self.out.flush()

    def _format(self, event: Event) -> str | None:
        match event:
            case RunStart(resumed=resumed, model=model):
                return f"{'resuming' if resumed else 'starting'} run with {model}"
            case TurnStart(budget=budget):
                return f"── turn {event.turn}/{budget} ──"
            case Delta(kind="text", text=text) if self.stream_text:
                self.out.write(text)
                self.out.flush()
                self._mid_line = True
            case ToolStart(name=name, arguments=arguments):
                return f"  step {event.step} → {name}({_arguments(arguments)})"
            case ToolEnd(is_error=is_error, duration_ms=duration_ms, ended=ended, gist=gist):
                cut = f"[{ended.replace('_', ' ')}] " if ended != "completed" else ""
                return f"      {'✗' if is_error else '✓'} {duration_ms / 1000:.2f}s  {cut}{gist}"
            case StepEnd(usage=u, text=text, tool_calls=calls, llm_ms=llm_ms):
                said = f"  “{text.strip()[:120]}”" if text.strip() and not calls else ""
                return f"  step {event.step}: {u['input']:,} in / {u['output']:,} out tokens, {llm_ms / 1000:.1f}s{said}"
            case Compaction(error=error) if error:
                return f"  ! the context compaction failed: {error}"
            case Compaction(tokens_before=tokens_before, compactions=n):
                return f"  compacted the context ({tokens_before:,} tokens before; compaction {n})"
            case AssistFired(assist=assist, hook=hook, sent=sent):
                said = " ".join(sent.split())
                return f"  + assist {assist} ({hook}): {said if len(said) <= _ARG_CHARS else said[:_ARG_CHARS - 1] + '…'}"
            case Notice(message=message):
                return f"  ! {message}"
            case TurnEnd(tool_calls=calls, tokens=t, seconds=seconds):
                return f"── turn {event.turn} done: {calls} tool calls so far, {t['total']:,} tokens, {seconds or 0:.1f}s"
            case Stop(reason=reason, turns=turns):
                return f"stopped: {reason} after {turns} turn(s), {event.elapsed:.1f}s"
        return None
