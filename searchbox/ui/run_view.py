"""The Ask panel and the live run view.

The run handler is an async generator: it creates a job, hands it to the scheduler, and streams the
job's events into the activity feed, the answer, the sources and the dashboard. Blocking work runs
in threads so the event loop keeps serving other visitors. Closing the page does not stop the run:
it lives on in the Jobs tab, and opening the page again follows the visitor's newest unfinished run
live, from what it has recorded so far.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import secrets
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import gradio as gr

from searchbox import inert
from searchbox.records.events import TurnEnd, ToolEnd, last_seq, load_events
from searchbox.assets import BUILTIN_QUESTIONS
from searchbox.dataroom.unpack import DataroomError
from searchbox.jobs.store import JobRecord
from searchbox.records.removal import remove_job_folder
from searchbox.llm.disclosure import operator_details
from searchbox.settings import SettingsError
from searchbox.settings.bundles import EFFORT_PRESETS, RETRIEVAL_PRESETS
from searchbox.ui.dashboard import Dashboard
from searchbox.ui.feed import Feed
from searchbox.ui.follow import drain
from searchbox.ui.handoff import Viewer
from searchbox.ui.jobs_view import state_line
from searchbox.ui.panels import Problems, RunPanels
from searchbox.ui.preview_index import PreviewIndexing
from searchbox.ui.services import Services
from searchbox.ui.slots import lost_server, standing_text
from searchbox.ui.submit import create_run
from searchbox.ui.visitors import BUDGET_RANGE, RunRequest, client_address, form_choices, form_defaults, take_upload

log = logging.getLogger(__name__)
_YIELD_EVERY_S = 0.4
_FIGURES_EVERY_S = 1.5
_STANDING_EVERY_S = 2.0  # how often a run that waits for a slot has its place in line redrawn
# Handlers that follow a run live wait on it for minutes, mostly asleep: not capped at Gradio's default
# concurrency (the app's), or a visitor past the cap would wait unseen in Gradio's queue, not the
# scheduler's, with no place in line to see and a slot of the pool left idle.
FOLLOWERS = None
_STILL_GOING = {"queued", "running", "paused"}
# On a narrow screen the columns stack and the run's status and feed sit below the Search button,
# out of sight: bring them into view when a search starts.
SHOW_RUN_ON_A_PHONE = """(...inputs) => {
  if (window.matchMedia("(max-width: 768px)").matches) {
    document.getElementById("run-status")?.scrollIntoView({block: "start"});
  }
  return inputs;
}"""
ASK_FIRST = "✋ Ask a question first: type one above, or click an example below."
NO_RUN_YET = "*The activity of a run (every tool call as it happens), its answer and its sources appear here.*"


# The README's and the docs' question comes first: a visitor who read them finds it here to click.
README_QUESTION = "Who audited the FY2025 financial statements?"
_LABEL_CHARS = 56  # what one line of an example holds in the Ask column


def example_questions(limit: int = 6) -> list[str]:
    rows = [json.loads(line) for line in BUILTIN_QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_type: dict[str, str] = {}
    for row in rows:  # one question of each type first: the examples show the range
        by_type.setdefault(row["type"], row["question"])
    picked = list(by_type.values()) + [r["question"] for r in rows if r["question"] not in by_type.values()]
    return [README_QUESTION, *(q for q in picked if q != README_QUESTION)][:limit]


def example_label(question: str) -> str:
    """The question as its example shows it: whole, or cut after a whole word (Gradio cut it mid-word)."""
    if len(question) <= _LABEL_CHARS:
        return question
    return question[:_LABEL_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"


class RunView:
    def __init__(self, services: Services) -> None:
        self.services = services
        # The components a followed run streams into, set by build().
        self.job_id: Any = None
        self.status: Any = None
        self.feed: Any = None
        self.panels: RunPanels | None = None
        self.controls: list[Any] = []  # Pause and Stop: live only while a run is followed
        self.run_event: Any = None  # the Search button's run, which the Jobs tab follows up on
        self.preview_indexing = PreviewIndexing(services.settings.searchbox_preview_indexers,
                                                services.settings.searchbox_upload_unclaimed_seconds)

    @property
    def live_outputs(self) -> list[Any]:
        assert self.panels is not None, "build() first"
        return [self.job_id, self.status, self.feed, *self.panels.components, *self.controls]

    # -- handlers ----------------------------------------------------------------------------

    def preview_dataroom(self, upload: str | None, preset: str | None, request: gr.Request) -> Any:
        """The per-file ingestion status of an upload, before any run; the page's session takes the upload, and
        the room starts being embedded for search with the chosen preset (BACKGROUND_INDEX), which its run reuses."""
        if not upload:
            return gr.update(value=None, visible=False), gr.update(value="", visible=False), gr.Timer(active=False)
        take_upload(self.services.uploads, upload, request)
        import tempfile

        from searchbox.retrieval.availability import fit_retrieval
        from searchbox.workspace import Workspace

        settings = self.services.settings
        if preset in RETRIEVAL_PRESETS and preset != settings.retrieval_preset:
            settings = settings.with_overrides(retrieval_preset=preset)
        settings = fit_retrieval(settings)[0]  # the models the run will load here
        tmp = Path(tempfile.mkdtemp(prefix="searchbox-preview-"))
        indexing = None
        try:
            workspace = Workspace.create(tmp / "job", Path(upload), settings)
            rows = workspace.corpus.statuses()
            if settings.background_index:
                indexing = self.preview_indexing.start(client_address(request), workspace.engine)
        except DataroomError as exc:
            raise gr.Error(inert.html(exc)) from exc  # it may name the zip's members: Gradio shows it as HTML
        finally:
            try:
                remove_job_folder(tmp)  # its dataroom is read-only: rmtree left it behind for an app not root
            except OSError as exc:
                log.warning("the preview's folder %s stays: %s", tmp, exc)
        status, going = self.index_status(request)
        if indexing is None and settings.background_index:
            status = "The app is embedding other uploads now: this room is embedded when its run starts."
        return (gr.update(value=[[r["path"], r["status"], r["reason"], r["chunks"]] for r in rows], visible=True),
                gr.update(value=status, visible=bool(status)), gr.Timer(active=going))

    def index_status(self, request: gr.Request) -> tuple[str, bool]:
        return self.preview_indexing.status(client_address(request))

    def index_tick(self, request: gr.Request) -> Any:
        status, going = self.index_status(request)
        return gr.update(value=status, visible=bool(status)), gr.Timer(active=going)

    async def run(self, http: gr.Request, owner: str | None = None, upload: str | None = None,
                  from_page: bool = False, **form: Any):
        # The None defaults make these optional for API callers (no upload: the built-in dataroom).
        request = RunRequest(upload=upload, **form)
        question = (request.question or "").strip()
        if not question:
            if not from_page:  # an API caller gets the reason as its error
                raise gr.Error("Ask a question first.")
            # The page says it beside the question (question_hint); a gr.Error here put an "Error" badge on
            # every panel.
            yield {component: gr.skip() for component in [*self.live_outputs, self.owner]}
            return
        # A browser's first run makes its id, which the page then keeps (BrowserState) and sends with every
        # later call; an API caller without one gets a private, unlisted run.
        new_owner = "" if owner else secrets.token_urlsafe(16)
        owner = owner or new_owner
        if request.upload:
            take_upload(self.services.uploads, request.upload, http)
            # The run's own indexer goes on from what the preview embedded (the disk cache).
            await asyncio.to_thread(self.preview_indexing.stop, client_address(http))
        address = client_address(http)
        try:
            record = await asyncio.to_thread(create_run, self.services, request, owner, address)
        except gr.Error:
            raise  # a choice refused: its message is the page's already
        except (DataroomError, SettingsError, ValueError) as exc:
            raise gr.Error(inert.html(exc)) from exc
        if request.upload and not from_page:  # the job has its copy; a page keeps showing (and reusing) its upload
            self.services.uploads.release(request.upload, http.session_hash)
        if request.jina_key:
            self.services.remember_secrets(record.id, {"jina_api_key": request.jina_key})
        subscription = self.services.scheduler.subscribe(record.id)  # before submit: no event is missed
        self.services.scheduler.submit(record.id)
        async for update in self._follow(record.id, question, subscription, Viewer(owner, address), replay=False):
            yield {**update, self.owner: new_owner} if new_owner else update
            new_owner = ""

    async def reattach(self, owner: str, request: gr.Request):
        """On page load: the visitor's newest run still going, followed live from its records so far
        (a reload or a closed tab does not lose the live view); nothing changes when there is none."""
        going = [r for r in await asyncio.to_thread(self.services.store.list, owner) if r.state in _STILL_GOING]
        if not owner or not going:
            yield {component: gr.skip() for component in self.live_outputs}
            return
        record = going[0]
        subscription = self.services.scheduler.subscribe(record.id)  # before reading the records
        viewer = Viewer(owner, client_address(request))
        async for update in self._follow(record.id, record.question, subscription, viewer, replay=True):
            yield update

    def _update(self, job_id: str, status: str, feed: Feed, panels: dict[Any, Any], problems: Problems,
                *, going: bool | None = None) -> dict[Any, Any]:
        """The live outputs' new values; Pause and Stop only when `going` says they change (a gr.update is
        a component rebuilt, per update, on the CPU the run's model uses)."""
        update = {self.job_id: job_id, self.status: problems.under(status), self.feed: feed.messages, **panels}
        if going is not None:
            update.update({control: gr.update(interactive=going) for control in self.controls})
        return update

    async def _follow(self, job_id: str, question: str, subscription: queue.Queue, viewer: Viewer, replay: bool):
        """Stream a job into the live view of `viewer` until its run stops for good; with `replay`, what
        it already recorded comes first, and the stream skips the events the records already hold."""
        assert self.panels is not None
        panels = self.panels
        job_dir = self.services.store.job_dir(job_id)
        record = self.services.store.get(job_id)
        settings = self.services.store.settings_for(record, self.services.settings) if record else self.services.settings
        feed = Feed(question)
        dashboard = Dashboard(context_window=settings.context_window, budget=settings.turn_budget)
        recorded = 0  # the seq of the last event the replay showed: the stream's events up to it are shown already
        if replay:
            replayed = await asyncio.to_thread(load_events, job_dir)
            for event in replayed:
                feed.add(event)
                dashboard.add(event)
            recorded = last_seq(replayed)
        problems = Problems()
        values = await asyncio.to_thread(panels.fill, job_dir, problems, dashboard=dashboard)
        yield self._update(job_id, self._status(job_id), feed, {**values, **panels.hide_downloads()}, problems,
                           going=True)
        last_yield = last_figures = last_standing = 0.0
        drawn_revision = -1  # the dashboard's revision the figures show
        shown_standing = ""
        answer_stale = False
        while True:
            events, ended = await drain(subscription, 0.5)
            events = [e for e in events if e.seq > recorded]
            for event in events:
                feed.add(event)
                dashboard.add(event)
                answer_stale = answer_stale or isinstance(event, (TurnEnd, ToolEnd))
            now = time.monotonic()
            if ended:
                current = self.services.store.get(job_id)
                if current is not None and current.state in _STILL_GOING:
                    # Preempted by another run: it resumes on its own; keep following it.
                    subscription = self.services.scheduler.subscribe(job_id)
                    problems = Problems()
                    values = await asyncio.to_thread(panels.fill, job_dir, problems, dashboard=dashboard)
                    why = ("its model server stopped answering; resumes on another" if lost_server(current)
                           else "paused for another run; resumes automatically")
                    yield self._update(job_id, f"{self._status(job_id)} · {why}", feed, values, problems, going=True)
                    continue
                break
            if not events and now - last_standing >= _STANDING_EVERY_S:  # waiting: its place in line moves
                # In threads: they read job.json and wait on the scheduler's lock, which the event loop must not.
                current = await asyncio.to_thread(self.services.store.get, job_id)
                if current is None or current.state not in _STILL_GOING:
                    break  # paused (held) or cancelled while it waited: no run will end this stream
                last_standing, standing = now, await asyncio.to_thread(self._status_of, job_id, current)
                if standing != shown_standing:
                    shown_standing = standing
                    yield self._update(job_id, standing, feed, {}, Problems())  # every update holds the feed
            if events and now - last_yield >= _YIELD_EVERY_S:
                problems = Problems()
                values: dict[Any, Any] = {}
                if answer_stale:
                    values.update(await asyncio.to_thread(panels.fill_answer, job_dir, problems))
                    answer_stale = False
                # Five Plotly figures take some 0.1 s of a CPU the model's threads share: only when they changed.
                if now - last_figures >= _FIGURES_EVERY_S and dashboard.revision != drawn_revision:
                    figures = panels.fill_figures(job_dir, problems, dashboard, shown=drawn_revision >= 0)
                    values.update(figures)
                    last_figures = now
                    if figures:  # drawn, and shown from now on
                        drawn_revision = dashboard.revision
                last_yield = now
                yield self._update(job_id, self._status(job_id), feed, values, problems)
        problems = Problems()
        final = await asyncio.to_thread(panels.fill, job_dir, problems, downloads_for=viewer)
        yield self._update(job_id, self._status(job_id), feed, final, problems, going=False)

    def _status(self, job_id: str) -> str:
        return self._status_of(job_id, self.services.store.get(job_id))

    def _status_of(self, job_id: str, record: JobRecord | None) -> str:
        if record is None:
            return ""
        status = f"{state_line(record)} · job `{job_id[:8]}`"
        if record.state not in _STILL_GOING:
            return status
        standing = standing_text(self.services.scheduler.standing(job_id), record, self.services.settings.searchbox_operator)
        return f"{status} · {standing}" if standing else status

    @staticmethod
    def question_hint(question: str | None) -> tuple[Any, bool]:
        """What the Search button says beside the question when there is none, before any run starts; and
        that the run comes from the page (a State an API call never sets), which shows the reason there."""
        missing = not (question or "").strip()
        return gr.update(value=ASK_FIRST if missing else "", visible=missing), True

    def stop(self, job_id: str) -> str:
        if job_id:
            self.services.scheduler.cancel(job_id)
        return self._status(job_id)

    def pause(self, job_id: str) -> str:
        if job_id:
            self.services.scheduler.pause(job_id)
        return self._status(job_id)

    # -- layout -------------------------------------------------------------------------------

    def build(self, owner: gr.BrowserState) -> None:
        settings = self.services.settings
        choices, defaults = form_choices(settings), form_defaults(settings)
        high, low = choices["high"], choices["low"]
        self.job_id = gr.State("")
        self.owner = owner
        with gr.Row():
            with gr.Column(scale=2):
                question = gr.Textbox(label="Question", lines=3, placeholder="Ask something the documents can answer")
                hint = gr.Markdown(visible=False, elem_id="question-hint")
                upload = gr.File(label="Dataroom (.zip); leave empty for the built-in one", file_types=[".zip"], type="filepath")
                ingestion = gr.Dataframe(headers=["path", "status", "reason", "chunks"], label="Files in the upload",
                                         visible=False, interactive=False, max_height=220)
                index_status = gr.Markdown(visible=False, elem_id="index-status")
                index_timer = gr.Timer(2.0, active=False)
                examples = example_questions()
                gr.Examples([[q] for q in examples], inputs=[question], label="Examples (built-in dataroom)",
                            example_labels=[example_label(q) for q in examples], cache_examples=False)
                effort = gr.Radio(list(EFFORT_PRESETS), value="Quick", label="Effort")
                with gr.Row():
                    budget = gr.Slider(*BUDGET_RANGE, value=defaults["budget"], step=1, label="Turn budget")
                    force = gr.Checkbox(value=defaults["force"], label="Force the whole budget")
                with gr.Accordion("Tools", open=False):
                    all_high = gr.Checkbox(value=False, label="All high-level tools")
                    high_tools = gr.CheckboxGroup(high, value=defaults["high"], label="High-level")
                    all_low = gr.Checkbox(value=False, label="All low-level tools")
                    low_tools = gr.CheckboxGroup(low, value=defaults["low"], label="Low-level")
                    gr.Markdown("Built-ins (read, bash, grep, find, ls, edit, write) are always on.")
                with gr.Accordion("Model and retrieval", open=False):
                    llm = gr.Dropdown(choices["llm"], label="LLM", value=defaults["llm"])
                    # Empty by default: the page and the API description never show the operator's endpoint.
                    own = "empty: the app's own endpoint" if settings.llama_url else "http://localhost:8080/v1"
                    locked = None if settings.searchbox_visitor_endpoints else (
                        "Set by the operator: this app lets visitors use its own endpoint only "
                        "(SEARCHBOX_VISITOR_ENDPOINTS=1 opens it).")
                    endpoint = gr.Textbox(label="Endpoint URL", value="", placeholder=own,
                                          interactive=settings.searchbox_visitor_endpoints, info=locked)
                    model_id = gr.Textbox(label="Model id at the endpoint", value="",
                                          interactive=settings.searchbox_visitor_endpoints, info=locked)
                    retrieval = gr.Dropdown(choices["retrieval"], value=defaults["retrieval"], label="Retrieval preset")
                    with gr.Row():
                        embed_backend = gr.Radio(choices["embed_backend"], value=defaults["embed_backend"], label="Embedder")
                        rerank_backend = gr.Radio(choices["rerank_backend"], value=defaults["rerank_backend"], label="Reranker")
                    jina_key = gr.Textbox(label="Jina API key (for the api backends; used for this run only, never stored)",
                                          type="password", value="")
                    harness = gr.Radio(choices["harness"], value=defaults["harness"],
                                       label="Harness (native: searchbox's loop; pi: the Pi coding agent)",
                                       visible=len(choices["harness"]) > 1)
                with gr.Row():
                    run_button = gr.Button("Search", variant="primary")
                    pause_button = gr.Button("Pause", interactive=False)
                    stop_button = gr.Button("Stop", variant="stop", interactive=False)
            with gr.Column(scale=3):
                self.status = gr.Markdown(NO_RUN_YET, elem_id="run-status")
                self.feed = gr.Chatbot(label="Activity", height=520, elem_id="activity")
                self.panels = RunPanels.build(hide=operator_details(self.services.settings))
        self.controls = [pause_button, stop_button]

        upload.change(self.preview_dataroom, [upload, retrieval], [ingestion, index_status, index_timer], api_name=False)
        index_timer.tick(self.index_tick, None, [index_status, index_timer], api_name=False, queue=False)
        effort.change(lambda e: (EFFORT_PRESETS[e]["turn_budget"], EFFORT_PRESETS[e]["force_budget"]),
                      [effort], [budget, force], api_name=False)
        all_high.change(lambda on: high if on else [], [all_high], [high_tools], api_name=False)
        all_low.change(lambda on: low if on else [], [all_low], [low_tools], api_name=False)
        form = dict(question=question, upload=upload, budget=budget, force=force, high=high_tools, low=low_tools,
                    llm=llm, endpoint=endpoint, model_id=model_id, retrieval=retrieval, embed_backend=embed_backend,
                    rerank_backend=rerank_backend, jina_key=jina_key)
        assert [*form, "harness"] == [f.name for f in fields(RunRequest)], "the form and RunRequest name the same fields"
        # The harness comes after the owner: API callers that pass the parameters in order keep working.
        from_page = gr.State(False)
        hinted = run_button.click(self.question_hint, [question], [hint, from_page], api_name=False, queue=False)
        self.run_event = hinted.then(self.run, inputs_kwargs={**form, "owner": owner, "harness": harness,
                                                              "from_page": from_page},
                         outputs=[*self.live_outputs, owner],
                         api_name="search", js=SHOW_RUN_ON_A_PHONE, concurrency_limit=FOLLOWERS)
        stop_button.click(self.stop, [self.job_id], [self.status], api_name="stop")
        pause_button.click(self.pause, [self.job_id], [self.status], api_name="pause")
