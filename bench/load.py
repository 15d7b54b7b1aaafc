"""Load benchmark: the real app takes many runs at once from many visitors (gradio_client), against
a fast scripted OpenAI-compatible endpoint, while a probe times the page and the jobs table; the
app's resident memory is read after 10 finished runs and after the last.

    python bench/load.py [--runs 50] [--clients 10]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.load_harness import run_load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="runs submitted in all")
    parser.add_argument("--clients", type=int, default=10, help="gradio_client visitors submitting them at once")
    args = parser.parse_args()
    result = run_load(args.runs, args.clients)
    print("== App under load ==")
    width = max(len(name) for name, _ in result.table_rows())
    for name, value in result.table_rows():
        print(f"  {name:<{width}}  {value}")
    for error in [*result.errors, *result.page.errors, *result.table.errors, *result.opened.errors][:10]:
        print(f"  ! {error}")
    print(f"load: {result.tally()}")


if __name__ == "__main__":
    main()
