"""The Gradio app. Today it holds the dataroom explorer; the live agent run joins it next."""

from __future__ import annotations

import gradio as gr

from searchbox.settings import Settings
from searchbox.ui.explorer import build_explorer

INTRO = """# searchbox
Agentic search over a private dataroom. Load a dataroom (a .zip of documents, or the built-in one),
see which files were read, and run any retrieval tool of the catalog on it."""


def build_app(settings: Settings | None = None) -> gr.Blocks:
    settings = settings or Settings.resolve()
    with gr.Blocks(title="searchbox") as app:
        gr.Markdown(INTRO)
        with gr.Tab("Dataroom explorer"):
            build_explorer(settings)
    return app
