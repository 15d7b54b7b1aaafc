"""The dataroom explorer: load a dataroom, see which files were read, run any tool on it, built-in or
catalog.

It renders what the core returns (ingestion statuses, tool results); all work happens in
`searchbox.workspace` and the run's toolbox, the same path the CLI's `tool` command takes. Only an
operator (SEARCHBOX_OPERATOR=1) gets `bash` here: a visitor calls tools directly, with no model between
them and the host, so nothing that runs commands is theirs to call.

A session's loaded dataroom lives in a folder among the app's jobs (JobStore.scratch_folder), where its
disk counts against SEARCHBOX_JOBS_MAX_MB, and is removed when the visitor loads another, closes or
reloads the tab, or leaves it unused for _WORKSPACE_TTL_S.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from searchbox import inert
from searchbox.agent.toolbox import RunToolbox, tools_on_offer
from searchbox.assets import BUILTIN_DATAROOM
from searchbox.dataroom.unpack import DataroomError
from searchbox.records.removal import remove_job_folder
from searchbox.retrieval.availability import fit_retrieval
from searchbox.settings import Settings
from searchbox.settings.bundles import RETRIEVAL_PRESETS
from searchbox.tools.catalog import CATALOG_TOOLS
from searchbox.tools.tool import Tool
from searchbox.ui.services import Services
from searchbox.ui.visitors import client_address, take_upload
from searchbox.workspace import Workspace

STATUS_COLUMNS = ["path", "status", "reason", "chars", "chunks"]
RESULT_COLUMNS = ["id", "path", "chunk", "score", "text"]
_WORKSPACE_TTL_S = 600  # a loaded dataroom unused this long is removed (a closed tab's at once)
_SAMPLE_VALUES: dict[str, Any] = {
    "query": "What changed in the customer contract?", "question": "When does the office lease end?",
    "pattern": "lease", "command": "ls dataroom", "path": "dataroom/00_index/README.txt", "content": "notes",
    "edits": [{"oldText": "old text", "newText": "new text"}],
}


def example_arguments(tool: Tool) -> str:
    """A starting JSON for a tool: its required arguments with sample values, and its defaults."""
    args: dict[str, Any] = {}
    for name, schema in tool.parameters["properties"].items():
        if name in tool.parameters.get("required", []):
            texts = ["first text", "second text"] if schema["type"] == "array" else "text"
            args[name] = _SAMPLE_VALUES.get(name, texts)
        elif "default" in schema:
            args[name] = schema["default"]
    return json.dumps(args, indent=2)


def discard(workspace: Workspace | None, drop: Callable[[Path], None] = remove_job_folder) -> None:
    """Free the disk a loaded dataroom takes: a public app must not keep every upload forever."""
    if workspace is not None:
        drop(workspace.job_dir)


def explorer_budget(settings: Settings) -> Settings:
    """The explorer's tools get SEARCHBOX_EXPLORE_DISK_MB, not a run's JOB_DISK_MB: a visitor calls write
    directly, as fast as it can call, with no model between, and each address holds two such folders."""
    return settings.with_overrides(job_disk_mb=min(settings.job_disk_mb, settings.searchbox_explore_disk_mb))


def explorer_settings(settings: Settings, preset: str | None) -> tuple[Settings, list[str]]:
    """The app's settings with the retrieval preset picked here, fitted to the models this machine has."""
    if preset and preset != settings.retrieval_preset:
        if preset not in RETRIEVAL_PRESETS:
            raise gr.Error(f"Unknown retrieval preset {preset!r}.")
        settings = settings.with_overrides(retrieval_preset=preset)
    return fit_retrieval(settings)


def load_dataroom(upload: str | None, settings: Settings, new_folder: Callable[[], Path],
                  previous: Workspace | None = None, preset: str | None = None,
                  drop: Callable[[Path], None] = remove_job_folder) -> tuple[Workspace, str, list[list[Any]]]:
    """`drop` removes a folder new_folder made (the app's: JobStore.discard, which never raises)."""
    settings, notes = explorer_settings(settings, preset)
    source = Path(upload) if upload else BUILTIN_DATAROOM
    folder = new_folder()
    try:
        workspace = Workspace.create(folder, source, settings)
    except DataroomError as exc:
        drop(folder)
        raise gr.Error(inert.html(exc)) from exc  # it may name the zip's members: Gradio shows it as HTML
    discard(previous, drop)
    rows = workspace.corpus.statuses()
    read = sum(r["status"] == "ok" for r in rows)
    name = inert.literal(source.name) if upload else "the built-in dataroom"  # the visitor's file name
    summary = f"**{name}**: {read} of {len(rows)} files read, {len(workspace.corpus.chunks)} chunks. " \
              f"Retrieval: `{settings.embed_model}`, {settings.search_mode} search, reranker `{settings.rerank_model}`."
    summary = "\n\n".join([summary, *(f"ℹ️ {inert.markdown(note)}" for note in notes)])
    return workspace, summary, [[r[c] for c in STATUS_COLUMNS] for r in rows]


def run_tool(workspace: Workspace | None, name: str, raw_args: str, settings: Settings,
             new_folder: Callable[[], Path], preset: str | None = None, *,
             bash: bool = False) -> tuple[Workspace, list[list[Any]], str]:
    if workspace is None:
        workspace, _, _ = load_dataroom(None, settings, new_folder, preset=preset)
    try:
        args = json.loads(raw_args or "{}")
    except json.JSONDecodeError as exc:
        raise gr.Error(f"The arguments are not valid JSON: {exc}") from exc
    result = RunToolbox(workspace, workspace.settings, every_catalog_tool=True, bash=bash).call(name, args, None)
    found = (result.data or {}).get("results", [])
    rows = [[r.get(c, "") for c in RESULT_COLUMNS] for r in found if isinstance(r, dict) and "path" in r]
    # Shown as JSON text: a JSON component would make API clients fetch every "path" as a file.
    return workspace, rows, json.dumps(result.record(), indent=2, ensure_ascii=False)


class Explorer:
    """The explorer's handlers, and the dataroom each page session has loaded."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.settings = explorer_budget(services.visitor_settings())
        self.bash = services.settings.searchbox_operator
        self._held: dict[str, Workspace] = {}  # page session -> its loaded dataroom
        self._lock = threading.Lock()

    def new_folder(self, request: gr.Request | None = None) -> Callable[[], Path]:
        """A maker of the session's scratch folder, under its client address's own explorer budget."""
        store = self.services.store
        visitor = store.visitor_of(client_address(request))
        return lambda: store.scratch_folder(self.services.settings, visitor)

    def load(self, upload: str | None, previous: Workspace | None, preset: str | None,
             request: gr.Request) -> tuple[Workspace, str, list[list[Any]]]:
        if upload:
            take_upload(self.services.uploads, upload, request)
        workspace, summary, rows = load_dataroom(upload, self.settings, self.new_folder(request), previous, preset,
                                                 self.services.store.discard)
        self._hold(request, workspace)
        return workspace, summary, rows

    def run(self, workspace: Workspace | None, name: str, raw_args: str, preset: str | None,
            request: gr.Request) -> tuple[Workspace, list[list[Any]], str]:
        loaded, rows, raw = run_tool(workspace, name, raw_args, self.settings, self.new_folder(request), preset,
                                    bash=self.bash)
        self._hold(request, loaded)
        return loaded, rows, raw

    def release(self, request: gr.Request) -> None:
        """The tab was closed or reloaded: its dataroom goes now, not an hour later with Gradio's session."""
        with self._lock:
            workspace = self._held.pop(request.session_hash or "", None)
        discard(workspace, self.services.store.discard)

    def drop(self, workspace: Workspace | None) -> None:
        """The session's state expired (unused for _WORKSPACE_TTL_S)."""
        with self._lock:
            for session in [s for s, held in self._held.items() if held is workspace]:
                del self._held[session]
        discard(workspace, self.services.store.discard)

    def _hold(self, request: gr.Request, workspace: Workspace) -> None:
        with self._lock:
            self._held[request.session_hash or ""] = workspace

    def build(self) -> None:
        """Lay out the explorer inside the current gr.Blocks."""
        settings = self.settings
        workspace = gr.State(None, time_to_live=_WORKSPACE_TTL_S, delete_callback=self.drop)
        with gr.Row():
            upload = gr.File(label="Dataroom (.zip); leave empty for the built-in one", file_types=[".zip"], type="filepath")
            with gr.Column():
                preset = gr.Dropdown(list(RETRIEVAL_PRESETS), value=settings.retrieval_preset, label="Retrieval preset",
                                     info="Models that cannot be loaded here are replaced by packaged ones, and the summary says so.")
                load_button = gr.Button("Load dataroom", variant="secondary")
                summary = gr.Markdown()
        statuses = gr.Dataframe(headers=STATUS_COLUMNS, label="Files", interactive=False, max_height=300)
        _, offered = tools_on_offer(settings, every_catalog_tool=True, bash=self.bash)
        first = CATALOG_TOOLS[0]  # the explorer is mostly for retrieval studies: it opens on a search
        with gr.Row():
            tool = gr.Dropdown(list(offered), value=first.name, label="Tool", info="The built-ins, then the catalog tools")
            arguments = gr.Code(example_arguments(first), language="json", label="Arguments")
        run_button = gr.Button("Run tool", variant="primary")
        results = gr.Dataframe(headers=RESULT_COLUMNS, label="Results", interactive=False, wrap=True)
        raw = gr.Code(language="json", label="Full result", interactive=False)

        load_button.click(self.load, [upload, workspace, preset], [workspace, summary, statuses], api_name="load_dataroom")
        tool.change(lambda name: example_arguments(offered[name]), [tool], [arguments], api_name=False)
        run_button.click(self.run, [workspace, tool, arguments, preset], [workspace, results, raw], api_name="run_tool")
