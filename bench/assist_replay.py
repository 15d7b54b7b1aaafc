"""Which runs of a sweep's minimal-loop entry each assist, alone, would have changed, and where: each
assist's own code replayed over the runs' records (searchbox/evaluation/assist_replay.py).

    python bench/assist_replay.py SWEEP                       # over SWEEP's "minimal" entry
    python bench/assist_replay.py SWEEP --baseline NAME       # another entry of the minimal loop
    python bench/assist_replay.py SWEEP --check [OTHER ...]   # and hold the replay to real runs

--check looks at every entry (of SWEEP and of the OTHER sweep folders) that ran one assist alone on the
baseline's questions and seeds: a run the replay says the assist leaves alone must have the baseline
run's transcript (tool-call ids aside) and no firing; a run it says the assist changes must have fired
that assist, first at the step the replay names.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.evaluation.assist_replay import Firing, replay, same_transcript  # noqa: E402
from searchbox.records.events import AssistFired, read_events  # noqa: E402
from searchbox.records.files import read_jsonl  # noqa: E402
from searchbox.records.job_folder import JobFolder  # noqa: E402
from searchbox.settings.loop import ASSIST_NAMES  # noqa: E402

Cell = tuple[str, int]  # question id, repeat


def runs_of(sweep: Path, entry: str) -> dict[Cell, Path]:
    return {(r["question_id"], r.get("repeat", 1)): sweep / r["job_dir"]
            for r in read_jsonl(sweep / "results.jsonl") if r["entry"] == entry}


def alone_entries(sweep: Path) -> dict[str, str]:
    """The entries of a sweep that ran one assist alone: entry name -> assist."""
    found = {}
    for row in read_jsonl(sweep / "results.jsonl"):
        assists = JobFolder(sweep / row["job_dir"]).read_meta().get("harness", {}).get("assists") or []
        if len(assists) == 1:
            found[row["entry"]] = assists[0]
    return found


def first_firing(job_dir: Path, assist: str) -> int | None:
    return next((e.step for e in read_events(JobFolder(job_dir).events)
                 if isinstance(e, AssistFired) and e.assist == assist), None)


def print_replay(replays: dict[Cell, dict[str, Firing | None]]) -> None:
    print(f"| assist | runs it would change (of {len(replays)}) | where it would first act |")
    print("|---|---|---|")
    for assist in ASSIST_NAMES:
        firings = [r[assist] for r in replays.values() if r[assist] is not None]
        where = Counter(f"{f.hook} at step {f.step}" for f in firings)
        print(f"| {assist} | {len(firings)} | {', '.join(f'{k} ({v})' for k, v in where.most_common()) or '-'} |")


def check(replays: dict[Cell, dict[str, Firing | None]], baseline: dict[Cell, Path], sweeps: list[Path]) -> None:
    print("\n| entry | assist | runs | replay: unchanged / same transcript, no firing | replay: changed / fired there |")
    print("|---|---|---|---|---|")
    for sweep in sweeps:
        for entry, assist in alone_entries(sweep).items():
            unchanged = same = changed = fired_there = 0
            runs = {cell: job for cell, job in runs_of(sweep, entry).items() if cell in replays}
            for cell, job in runs.items():
                firing = replays[cell][assist]
                real = first_firing(job, assist)
                if firing is None:
                    unchanged += 1
                    same += real is None and same_transcript(job, baseline[cell])
                else:
                    changed += 1
                    fired_there += real == firing.step
            print(f"| {sweep.name}/{entry} | {assist} | {len(runs)} | {unchanged} / {same} | {changed} / {fired_there} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("--baseline", default="minimal", help="the sweep's entry of the minimal loop")
    parser.add_argument("--check", nargs="*", type=Path, default=None, metavar="OTHER",
                        help="hold the replay to the single-assist entries of SWEEP and these sweep folders")
    args = parser.parse_args(argv)
    if not (args.sweep / "results.jsonl").is_file():
        raise SystemExit(f"{args.sweep} is not a sweep folder: it has no results.jsonl (python -m searchbox ablate --out writes one)")
    baseline = runs_of(args.sweep, args.baseline)
    if not baseline:
        raise SystemExit(f"{args.sweep} has no runs of an entry named {args.baseline!r}")
    assisted = [job for job in baseline.values() if JobFolder(job).read_meta().get("harness", {}).get("assists")]
    if assisted:  # the replay starts from the loop with no assist: another's runs are already changed
        raise SystemExit(f"{args.baseline!r} is not the minimal loop: {assisted[0]} ran with assists on")
    replays: dict[Cell, Any] = {cell: replay(job) for cell, job in sorted(baseline.items())}
    print_replay(replays)
    if args.check is not None:
        check(replays, baseline, [args.sweep, *args.check])


if __name__ == "__main__":
    main()
