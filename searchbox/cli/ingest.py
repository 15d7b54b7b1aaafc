"""python -m searchbox ingest: unpack and extract a dataroom, and list how each file was read."""

from __future__ import annotations

import argparse
import json

from searchbox.cli.options import Subcommands, add_dataroom_command, job_workspace


def add_to(sub: Subcommands) -> None:
    parser = add_dataroom_command(sub, "ingest", "unpack and extract a dataroom; list each file's status")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with job_workspace(args, retrieval=False) as workspace:
        corpus = workspace.corpus
    statuses = corpus.statuses()
    if args.json:
        print(json.dumps(statuses, indent=2))
        return 0
    for row in statuses:
        reason = f"  ({row['reason']})" if row["reason"] else ""
        print(f"{row['status']:<8} {row['chunks']:>5} chunks {row['chars']:>9} chars  {row['path']}{reason}")
    ok = sum(r["status"] == "ok" for r in statuses)
    print(f"{ok} of {len(statuses)} files read, {len(corpus.chunks)} chunks")
    return 0
