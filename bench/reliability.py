"""The reliability table of the README: runs the hardening tests (hostile datarooms, prompt
injections, faults, fuzzing, load, secrets) and gathers the tally line each one prints.

    python bench/reliability.py [--markdown]

A tally line is `RELIABILITY <what>: <figures>`, printed by the test that counted them; a test that
fails prints no tally, and this script then exits non-zero with pytest's summary.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/test_hostile_datarooms.py",
    "tests/test_fuzz_unpack.py",
    "tests/test_injection.py",
    "tests/test_faults_endpoint.py",
    "tests/test_faults_restart.py",
    "tests/test_faults_cache.py",
    "tests/test_scheduler.py::test_the_worker_survives_failing_bookkeeping_writes",
    "tests/test_fuzz_parsing.py",
    "tests/test_fuzz_tool_args.py",
    "tests/test_fuzz_paths.py",
    "tests/test_load.py",
    "tests/test_app_run.py",
]
TALLY = re.compile(r"RELIABILITY (?P<what>[^:]+): (?P<figures>.+)$")  # may follow pytest's progress dots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    present = [t for t in TESTS if (ROOT / t.split("::")[0]).exists()]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *present],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    tallies = [m.groupdict() for line in done.stdout.splitlines() if (m := TALLY.search(line.strip()))]
    width = max((len(t["what"]) for t in tallies), default=10)
    if args.markdown:
        print("| what was tried | figures |\n|---|---|")
    for tally in tallies:
        print(f"| {tally['what']} | {tally['figures']} |" if args.markdown else f"{tally['what']:<{width}}  {tally['figures']}")
    summary = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else [done.stderr[-2000:]]
    print(f"\npytest: {summary[0]}", file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
