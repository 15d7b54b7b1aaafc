"""The reliability tables of the README.

First the sandbox: the attack suite of issue 12 (testkit/sandbox_attacks.py) run through the real bash
tool at each BASH_SANDBOX level, one row per attack, a column per level (blocked, or got through).
Then the app's side (testkit/app_attacks.py, issue 20): what bash can leave in work/ for the unconfined
app, each a whole run at each level, every surface a visitor gets checked. Then the hardening tests (hostile datarooms, prompt injections, faults, fuzzing, load, secrets), with
the tally each one reports (testkit/tally.py).

    python bench/reliability.py [--markdown] [--sandbox-only]

A tally is a row (what, figures) that the test which counted them reports to the file this script
names in SEARCHBOX_RELIABILITY_TALLIES; a failing test reports none, and this script then exits non-zero
with pytest's summary. It also exits
non-zero when anything gets through the level a public app would use here (BASH_SANDBOX=auto).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.tally import TALLIES_ENV, read_reports  # noqa: E402
LEVELS = ["namespaces", "landlock", "off"]
TESTS = [
    "tests/dataroom/test_hostile_datarooms.py",
    "tests/dataroom/test_fuzz_unpack.py",
    "tests/ui/test_injection.py",
    "tests/llm/test_faults_endpoint.py",
    "tests/jobs/test_faults_restart.py",
    "tests/retrieval/test_faults_cache.py",
    "tests/jobs/test_scheduler.py::test_the_worker_survives_failing_bookkeeping_writes",
    "tests/llm/test_fuzz_parsing.py",
    "tests/tools/test_fuzz_tool_args.py",
    "tests/tools/test_fuzz_paths.py",
    "tests/ui/test_load.py",
    "tests/ui/test_app_run.py",
    "tests/ui/test_app_uploads.py",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--sandbox-only", action="store_true", help="only the sandbox table (about 2 minutes)")
    args = parser.parse_args()
    from testkit import app_attacks, sandbox_attacks

    sandbox_ok = attack_table(sandbox_attacks, "attack (one bash call)", args.markdown)
    print()
    sandbox_ok = attack_table(app_attacks, "what bash leaves in work/ (one run)", args.markdown) and sandbox_ok
    if args.sandbox_only:
        return 0 if sandbox_ok else 1
    print()
    present = [t for t in TESTS if (ROOT / t.split("::")[0]).exists()]
    with tempfile.TemporaryDirectory(prefix="searchbox-tallies-") as folder:
        reports = Path(folder) / "tallies.jsonl"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", TALLIES_ENV: str(reports)}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *present],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        tallies = read_reports(reports)
    width = max((len(t["what"]) for t in tallies), default=10)
    if args.markdown:
        print("| what was tried | figures |\n|---|---|")
    for tally in tallies:
        print(f"| {tally['what']} | {tally['figures']} |" if args.markdown else f"{tally['what']:<{width}}  {tally['figures']}")
    summary = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else [done.stderr[-2000:]]
    print(f"\npytest: {summary[0]}", file=sys.stderr)
    return done.returncode or (0 if sandbox_ok else 1)


def attack_table(suite: Any, heading: str, markdown: bool) -> bool:
    """Print attack x level for a suite (ATTACKS, run_suite); False when something got through at the
    level BASH_SANDBOX=auto picks."""
    from testkit.sandbox_attacks import limits_note
    from searchbox.tools.sandbox import choose

    outcomes = {level: suite.run_suite(level) for level in LEVELS}
    cell = {None: "n/a", False: "blocked", True: "**got through**" if markdown else "GOT THROUGH"}
    rows = [[a.name, *(cell[outcomes[level][a.name]] for level in LEVELS)] for a in suite.ATTACKS]
    totals = ["blocked / tried", *(f"{sum(v is False for v in outcomes[level].values())} / {len(suite.ATTACKS)}"
                                   if choose(level).name == level else "level not available" for level in LEVELS)]
    public = choose("auto")
    if markdown:
        print(f"| {heading} | " + " | ".join(f"`{level}`" for level in LEVELS) + " |")
        print("|---" * (len(LEVELS) + 1) + "|")
        for row in [*rows, totals]:
            print("| " + " | ".join(row) + " |")
    else:
        width = max(len(r[0]) for r in rows)
        for row in [[heading, *LEVELS], *rows, totals]:
            print(f"{row[0]:<{width}}  " + "  ".join(f"{c:<15}" for c in row[1:]))
    print(f"\nBASH_SANDBOX=auto here: {public.name}; limits: {limits_note()}", file=sys.stderr)
    return not public.allows_bash or not any(outcomes.get(public.name, {}).values())


if __name__ == "__main__":
    sys.exit(main())
