"""`python -m searchbox`: the parser, built from each command's module in the order --help lists them, and
main, which runs the command asked for with the terminal shielded from control codes (after preparing llama.cpp, as
the app does, for a command that loads a model)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from searchbox import inert
from searchbox.cli import (ablate, conformance, doctor, ingest, knobs, precompute, report, retrieval_eval, run, score,
                           tool)
from searchbox.dataroom.unpack import DataroomError
from searchbox.cli.options import parse_overrides
from searchbox.llm.llamacpp.gpu_build import prepare as prepare_gpu_build
from searchbox.retrieval.interfaces import ModelLoadError
from searchbox.settings import Settings, SettingsError
from searchbox.settings.environ import unknown_names

COMMANDS = (run, tool, ingest, precompute, knobs, score, retrieval_eval, ablate, report, conformance, doctor)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m searchbox", description="Agentic search over a dataroom.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_to(sub)
    return parser


class TerminalText:
    """A text stream that passes on what is written to it without terminal control codes."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(inert.terminal(text))
        return len(text)

    def __getattr__(self, name: str) -> object:  # flush, isatty, encoding, ...: the stream's own
        return getattr(self.stream, name)


def prepare_llama_cpp(args: argparse.Namespace) -> None:
    """Before a command first loads llama_cpp, as the app does at its start: on a GPU machine whose llama.cpp was
    built for the CPU, the CUDA wheel that fits (SEARCHBOX_GPU_BUILD; installed by the app on a Space)."""
    try:
        settings = Settings.resolve(**parse_overrides(getattr(args, "set", None) or []))
    except (SettingsError, ValueError):
        return  # the command resolves its settings again and says what is wrong
    prepared = prepare_gpu_build(settings)
    for line in prepared.lines:
        print(f"{'warning' if prepared.loud else 'note'}: {line}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalText(out), TerminalText(err)  # type: ignore[assignment]
    try:
        for unknown in unknown_names(os.environ):  # said before a bad value stops the command
            print(f"note: {unknown.message()}", file=sys.stderr)
        if getattr(args, "loads_model", False):
            prepare_llama_cpp(args)
        return args.func(args)
    except (DataroomError, SettingsError, ModelLoadError, FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.stdout, sys.stderr = out, err
