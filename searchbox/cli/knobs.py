"""python -m searchbox knobs: every knob with its default and help, docs/knobs.md's Markdown, or .env.example."""

from __future__ import annotations

import argparse

from searchbox.cli.options import Subcommands
from searchbox.settings.docs import env_example, knob_docs, knobs_markdown


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("knobs", help="list every knob with its default")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="as docs/knobs.md, the knob reference page")
    form.add_argument("--env-example", action="store_true",
                      help="as .env.example, the knobs an operator sets for a deployment, commented out")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.markdown:
        print(knobs_markdown(), end="")
        return 0
    if args.env_example:
        print(env_example(), end="")
        return 0
    for k in knob_docs():
        choices = f" [{' | '.join(k['choices'])}]" if k["choices"] else ""
        print(f"{k['name']:<20} default {k['default']!r}{choices}\n    {k['help']}")
    return 0
