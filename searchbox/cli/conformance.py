"""python -m searchbox conformance: how well models call tools on fixed situations of the agent loop."""

from __future__ import annotations

import argparse
from pathlib import Path

from searchbox.cli.options import Subcommands, add_set, parse_overrides
from searchbox.settings import Settings


def add_to(sub: Subcommands) -> None:
    parser = sub.add_parser("conformance", help="tool-call conformance of models on fixed situations of the agent loop")
    parser.add_argument("--model", action="append", default=[], metavar="SPEC",
                        help="a model to check: an LLM_GGUF value, or an endpoint URL (LLAMA_URL); repeatable "
                             "(default: the model the settings name)")
    parser.add_argument("--repeat", type=int, default=1, help="ask each probe N times")
    parser.add_argument("--probes", help="probe file (default: searchbox/evaluation/conformance_probes.json)")
    parser.add_argument("--out", help="write every response and its scores to this JSON file")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    add_set(parser, "for every model checked")
    parser.set_defaults(func=run, loads_model=True)


def run(args: argparse.Namespace) -> int:
    """Tool-call conformance of one or more models on the fixed probe situations; a table per model."""
    from searchbox.evaluation.conformance import check_models, format_table, model_settings
    from searchbox.evaluation.probes import DEFAULT_PROBES, load_probes
    from searchbox.records.files import write_json

    if args.repeat < 1:
        raise ValueError("--repeat must be at least 1")
    base = Settings.resolve(**parse_overrides(args.set))
    probes = load_probes(Path(args.probes) if args.probes else DEFAULT_PROBES)
    reports = check_models(model_settings(base, args.model), probes, repeat=args.repeat)
    if args.out:
        write_json(Path(args.out), {"repeat": args.repeat, "models": [r.as_dict() for r in reports]})
    print("\n" + format_table(reports, markdown=args.markdown))
    return 0
