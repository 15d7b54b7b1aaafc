"""The panels a run is shown in, shared by the live Search tab and the Jobs tab: the answer, the
sources, the dashboard's plots and the downloads, and how each is filled from a job folder.

Each panel is prepared on its own: when one fails (a chart, a download), the others still update
and the failure is said in words next to the run's status, instead of Gradio marking every output
of the update with an error badge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import gradio as gr

from searchbox import inert
from searchbox.jobs.bundle import downloads
from searchbox.citations.check import answer_digest
from searchbox.citations.markers import cited_ids
from searchbox.records.events import NO_ANSWER
from searchbox.records.echoes import job_echoes
from searchbox.records.job_folder import JobFolder
from searchbox.ui.answer import render_answer, render_sources
from searchbox.ui.dashboard import Dashboard
from searchbox.ui.handoff import Viewer, offer

log = logging.getLogger(__name__)

FIGURES = ("tokens", "tools", "time", "context", "budget")
FIGURE_TITLES = {"tokens": "Tokens per turn", "tools": "Tool use", "time": "Wall time", "context": "Context window",
                 "budget": "Turn budget"}
EMPTY_DASHBOARD = ("*The dashboard appears here once a run starts: tokens per turn, tool use (bash by program), "
                   "the wall-time split between the LLM and the tools, context-window use and compactions, "
                   "and the turn budget with tokens/s.*")
T = TypeVar("T")


@dataclass
class Problems:
    """What could not be prepared for this update, said once next to the status."""

    items: list[str] = field(default_factory=list)

    def guard(self, what: str, make: Callable[[], T], fallback: T) -> T:
        try:
            return make()
        except Exception as exc:  # one panel's failure must not blank the others
            log.exception("could not prepare %s", what)
            # The message may quote a job's files: shown as written, inert.
            self.items.append(f"⚠️ {what} could not be shown: {type(exc).__name__}: {inert.literal(exc)}")
            return fallback

    def under(self, status: str) -> str:
        return "\n\n".join([status, *self.items]) if self.items else status


@dataclass(frozen=True)
class ReaderAnswer:
    """The answer as a reader is shown it: the page renders it, the REST API sends it as it is."""

    text: str  # ANSWER.md as shown (what only echoed the harness left out); empty when there is none
    sources: list[dict[str, Any]]  # the source ledger's rows
    checks: list[dict[str, Any]] | None = None  # the citation checks, numbered as `text`'s markers; None: unchecked
    refused: str = ""  # what stands at work/ANSWER.md instead of a file the app reads (never a link's target)
    ended: bool = False  # the run ended without an answer

    @property
    def cited(self) -> list[str]:
        return cited_ids(self.text)

    @property
    def note(self) -> str:
        """Why there is no answer, in words; empty when there is one."""
        if self.refused:
            return f"No answer: work/{self.refused}"
        if self.text:
            return ""
        return "No answer: the run ended without one." if self.ended else "No answer yet."


def reader_answer(job_dir: Path) -> ReaderAnswer:
    """The job's answer, its sources and the verdicts on its citations, from the job's files."""
    folder = JobFolder(job_dir)
    read, sources = folder.read_answer(), folder.read_sources()
    if read.problem:
        return ReaderAnswer("", sources, refused=read.problem)
    if not read.text:  # a run that ended without one says so, rather than "yet"
        return ReaderAnswer("", sources, ended=folder.read_meta().get("stop_reason") == NO_ANSWER)
    # What the model only repeated from the harness is shown as the harness's, never as the model's answer.
    echoes = job_echoes(read.text, job_dir)
    checks = recorded_checks(job_dir, read.text)
    return ReaderAnswer(echoes.shown, sources, None if checks is None else echoes.shown_checks(checks))


def read_answer(job_dir: Path) -> tuple[str, str]:
    """(answer Markdown with linked citations, sources HTML) from the job's files."""
    answer = reader_answer(job_dir)
    if answer.text:
        return render_answer(answer.text, answer.sources, answer.checks), render_sources(answer.sources, answer.cited)
    if answer.refused:
        markdown = f"⚠️ No answer: work/{inert.markdown(answer.refused)}"
    else:
        markdown = f"⚠️ *{answer.note}*" if answer.ended else f"*{answer.note}*"
    return markdown, render_sources(answer.sources, [])


def recorded_checks(job_dir: Path, markdown: str) -> list[dict[str, Any]] | None:
    """The citation checks run_meta.json holds for this answer; None while they are for an earlier one."""
    citations = JobFolder(job_dir).read_meta().get("citations") or {}
    if not isinstance(citations, dict) or citations.get("answer_sha256") != answer_digest(markdown):
        return None
    checks = citations.get("checks")
    return checks if isinstance(checks, list) else None


def offered_downloads(job_dir: Path, viewer: Viewer, hide: tuple[str, ...] = ()) -> tuple[str | None, str | None]:
    """The run's ANSWER.md and bundle as files Gradio may serve to this visitor alone."""
    answer, bundle = downloads(job_dir, hide)
    return offer(answer, viewer, job_dir.name), offer(bundle, viewer, job_dir.name)


@dataclass
class RunPanels:
    """The components; `build` lays them out inside the current Blocks context."""

    answer: gr.Markdown
    sources: gr.HTML
    answer_file: gr.DownloadButton
    bundle_file: gr.DownloadButton
    empty_dashboard: gr.Markdown
    plots: dict[str, gr.Plot]
    hide: tuple[str, ...] = ()  # the operator's details, kept out of a visitor's bundle (ui.visitors)

    @classmethod
    def build(cls, *, elem_prefix: str = "", hide: tuple[str, ...] = ()) -> RunPanels:
        answer = gr.Markdown(label="Answer", elem_id=f"{elem_prefix}answer")
        with gr.Accordion("Sources", open=True):
            sources = gr.HTML(elem_id=f"{elem_prefix}sources")
        with gr.Row():
            answer_file = gr.DownloadButton("Download ANSWER.md", value=None, visible=False)
            bundle_file = gr.DownloadButton("Download run bundle", value=None, visible=False)
        empty = gr.Markdown(EMPTY_DASHBOARD)
        plots: dict[str, gr.Plot] = {}
        for row in (FIGURES[:3], FIGURES[3:]):
            with gr.Row():
                for name in row:
                    plots[name] = gr.Plot(label=FIGURE_TITLES[name], elem_id=f"{elem_prefix}plot-{name}", visible=False)
        return cls(answer, sources, answer_file, bundle_file, empty, plots, hide)

    @property
    def components(self) -> list[Any]:
        return [self.answer, self.sources, *self.plots.values(), self.empty_dashboard, self.answer_file, self.bundle_file]

    def fill(self, job_dir: Path, problems: Problems, *, dashboard: Dashboard | None = None,
             downloads_for: Viewer | None = None) -> dict[Any, Any]:
        """The panels' values for the run in job_dir; the live view passes its own dashboard, a
        finished run's is rebuilt from its records. With `downloads_for`, the downloads too, handed
        to that visitor."""
        values = self.fill_answer(job_dir, problems)
        values.update(self.fill_figures(job_dir, problems, dashboard))
        if downloads_for is not None:
            answer_file, bundle = problems.guard("the downloads", lambda: offered_downloads(job_dir, downloads_for, self.hide),
                                                 (None, None))
            values[self.answer_file] = gr.update(value=answer_file, visible=answer_file is not None)
            values[self.bundle_file] = gr.update(value=bundle, visible=bundle is not None)
        return values

    def fill_answer(self, job_dir: Path, problems: Problems) -> dict[Any, Any]:
        answer, sources = problems.guard("the answer", lambda: read_answer(job_dir), (gr.skip(), gr.skip()))
        return {self.answer: answer, self.sources: sources}

    def fill_figures(self, job_dir: Path, problems: Problems, dashboard: Dashboard | None = None,
                     *, shown: bool = False) -> dict[Any, Any]:
        """The dashboard's figures; once `shown`, as bare values: Gradio rebuilds a component and its config
        for every gr.update, which a live run's redraws paid for on the CPU its model runs on."""
        figures = problems.guard("the dashboard",
                                 lambda: (dashboard or Dashboard.from_records(job_dir)).figures(), None)
        if figures is None:
            return {}
        if shown:
            return {self.plots[name]: figures[name] for name in FIGURES}
        values: dict[Any, Any] = {self.plots[name]: gr.update(value=figures[name], visible=True) for name in FIGURES}
        values[self.empty_dashboard] = gr.update(visible=False)
        return values

    def hide_downloads(self) -> dict[Any, Any]:
        return {self.answer_file: gr.update(value=None, visible=False),
                self.bundle_file: gr.update(value=None, visible=False)}
