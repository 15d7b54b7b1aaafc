"""python -m searchbox report: a sweep's (or retrieval evaluation's) HTML report with its charts."""

from __future__ import annotations

import argparse
from pathlib import Path

from searchbox.cli.options import Subcommands


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("report", help="an HTML report with charts (and PNGs) of a sweep or retrieval-eval folder")
    parser.add_argument("folder", metavar="FOLDER",
                        help="a folder with results.jsonl (ablate) and/or retrieval.json (retrieval-eval)")
    parser.add_argument("--pool-harnesses", action="store_true",
                        help="pool an entry's runs of different harnesses (version, commit, assists, parser): "
                             "by default each is reported apart")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """A sweep's (or retrieval evaluation's) report: FOLDER/report.html and a PNG per chart in FOLDER/charts."""
    from searchbox.evaluation.report import write_report

    page = write_report(Path(args.folder), on_note=print, pool_harnesses=args.pool_harnesses)
    print(f"report written to {page}")
    return 0
