"""python -m searchbox doctor: what this machine gives the app, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from searchbox.cli.options import Subcommands, add_set, parse_overrides
from searchbox.settings import Settings


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("doctor", help="what this machine gives the app: GPU, llama.cpp offload, sandbox, models, disk")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    add_set(parser, "for the report")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """What this machine gives the app (GPU, llama.cpp offload, sandbox level, models at hand, disk);
    a notice when a GPU is present and unused."""
    from searchbox.doctor import gather, rows

    report = gather(Settings.resolve(**parse_overrides(args.set)))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    lines = rows(report)
    width = max(len(topic) for topic, _ in lines)
    for topic, value in lines:
        print(f"{topic:<{width}}  {value}")
    for notice in report.notices:
        print(f"\n!!! {notice}", file=sys.stderr)
    return 0
