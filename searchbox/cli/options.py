"""What several commands share: --set's knob overrides, and --dataroom/--job with the workspace they give."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from searchbox.assets import BUILTIN_DATAROOM
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings, SettingsError
from searchbox.workspace import Workspace

Subcommands = argparse._SubParsersAction  # what add_subparsers returns: each command adds its parser to it
SET_HELP = "override a knob ({scope}); repeatable; `python -m searchbox knobs` lists every knob and its default"


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise SettingsError(f"--set takes KNOB=VALUE, got {pair!r}")
        overrides[name.strip().lower()] = value
    return overrides


def add_set(parser: argparse.ArgumentParser, scope: str) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help=SET_HELP.format(scope=scope))


def add_dataroom_command(sub: Subcommands, name: str, help: str) -> argparse.ArgumentParser:
    """A command over a dataroom and a job folder (`job_workspace` gives it their workspace)."""
    parser = sub.add_parser(name, help=help)
    parser.add_argument("--dataroom", help="a .zip or a folder (default: the built-in dataroom)")
    parser.add_argument("--job", help="job folder to reuse (default: a temporary one)")
    add_set(parser, "for this command")
    return parser


@contextmanager
def job_workspace(args: argparse.Namespace, *, retrieval: bool = True,
                  overrides: dict[str, Any] | None = None) -> Iterator[Workspace]:
    """The job folder given with --job (reused when it already holds a dataroom), else a temporary one;
    with `retrieval`, fitted to the retrieval models this machine can load (saying what changed). Its settings:
    `overrides`, else the command's --set."""
    from searchbox.retrieval.availability import fit_retrieval

    settings = Settings.resolve(**(parse_overrides(args.set) if overrides is None else overrides))
    if retrieval:
        settings, notes = fit_retrieval(settings)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    source = Path(args.dataroom) if args.dataroom else BUILTIN_DATAROOM
    if args.job:
        job = Path(args.job)
        if JobFolder(job).dataroom.exists():
            yield Workspace.open(job, settings)
        else:
            yield Workspace.create(job, source, settings)
        return
    with tempfile.TemporaryDirectory(prefix="searchbox-") as tmp:
        yield Workspace.create(Path(tmp), source, settings)
