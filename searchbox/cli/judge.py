"""--judge, --judge-url and --judge-model (score, ablate): a model that grades answers beside the lexical verdicts."""

from __future__ import annotations

import argparse

from searchbox.llm.types import ChatModel
from searchbox.settings import Settings


def add_judge(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--judge", action="store_true",
                        help=f"also have a model grade {what}: the configured one (LLAMA_URL, else LLM_GGUF), or "
                        "--judge-url's; its prompt and raw reply are kept in score.json, and each score names its grader")
    parser.add_argument("--judge-url", help="the judge's OpenAI-compatible endpoint (implies --judge)")
    parser.add_argument("--judge-model", help="the model id sent to --judge-url")


def connect_judge(args: argparse.Namespace, base: Settings) -> ChatModel | None:
    """The judge --judge asks for: the endpoint --judge-url names (a strong model, apart from the runs'),
    else the configured model (LLAMA_URL, or the built-in runtime: the packaged model offline)."""
    from searchbox.llm.choice.connect import connect

    if not (args.judge or args.judge_url):
        return None
    settings = base.with_overrides(llama_url=args.judge_url, model_id=args.judge_model or "") if args.judge_url else base
    return connect(settings, on_note=lambda note: print(f"note: {note}"))
