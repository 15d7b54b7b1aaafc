"""The Jobs tab: the queue and history of a visitor's runs (every run for an operator), with pause,
resume and cancel, and any run's dashboard drawn from its records alone (redrawn from them while
the run goes on)."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import gradio as gr

from searchbox.jobs.bundle import downloads
from searchbox.jobs.store import JobRecord
from searchbox.records.files import read_json
from searchbox.ui.dashboard import Dashboard
from searchbox.ui.run_view import FIGURES, read_answer
from searchbox.ui.services import Services

COLUMNS = ["job", "state", "question", "turns", "tokens", "stop reason", "created"]
_GOING = ("queued", "running")
_REDRAW_EVERY_S = 3.0


def job_row(record: JobRecord, meta: dict[str, Any]) -> list[Any]:
    tokens = (meta.get("tokens") or {}).get("total", 0)
    created = dt.datetime.fromtimestamp(record.created_at).strftime("%Y-%m-%d %H:%M")
    return [record.id[:8], record.state, record.question[:90], meta.get("turns", 0), tokens,
            record.stop_reason or "", created]


class JobsView:
    def __init__(self, services: Services) -> None:
        self.services = services

    def table(self, owner: str) -> tuple[list[list[Any]], Any]:
        records = self.services.visible_jobs(owner)
        rows = [job_row(r, read_json(self.services.store.job_dir(r.id) / "run_meta.json", {}) or {}) for r in records]
        choices = [(f"{r.id[:8]} · {r.state} · {r.question[:60]}", r.id) for r in records]
        return rows, gr.update(choices=choices)

    async def open(self, job_id: str, owner: str) -> tuple:
        """The run's view, and it becomes the opened run (redrawn while it goes)."""
        record = self.services.may_see(job_id, owner)
        if record is None:
            raise gr.Error("No such job among your runs.")
        return (*await self._view(record), record.id, True)

    async def _view(self, record: JobRecord, with_downloads: bool = True) -> tuple:
        job_dir = self.services.store.job_dir(record.id)
        answer, sources = await asyncio.to_thread(read_answer, job_dir)
        figures = await asyncio.to_thread(lambda: Dashboard.from_records(job_dir).figures())
        answer_file, bundle = await asyncio.to_thread(downloads, job_dir) if with_downloads else (gr.skip(), gr.skip())
        return (f"**{record.state}** · {record.question}", answer, sources, *figures.values(), answer_file, bundle)

    async def redraw(self, job_id: str, owner: str, was_going: bool) -> tuple:
        """On the timer: the opened run's view again while it goes, and once more when it has ended
        (with its downloads); otherwise nothing changes."""
        record = self.services.may_see(job_id, owner) if job_id else None
        going = record is not None and record.state in _GOING
        if record is None or not (going or was_going):
            return (*(gr.skip() for _ in range(3 + len(FIGURES) + 2)), False)
        return (*await self._view(record, with_downloads=not going), going)

    def act(self, action: str, job_id: str, owner: str) -> tuple[list[list[Any]], Any]:
        if self.services.may_see(job_id, owner) is None:
            raise gr.Error("No such job among your runs.")
        getattr(self.services.scheduler, action)(job_id)
        return self.table(owner)

    def build(self, owner: gr.BrowserState) -> None:
        table = gr.Dataframe(headers=COLUMNS, label="Runs", interactive=False, elem_id="jobs-table")
        with gr.Row():
            chosen = gr.Dropdown([], label="Run", scale=3)
            open_button = gr.Button("Open", variant="primary")
            pause_button = gr.Button("Pause")
            resume_button = gr.Button("Resume")
            cancel_button = gr.Button("Cancel", variant="stop")
            refresh = gr.Button("Refresh")
        heading = gr.Markdown()
        answer = gr.Markdown()
        with gr.Accordion("Sources", open=False):
            sources = gr.HTML()
        with gr.Row():
            answer_file = gr.DownloadButton("Download ANSWER.md", value=None)
            bundle_file = gr.DownloadButton("Download run bundle", value=None)
        with gr.Row():
            plots = [gr.Plot(label=name) for name in FIGURES]

        refresh.click(self.table, [owner], [table, chosen], api_name="jobs")
        gr.Timer(3.0).tick(self.table, [owner], [table, chosen], api_name=False)
        view = [heading, answer, sources, *plots, answer_file, bundle_file]
        opened = gr.State("")  # the run whose view is shown
        opened_going = gr.State(False)  # whether it was still going at the last draw
        open_button.click(self.open, [chosen, owner], [*view, opened, opened_going], api_name="open_job")
        gr.Timer(_REDRAW_EVERY_S).tick(self.redraw, [opened, owner, opened_going], [*view, opened_going],
                                       api_name="redraw_job")
        for button, action in ((pause_button, "pause"), (resume_button, "resume"), (cancel_button, "cancel")):
            button.click(lambda job, who, a=action: self.act(a, job, who), [chosen, owner], [table, chosen],
                         api_name=f"{action}_job")
