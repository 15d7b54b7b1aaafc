"""A readable live view of a run for the terminal: turns, steps, tool calls, tokens, the stop.

It only formats the loop's events; the app renders the same events its own way.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from searchbox.records.events import Event

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
        d = event.data
        match event.type:
            case "run_start":
                verb = "resuming" if d["resumed"] else "starting"
                return f"{verb} run with {d['model']}"
            case "turn_start":
                return f"── turn {event.turn}/{d['budget']} ──"
            case "delta":
                if self.stream_text and d["kind"] == "text":
                    self.out.write(d["text"])
                    self.out.flush()
                    self._mid_line = True
                return None
            case "tool_start":
                return f"  step {event.step} → {d['name']}({_arguments(d['arguments'])})"
            case "tool_end":
                mark = "✗" if d["is_error"] else "✓"
                ended = f"[{d['ended'].replace('_', ' ')}] " if d.get("ended", "completed") != "completed" else ""
                return f"      {mark} {d['duration_ms'] / 1000:.2f}s  {ended}{d.get('gist', '')}"
            case "step_end":
                u = d["usage"]
                said = f"  “{d['text'].strip()[:120]}”" if d["text"].strip() and not d["tool_calls"] else ""
                return f"  step {event.step}: {u['input']:,} in / {u['output']:,} out tokens, {d['llm_ms'] / 1000:.1f}s{said}"
            case "compaction":
                return f"  compacted the context ({d['tokens_before']:,} tokens before; compaction {d['compactions']})"
            case "notice":
                return f"  ! {d['message']}"
            case "turn_end":
                t = d["tokens"]
                return f"── turn {event.turn} done: {d['tool_calls']} tool calls so far, {t['total']:,} tokens, {d['seconds']:.1f}s"
            case "stop":
                return f"stopped: {d['reason']} after {d['turns']} turn(s), {event.elapsed:.1f}s"
        return None
