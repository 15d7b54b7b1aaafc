"""Entry point of the Gradio app (what a Hugging Face Space runs): python app.py [--share]."""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from searchbox.ui.app import build_app  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description="searchbox: agentic search over a dataroom")
    parser.add_argument("--share", action="store_true", help="also serve through a public share link")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    args = parser.parse_args()
    build_app().queue().launch(server_name=args.host, server_port=args.port, share=args.share)


if __name__ == "__main__":
    main()
