"""The warm start on the page: a line at the top, while it prepares, saying how far it got (each step's state
as warm_start records it), read again every second until it is done; then gone, unless a step failed, which
stays said (the run that needs it meets the same trouble). Nothing shows while the warm start is off."""

from __future__ import annotations

from typing import Any

import gradio as gr

from searchbox.ui.warm_start import WarmStart, WarmState

_MARKS = {"waiting": "·", "running": "⏳", "done": "✓", "skipped": "–", "failed": "✗"}


def warm_markdown(state: WarmState) -> str:
    """What the page says of the warm start: nothing once it is ready (or off)."""
    if state.state in ("off", "ready"):
        return ""
    steps = " · ".join(f"{_MARKS[step.state]} {step.name}" + (f": {step.detail}" if step.detail and step.state in
                                                               ("running", "failed") else "")
                       for step in state.steps)
    if state.state == "preparing":
        return f"⏳ **Getting ready for the first run** (a run asked now waits for it): {steps}"
    return f"⚠️ **Not everything could be prepared at start-up**; a run that needs it will say so: {steps}"


def build_warm_view(app: gr.Blocks, warm: WarmStart) -> None:
    """The line and its timer, filled on every page load (the page is built before the warm start begins)."""
    line = gr.Markdown(visible=False, elem_id="warm-start")
    timer = gr.Timer(1.0, active=False)

    def refresh() -> tuple[Any, gr.Timer]:
        state = warm.state()
        text = warm_markdown(state)
        return gr.update(value=text, visible=bool(text)), gr.Timer(active=state.state == "preparing")

    # A plain read of memory: no queue slot or concurrency limit is spent on it.
    app.load(refresh, None, [line, timer], api_name=False, queue=False, show_progress="hidden")
    timer.tick(refresh, None, [line, timer], api_name=False, queue=False, show_progress="hidden")
