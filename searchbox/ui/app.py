"""The Gradio app: Search (ask and watch a run live), Jobs (queue, history, any run's dashboard),
and the dataroom explorer. It renders what the core produces; runs go through the scheduler, the
same code path as the CLI's runs."""

from __future__ import annotations

from typing import Any

import gradio as gr
from starlette.middleware import Middleware

from searchbox.settings import Settings
from searchbox.ui.answer import CITATION_CSS, CITATION_JS
from searchbox.ui.api.routes import ApiMount, build_api
from searchbox.ui.compare_view import CompareView
from searchbox.ui.explorer import Explorer
from searchbox.ui.file_gate import FileGate
from searchbox.ui.health import Health, HealthRoute
from searchbox.ui.hash_seed import keep_hash_seed_in_memory
from searchbox.ui.jobs_view import JobsView
from searchbox.ui.machine_view import build_machine_view
from searchbox.ui.run_view import FOLLOWERS, RunView
from searchbox.ui.services import Services
from searchbox.ui.warm_view import build_warm_view

INTRO = """# 🔎 searchbox
Ask a question about a dataroom (a .zip of documents, or the built-in one). A local LLM searches it
with shell tools and retrieval tools, with no network, and writes a cited answer. Every tool call
shows up as it happens."""

# The system's own fonts: Gradio's default web font drew only some letters of a label (the "A" of
# "Download ANSWER.md" came from another font than the rest), and no font file needs fetching.
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                          font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "monospace"])

# Launch options Gradio 6 takes in launch(), not in Blocks(). No run history: its routes keep a visitor's
# calls in a Hugging Face bucket (with the host's own token for a browser on loopback), which this app never asks.
LAUNCH_OPTIONS = {"css": CITATION_CSS, "js": CITATION_JS, "theme": THEME, "run_history": False}


def build_app(settings: Settings | None = None, services: Services | None = None) -> gr.Blocks:
    settings = settings or Settings.resolve()
    keep_hash_seed_in_memory()  # before any file is named after it
    services = services or Services.start(settings)
    # Uploads, and Gradio's copies of the files it served (downloads), are deleted when they are
    # SEARCHBOX_UPLOAD_KEEP_SECONDS old: a public app's disk is not filled by a day of strangers' zips.
    keep = settings.searchbox_upload_keep_seconds
    with gr.Blocks(title="searchbox", delete_cache=(min(3600, keep), keep)) as app:
        owner = gr.BrowserState("", storage_key="searchbox-owner")
        gr.Markdown(INTRO)
        build_machine_view(settings)
        build_warm_view(app, services.warm)
        run_view = RunView(services)
        explorer = Explorer(services)
        with gr.Tab("Search"):
            run_view.build(owner)
        jobs = JobsView(services)
        with gr.Tab("Jobs") as jobs_tab:
            jobs.build(owner)
        with gr.Tab("Dataroom explorer"):
            explorer.build()
        with gr.Tab("Compare"):
            CompareView(settings).build()
        # A finished run is in the Jobs table at once, and so is every run when the tab is opened (its
        # timer alone left a visitor who opened it right after a run looking at an empty table).
        run_view.run_event.then(jobs.table, [owner], jobs.listing, api_name=False)
        jobs_tab.select(jobs.table, [owner], jobs.listing, api_name=False)
        # A visitor's runs belong to an unguessable id kept in their browser, made by their first run
        # (made on page load, it lost the race to a quick first Search: that run was listed for nobody).
        app.load(run_view.reattach, [owner], run_view.live_outputs, api_name="reattach", concurrency_limit=FOLLOWERS)
        app.unload(explorer.release)

        def release_uploads(request: gr.Request) -> None:
            """The tab was closed or reloaded: the uploads only its session took go now."""
            services.uploads.release_session(request.session_hash)

        app.unload(release_uploads)
    app.services = services  # type: ignore[attr-defined]
    return app


def launch_options(app: gr.Blocks) -> dict[str, Any]:
    """What launch() takes for an app build_app made: the look, GET /health, the REST API under /api/ (ahead of
    the gate: it reads its own bodies within the same caps), and the file gate in front of Gradio's routes
    (uploads capped and granted to their address, files served only to theirs)."""
    services: Services = app.services  # type: ignore[attr-defined]
    health = Health(services.settings, services.scheduler, services.warm)
    return {**LAUNCH_OPTIONS, "app_kwargs": {"middleware": [Middleware(HealthRoute, health=health),
                                                             Middleware(ApiMount, api=build_api(services)),
                                                             Middleware(FileGate, uploads=services.uploads)]}}
