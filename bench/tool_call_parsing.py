"""The tool calls read from small models' replies, strict vs lenient (TOOL_CALL_PARSING), on a labelled corpus.

    python bench/tool_call_parsing.py [--corpus testkit/data/tool_call_replies.jsonl] [--show]

Each line of the corpus is one assistant reply as the model wrote it, markup and all, labelled by
hand: `format` (how it writes its call: `tagged` in the template's own tags; `fenced-`, `bare-` (the
whole reply) or `line-` (a line of its own) with `json` or `code` (NAME(key=value)); `in-sentence`;
`prose` when it means no call), `intended` (the calls it means, name and arguments) and `source`
(`hand-written` in the formats issue 21 quotes, or the model and the step of the run that wrote it).
The tools on offer are a default run's. Per format it prints the calls the replies mean and how many
each mode reads (the same name and arguments), and the calls each mode reads that no reply meant.
--show prints every reply a mode reads differently from its label.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.llm.dialects.parsing import PARSING_MODES, parse_tool_calls  # noqa: E402
from searchbox.tools.registry import enabled_tools, offered_tools  # noqa: E402

CORPUS = ROOT / "testkit" / "data" / "tool_call_replies.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_calls(reply: dict[str, Any], mode: str, tools: list[dict[str, Any]]) -> tuple[int, int]:
    """(intended calls the mode reads, calls it reads that the reply does not mean)."""
    calls, _ = parse_tool_calls(reply["text"], tools, mode)  # type: ignore[arg-type]
    wanted = [(c["name"], c["arguments"]) for c in reply["intended"]]
    read = [(c.name, c.arguments) for c in calls]
    found = sum(1 for call in wanted if call in read)
    return found, len(read) - sum(1 for call in read if call in wanted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--show", action="store_true", help="print the replies a mode reads differently from their label")
    args = parser.parse_args()
    replies = load(args.corpus)
    tools = offered_tools(enabled_tools(None), bash=True).schemas("brief")  # a default run's, as the packaged presets show them
    replies_per_format: Counter[str] = Counter()
    intended: Counter[str] = Counter()
    found = {mode: Counter[str]() for mode in PARSING_MODES}
    false = {mode: Counter[str]() for mode in PARSING_MODES}
    for reply in replies:
        fmt = reply["format"]
        replies_per_format[fmt] += 1
        intended[fmt] += len(reply["intended"])
        for mode in PARSING_MODES:
            got, made_up = read_calls(reply, mode, tools)
            found[mode][fmt] += got
            false[mode][fmt] += made_up
            if args.show and (got < len(reply["intended"]) or made_up):
                print(f"{mode}: {reply['id']} ({fmt}) read {got} of {len(reply['intended'])}, {made_up} false: "
                      f"{reply['text'][:120]!r}")
    recorded = sum(1 for r in replies if r["source"] != "hand-written")
    print(f"{len(replies)} replies ({recorded} recorded, {len(replies) - recorded} hand-written), "
          f"{sum(intended.values())} intended calls")
    print("| format | replies | intended calls | strict reads | lenient reads | false calls strict / lenient |")
    print("|---|---|---|---|---|---|")
    for fmt in sorted(replies_per_format, key=lambda f: (f == "prose", f)):
        print(f"| {fmt} | {replies_per_format[fmt]} | {intended[fmt]} | {found['strict'][fmt]} | {found['lenient'][fmt]} | "
              f"{false['strict'][fmt]} / {false['lenient'][fmt]} |")
    print(f"| all | {len(replies)} | {sum(intended.values())} | {sum(found['strict'].values())} | "
          f"{sum(found['lenient'].values())} | {sum(false['strict'].values())} / {sum(false['lenient'].values())} |")


if __name__ == "__main__":
    main()
