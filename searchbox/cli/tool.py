"""python -m searchbox tool: one call of any tool, as a run makes it, its result printed as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from searchbox.cli.options import Subcommands, add_dataroom_command, job_workspace
from searchbox.settings import SettingsError


def add_to(sub: Subcommands) -> None:
    parser = add_dataroom_command(sub, "tool", "run one tool, built-in or catalog (bash at the BASH_SANDBOX level), "
                                               "and print its result as JSON: output (what the model sees), is_error, "
                                               "details, result")
    parser.add_argument("name")
    parser.add_argument("--args", default="{}", help="the tool's arguments as a JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """One call of any tool, built-in or catalog, as a run makes it (bash at the BASH_SANDBOX level, or
    refused with the reason when there is none); prints the result as JSON, exits 1 on an error result."""
    import time

    from searchbox.agent.toolbox import RunToolbox
    from searchbox.tools.catalog import CATALOG_TOOLS

    try:
        raw_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"--args must be a JSON object: {exc}") from None
    with job_workspace(args, retrieval=any(tool.name == args.name for tool in CATALOG_TOOLS)) as workspace:
        toolbox = RunToolbox(workspace, workspace.settings, every_catalog_tool=True)
        for note in toolbox.notes:
            print(f"note: {note}", file=sys.stderr)
        started = time.perf_counter()
        output = toolbox.call(args.name, raw_args, None)
        record = {**output.record(), "elapsed_ms": round((time.perf_counter() - started) * 1000, 1)}
        if args.name == "bash":
            record["sandbox"] = toolbox.sandbox_level.record()
        if args.job:
            workspace.save_ledger()
    print(json.dumps(record, indent=2, ensure_ascii=False))
    return 1 if output.is_error else 0
