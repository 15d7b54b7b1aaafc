"""python -m searchbox knobs: every knob with its default and help, or docs/knobs.md's Markdown."""

from __future__ import annotations

import argparse

from searchbox.cli.options import Subcommands
from searchbox.settings.docs import knob_docs, knobs_markdown


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("knobs", help="list every knob with its default")
    parser.add_argument("--markdown", action="store_true", help="as docs/knobs.md, the knob reference page")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.markdown:
        print(knobs_markdown(), end="")
        return 0
    for k in knob_docs():
        choices = f" [{' | '.join(k['choices'])}]" if k["choices"] else ""
        print(f"{k['name']:<20} default {k['default']!r}{choices}\n    {k['help']}")
    return 0
