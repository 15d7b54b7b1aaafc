"""The dataroom explorer: load a dataroom, see which files were read, run any catalog tool on it.

It renders what the core returns (ingestion statuses, tool results); all work happens in
`searchbox.workspace` and the catalog tools, the same path the CLI takes.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from searchbox.builtin import BUILTIN_DATAROOM
from searchbox.dataroom.unpack import DataroomError
from searchbox.dataroom.workspace import remove_job_folder
from searchbox.retrieval.availability import fit_retrieval
from searchbox.settings import RETRIEVAL_PRESETS, Settings
from searchbox.tools.catalog import CatalogTool, catalog_by_name, load_catalog
from searchbox.tools.retrieval_tools import run_catalog_tool
from searchbox.workspace import Workspace

STATUS_COLUMNS = ["path", "status", "reason", "chars", "chunks"]
RESULT_COLUMNS = ["id", "path", "chunk", "score", "text"]
_WORKSPACE_TTL_S = 3600  # a visitor's loaded dataroom is removed an hour after its last use, or when they leave
_SAMPLE_TEXT = {"query": "What changed in the customer contract?", "question": "When does the office lease end?"}


def example_arguments(tool: CatalogTool) -> str:
    """A starting JSON for a tool: its required arguments with sample values, and its defaults."""
    args: dict[str, Any] = {}
    for name, schema in tool.parameters["properties"].items():
        if name in tool.parameters.get("required", []):
            args[name] = ["first text", "second text"] if schema["type"] == "array" else _SAMPLE_TEXT.get(name, "text")
        elif "default" in schema:
            args[name] = schema["default"]
    return json.dumps(args, indent=2)


def discard(workspace: Workspace | None) -> None:
    """Free the disk a loaded dataroom takes: a public app must not keep every upload forever."""
    if workspace is not None:
        remove_job_folder(workspace.job_dir)


def explorer_settings(settings: Settings, preset: str | None) -> tuple[Settings, list[str]]:
    """The app's settings with the retrieval preset picked here, fitted to the models this machine has."""
    if preset and preset != settings.retrieval_preset:
        if preset not in RETRIEVAL_PRESETS:
            raise gr.Error(f"Unknown retrieval preset {preset!r}.")
        settings = settings.with_overrides(retrieval_preset=preset)
    return fit_retrieval(settings)


def load_dataroom(upload: str | None, settings: Settings, previous: Workspace | None = None,
                  preset: str | None = None) -> tuple[Workspace, str, list[list[Any]]]:
    settings, notes = explorer_settings(settings, preset)
    source = Path(upload) if upload else BUILTIN_DATAROOM
    folder = Path(tempfile.mkdtemp(prefix="searchbox-explore-"))
    try:
        workspace = Workspace.create(folder, source, settings)
    except DataroomError as exc:
        remove_job_folder(folder)
        raise gr.Error(str(exc)) from exc
    discard(previous)
    rows = workspace.corpus.statuses()
    read = sum(r["status"] == "ok" for r in rows)
    name = source.name if upload else "the built-in dataroom"
    summary = f"**{name}**: {read} of {len(rows)} files read, {len(workspace.corpus.chunks)} chunks. " \
              f"Retrieval: `{settings.embed_model}`, {settings.search_mode} search, reranker `{settings.rerank_model}`."
    summary = "\n\n".join([summary, *(f"ℹ️ {note}" for note in notes)])
    return workspace, summary, [[r[c] for c in STATUS_COLUMNS] for r in rows]


def run_tool(workspace: Workspace | None, name: str, raw_args: str, settings: Settings,
             preset: str | None = None) -> tuple[Workspace, list[list[Any]], str]:
    if workspace is None:
        workspace, _, _ = load_dataroom(None, settings, preset=preset)
    try:
        args = json.loads(raw_args or "{}")
    except json.JSONDecodeError as exc:
        raise gr.Error(f"The arguments are not valid JSON: {exc}") from exc
    result = run_catalog_tool(workspace.tool_context(), name, args)
    rows = [[r.get(c, "") for c in RESULT_COLUMNS] for r in result.get("results", []) if "path" in r]
    # Shown as JSON text: a JSON component would make API clients fetch every "path" as a file.
    return workspace, rows, json.dumps(result, indent=2, ensure_ascii=False)


def build_explorer(settings: Settings) -> None:
    """Lay out the explorer inside the current gr.Blocks."""
    workspace = gr.State(None, time_to_live=_WORKSPACE_TTL_S, delete_callback=discard)
    with gr.Row():
        upload = gr.File(label="Dataroom (.zip); leave empty for the built-in one", file_types=[".zip"], type="filepath")
        with gr.Column():
            preset = gr.Dropdown(list(RETRIEVAL_PRESETS), value=settings.retrieval_preset, label="Retrieval preset",
                                 info="Models that cannot be loaded here are replaced by packaged ones, and the summary says so.")
            load_button = gr.Button("Load dataroom", variant="secondary")
            summary = gr.Markdown()
    statuses = gr.Dataframe(headers=STATUS_COLUMNS, label="Files", interactive=False, max_height=300)
    tools = [t.name for t in load_catalog()]
    with gr.Row():
        tool = gr.Dropdown(tools, value=tools[0], label="Catalog tool")
        arguments = gr.Code(example_arguments(load_catalog()[0]), language="json", label="Arguments")
    run_button = gr.Button("Run tool", variant="primary")
    results = gr.Dataframe(headers=RESULT_COLUMNS, label="Results", interactive=False, wrap=True)
    raw = gr.Code(language="json", label="Full result", interactive=False)

    load_button.click(lambda up, previous, chosen: load_dataroom(up, settings, previous, chosen),
                      [upload, workspace, preset], [workspace, summary, statuses], api_name="load_dataroom")
    tool.change(lambda name: example_arguments(catalog_by_name()[name]), [tool], [arguments], api_name=False)
    run_button.click(lambda ws, name, args, chosen: run_tool(ws, name, args, settings, chosen),
                     [workspace, tool, arguments, preset], [workspace, results, raw], api_name="run_tool")
