"""The Jobs tab: the queue and history of a visitor's runs (every run for an operator), with pause,
resume, cancel and delete, and any run's dashboard drawn from its records alone (redrawn from them while
the run goes on)."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import gradio as gr

from searchbox import inert
from searchbox.jobs.store import JobRecord
from searchbox.llm.disclosure import operator_details
from searchbox.records.job_folder import JobFolder
from searchbox.ui.handoff import Viewer
from searchbox.ui.panels import Problems, RunPanels
from searchbox.ui.services import Services
from searchbox.ui.slots import server_name
from searchbox.ui.visitors import client_address

COLUMNS = ["job", "state", "question", "turns", "tokens", "stop reason", "server", "created"]
_GOING = ("queued", "running")
_REDRAW_EVERY_S = 3.0
STATE_ICONS = {"queued": "⏳", "running": "🔎", "paused": "⏸️", "held": "✋", "done": "✅", "failed": "⚠️", "cancelled": "⏹️"}


def job_row(record: JobRecord, meta: dict[str, Any], operator: bool) -> list[Any]:
    tokens = (meta.get("tokens") or {}).get("total", 0)
    created = dt.datetime.fromtimestamp(record.created_at).strftime("%Y-%m-%d %H:%M")
    return [record.id[:8], record.state, record.question[:90], meta.get("turns", 0), tokens,
            record.stop_reason or "", server_name(record, operator), created]


def state_line(record: JobRecord) -> str:
    """A job's state as the pages say it: icon, state and its run's stop reason. A run that gave no answer
    is `failed (no_answer)`: the scheduler counts only a run with an answer done (jobs/scheduler.py)."""
    reason = f" ({record.stop_reason})" if record.stop_reason else ""
    return f"{STATE_ICONS.get(record.state, '')} **{record.state}**{reason}".lstrip()


def job_heading(record: JobRecord) -> str:
    """A visitor's question is Markdown an operator may open: rendered inert, like answers."""
    return f"{state_line(record)} · {inert.markdown(record.question)}"


class JobsView:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.heading: Any = None
        self.panels: RunPanels | None = None
        self.chosen: Any = None  # the run picker
        self.opened: Any = None  # the run whose view is shown
        self.opened_going: Any = None  # whether it was still going at the last draw
        self.listing: list[Any] = []  # the table, the run picker and the ids: what table() fills

    @property
    def view(self) -> list[Any]:
        assert self.panels is not None, "build() first"
        return [self.heading, *self.panels.components]

    def table(self, owner: str) -> tuple[list[list[Any]], Any, list[str]]:
        """The rows, the run picker, and the job ids in row order (a click on a row opens its run)."""
        records = self.services.visible_jobs(owner)
        operator = self.services.settings.searchbox_operator
        rows = [job_row(r, JobFolder(self.services.store.job_dir(r.id)).read_meta(), operator) for r in records]
        choices = [(f"{r.id[:8]} · {r.state} · {r.question[:60]}", r.id) for r in records]
        return rows, gr.update(choices=choices), [r.id for r in records]

    async def open(self, job_id: str, owner: str, request: gr.Request) -> dict[Any, Any]:
        """The run's view, and it becomes the opened run (redrawn while it goes)."""
        record = self.services.may_see(job_id, owner)
        if record is None:
            raise gr.Error("No such job among your runs.")
        return {**await self._view(record, Viewer(owner, client_address(request))), self.opened: record.id,
                self.opened_going: True, self.chosen: record.id}

    async def open_row(self, ids: list[str], owner: str, event: gr.SelectData, request: gr.Request) -> dict[Any, Any]:
        row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
        if not isinstance(row, int) or not 0 <= row < len(ids):
            return {component: gr.skip() for component in [*self.view, self.opened, self.opened_going, self.chosen]}
        return await self.open(ids[row], owner, request)

    async def _view(self, record: JobRecord, downloads_for: Viewer | None) -> dict[Any, Any]:
        assert self.panels is not None
        job_dir = self.services.store.job_dir(record.id)
        problems = Problems()
        values = await asyncio.to_thread(self.panels.fill, job_dir, problems, downloads_for=downloads_for)
        return {self.heading: problems.under(job_heading(record)), **values}

    async def redraw(self, job_id: str, owner: str, was_going: bool, request: gr.Request) -> dict[Any, Any]:
        """On the timer: the opened run's view again while it goes, and once more when it has ended
        (with its downloads); otherwise nothing changes."""
        record = self.services.may_see(job_id, owner) if job_id else None
        going = record is not None and record.state in _GOING
        if record is None or not (going or was_going):
            return {**{component: gr.skip() for component in self.view}, self.opened_going: False}
        viewer = None if going else Viewer(owner, client_address(request))
        return {**await self._view(record, viewer), self.opened_going: going}

    def act(self, action: str, job_id: str, owner: str) -> tuple[list[list[Any]], Any, list[str]]:
        if self.services.may_see(job_id, owner) is None:
            raise gr.Error("No such job among your runs.")
        getattr(self.services.scheduler, action)(job_id)
        return self.table(owner)

    def delete(self, job_id: str, owner: str) -> tuple[list[list[Any]], Any, list[str]]:
        """A visitor deletes a run of their own (an operator's view lists others' runs too: not theirs to delete)."""
        record = self.services.store.get(job_id) if job_id else None
        if record is None or record.owner != owner:
            raise gr.Error("No such job among your runs.")
        if not self.services.store.delete(job_id):
            raise gr.Error("Only a finished run can be deleted: cancel it first, then delete it.")
        return self.table(owner)

    def build(self, owner: gr.BrowserState) -> None:
        table = gr.Dataframe(headers=COLUMNS, label="Runs (click a row to open it)", interactive=False,
                             elem_id="jobs-table", wrap=True,
                             column_widths=["8%", "8%", "36%", "6%", "8%", "11%", "11%", "12%"])
        ids = gr.State([])  # job ids in the table's row order
        with gr.Row():
            self.chosen = gr.Dropdown([], label="Run", scale=3)
            open_button = gr.Button("Open", variant="primary")
            pause_button = gr.Button("Pause")
            resume_button = gr.Button("Resume")
            cancel_button = gr.Button("Cancel", variant="stop")
            delete_button = gr.Button("Delete", variant="stop")
            refresh = gr.Button("Refresh")
        self.heading = gr.Markdown("*Open a run to see its answer, sources and dashboard.*")
        self.panels = RunPanels.build(elem_prefix="job-", hide=operator_details(self.services.settings))
        self.opened = gr.State("")
        self.opened_going = gr.State(False)

        listing = self.listing = [table, self.chosen, ids]
        refresh.click(self.table, [owner], listing, api_name="jobs")
        gr.Timer(3.0).tick(self.table, [owner], listing, api_name=False)
        opened = [*self.view, self.opened, self.opened_going, self.chosen]
        open_button.click(self.open, [self.chosen, owner], opened, api_name="open_job")
        table.select(self.open_row, [ids, owner], opened, api_name=False)
        gr.Timer(_REDRAW_EVERY_S).tick(self.redraw, [self.opened, owner, self.opened_going],
                                       [*self.view, self.opened_going], api_name="redraw_job")
        for button, action in ((pause_button, "pause"), (resume_button, "resume"), (cancel_button, "cancel")):
            button.click(lambda job, who, a=action: self.act(a, job, who), [self.chosen, owner], listing,
                         api_name=f"{action}_job")
        delete_button.click(self.delete, [self.chosen, owner], listing, api_name="delete_job")
