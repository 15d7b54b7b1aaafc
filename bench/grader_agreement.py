"""The lexical grader (grading/fact_match.py) measured against a careful reader, and the first
matcher (citations/facts.py's span_present) on the same pairs; optionally a judge model too.

    python bench/grader_agreement.py                 # figures over bench/data/grader_pairs.jsonl
    python bench/grader_agreement.py --list          # also every pair the new matcher gets wrong, explained
    python bench/grader_agreement.py --judge [--sample N] [--set LLM_GGUF=packaged:qwen2.5-coder-0.5b] [--judge-url URL]
                                                     # the judge's verdicts per answer against the labels
    python bench/grader_agreement.py --rescore SWEEP_OR_RUN ...   # real runs: old and new verdicts side by side

The pairs: (answer, fact) with a label given by reading the answer (present / absent / contradicted),
from three question sets of different phrasing styles: the built-in set (short spans: '$118.40'),
assets/pydocs_claims_questions.jsonl (claims: 'The dataset has 20,640 instances') and issue 22's example
over the built-in dataroom; answers from real runs quoted in the README, bench/citation_checks.py's
hand-written ones, and paraphrases, near-misses and wrong numbers written for this bench. Each row
names its source, and its split: "dev" (the pairs the matcher's rules were worked out on) or
"held-out" (written and labelled once the rules were settled, to measure them on text they never saw). An answer's verdict label follows from its facts' labels as score's does: all
present correct, some partial, none wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.assets import BUILTIN_QUESTIONS, PYDOCS_CLAIM_QUESTIONS  # noqa: E402
from searchbox.evaluation.questions import load_questions  # noqa: E402
from searchbox.grading.fact_match import match_fact  # noqa: E402
from searchbox.grading.lexical import answer_verdict as verdict, asked_by  # noqa: E402
from searchbox.records.job_folder import JobFolder  # noqa: E402
from searchbox.citations.facts import span_present  # noqa: E402

PAIRS = ROOT / "bench" / "data" / "grader_pairs.jsonl"
EXTRA_QUESTIONS = ROOT / "bench" / "data" / "grader_questions.jsonl"  # questions of pairs outside the two sets
QUESTION_FILES = (BUILTIN_QUESTIONS, PYDOCS_CLAIM_QUESTIONS, EXTRA_QUESTIONS)
Row = dict


def load_pairs(path: Path = PAIRS) -> list[Row]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def questions_by_id() -> dict[str, dict]:
    return {q["id"]: q for path in QUESTION_FILES for q in load_questions(path)}


def grade(pairs: list[Row], questions: dict[str, dict]) -> list[Row]:
    """Each pair with the old matcher's status (present / absent) and the new one's, with its explanation."""
    graded = []
    for pair in pairs:
        question = questions[pair["question_id"]]["question"]
        match = match_fact(pair["fact"], pair["answer"], question)
        old = "present" if span_present(pair["fact"], pair["answer"]) else "absent"
        graded.append({**pair, "old": old, "new": match.status, "why": match.explain(),
                       "asked": asked_by(pair["fact"], question)})
    return graded


def presence(rows: Iterable[Row], key: str) -> tuple[int, int, int]:
    """(true positives, said present, truly present) of 'present' under the matcher `key`."""
    rows = list(rows)
    said = [r for r in rows if r[key] == "present"]
    return (sum(r["label"] == "present" for r in said), len(said), sum(r["label"] == "present" for r in rows))


def answers(rows: list[Row]) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        grouped[row["answer_id"]].append(row)
    return grouped


def asked(group: list[Row]) -> list[bool]:
    """Which of an answer's facts its question itself states: they earn no partial credit (score's rule)."""
    return [r["asked"] for r in group]


def ratio(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b:.0%})" if b else "–"


def figures(rows: list[Row]) -> None:
    groups: list[tuple[str, Callable[[Row], bool]]] = [("all", lambda r: True)]
    groups += [(f"set {s}", lambda r, s=s: r["set"] == s) for s in dict.fromkeys(r["set"] for r in rows)]
    groups += [(f"split {s}", lambda r, s=s: r["split"] == s) for s in dict.fromkeys(r["split"] for r in rows)]
    per_answer = list(groups)
    groups += [(f"style {s}", lambda r, s=s: r["style"] == s) for s in ("span", "claim")]
    groups += [(f"held-out {s}", lambda r, s=s: r["split"] == "held-out" and r["style"] == s) for s in ("span", "claim")]
    print(f"{len(rows)} labelled pairs in {len(answers(rows))} answers; labels: "
          + ", ".join(f"{k} {v}" for k, v in Counter(r["label"] for r in rows).most_common()))
    print("\nPresence against the labels (precision: said present and is; recall: of the truly present, found)\n")
    print("| pairs | n | old precision | old recall | new precision | new recall | new: 3-way agreement |")
    print("|---|---|---|---|---|---|---|")
    for name, keep in groups:
        mine = [r for r in rows if keep(r)]
        old, new = presence(mine, "old"), presence(mine, "new")
        agree = sum(r["new"] == r["label"] for r in mine)
        print(f"| {name} | {len(mine)} | {ratio(old[0], old[1])} | {ratio(old[0], old[2])} | "
              f"{ratio(new[0], new[1])} | {ratio(new[0], new[2])} | {ratio(agree, len(mine))} |")
    said = [r for r in rows if r["new"] == "contradicted"]
    truly = [r for r in rows if r["label"] == "contradicted"]
    print(f"\ncontradicted: the new matcher says so for {len(said)} pairs, {sum(r['label'] == 'contradicted' for r in said)} "
          f"of them labelled contradicted ({sum(r['label'] == 'present' for r in said)} labelled present); "
          f"of the {len(truly)} labelled contradicted it finds {sum(r['new'] == 'contradicted' for r in truly)}, "
          f"calls {sum(r['new'] == 'absent' for r in truly)} absent and {sum(r['new'] == 'present' for r in truly)} present")
    print("\nVerdicts per answer (correct / partial / wrong, as score gives them) against the labels' verdict\n")
    print("| answers | n | old agrees | new agrees |")
    print("|---|---|---|---|")
    for name, keep in per_answer:
        grouped = [g for g in answers(rows).values() if keep(g[0])]
        old = sum(verdict([r["old"] for r in g]) == verdict([r["label"] for r in g], asked(g)) for g in grouped)
        new = sum(verdict([r["new"] for r in g], asked(g)) == verdict([r["label"] for r in g], asked(g))
                  for g in grouped)
        print(f"| {name} | {len(grouped)} | {ratio(old, len(grouped))} | {ratio(new, len(grouped))} |")


def listing(rows: list[Row]) -> None:
    print("\nPairs the new matcher gets wrong (label -> new; old):")
    for r in rows:
        if r["new"] != r["label"]:
            print(f"  {r['id']} {r['set']:<13} {r['label']:>12} -> {r['new']:<12} (old {r['old']}) "
                  f"{r['fact']!r} in {r['answer'][:70]!r}\n      {r['why']}")


def judge(rows: list[Row], questions: dict[str, dict], overrides: list[str], url: str | None, model_id: str) -> None:
    """The judge's verdict on each answer (grading/answer_judge.py, the prompt `--judge` uses) against the labels'."""
    import time

    from searchbox.cli.options import parse_overrides
    from searchbox.grading.answer_judge import judge_answer
    from searchbox.llm.choice.connect import connect
    from searchbox.settings import Settings

    settings = Settings.resolve(**parse_overrides(overrides))
    if url:
        settings = settings.with_overrides(llama_url=url, model_id=model_id)
    model = connect(settings, on_note=lambda note: print(f"note: {note}"))
    grouped = answers(rows)
    tally: Counter[tuple[str, str]] = Counter()
    lexical = 0
    started = time.monotonic()
    for group in grouped.values():
        question = questions[group[0]["question_id"]]
        judged = judge_answer(model, question, group[0]["answer"])
        truth, new = verdict([r["label"] for r in group], asked(group)), verdict([r["new"] for r in group], asked(group))
        tally[(truth, judged.verdict)] += 1
        lexical += judged.verdict == new
        print(f"  {group[0]['answer_id']} {group[0]['set']:<13} label {truth:<8} judge {judged.verdict:<8} "
              f"lexical {new:<8} {judged.reason[:80]!r}", flush=True)
    agree = sum(n for (t, j), n in tally.items() if t == j)
    print(f"\njudge {model.model_id}: agrees with the labels' verdict on {ratio(agree, len(grouped))} answers, with the "
          f"lexical verdict on {ratio(lexical, len(grouped))}; unreadable replies "
          f"{sum(n for (_, j), n in tally.items() if j == 'unknown')}; {time.monotonic() - started:.0f} s")
    for truth in ("correct", "partial", "wrong"):
        print(f"  labelled {truth}: " + ", ".join(f"judge {j} {n}" for (t, j), n in sorted(tally.items()) if t == truth))


def rescore(folders: list[Path], questions: dict[str, dict]) -> None:
    """Every run under the folders scored by both matchers: each fact's old and new status, the verdicts."""
    by_text = {q["question"].strip(): q for q in questions.values()}
    ids: dict[Path, str | None] = {}
    for folder in folders:  # a sweep's runs, from its rows (never a walk into work/, which may link anywhere)
        results = folder / "results.jsonl"
        if not results.is_file():
            ids[folder.resolve()] = None  # a job folder itself
            continue
        for line in results.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("job_dir"):
                ids[(folder / row["job_dir"]).resolve()] = row.get("question_id")
    jobs = sorted(job for job in ids if JobFolder(job).read_answer().exists)
    changed = 0
    for job in jobs:
        query = job / "query.txt"
        question = questions.get(ids[job] or "") or (
            by_text.get(query.read_text(encoding="utf-8").strip()) if query.is_file() else None)
        if question is None:
            print(f"  {job}: its question is in no question set here, skipped")
            continue
        answer = JobFolder(job).answer_text()  # as the app reads work/: no link followed
        facts = question["must_facts"] + question.get("computed_facts", [])
        old = ["present" if span_present(f, answer) else "absent" for f in facts]
        new = [match_fact(f, answer, question["question"]) for f in facts]
        stated = [asked_by(f, question["question"]) for f in facts]
        before, after = verdict(old), verdict([m.status for m in new], stated)
        changed += before != after
        print(f"== {job} ({question['id']}): {before} -> {after}")
        for fact, o, m in zip(facts, old, new):
            if o != m.status:
                print(f"     {fact!r}: {o} -> {m.status}: {m.explain()}")
    print(f"{len(jobs)} runs found, {changed} verdicts changed" if jobs else
          "no runs found under " + ", ".join(map(str, folders)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--list", action="store_true", help="print every pair the new matcher gets wrong")
    parser.add_argument("--judge", action="store_true", help="also grade each answer with a judge model")
    parser.add_argument("--judge-url", help="the judge's OpenAI-compatible endpoint (default: LLAMA_URL or the built-in runtime)")
    parser.add_argument("--judge-model", default="", help="model id for --judge-url")
    parser.add_argument("--sample", type=int, help="--judge: only N answers, evenly spread over the pairs")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", help="--judge: a knob for the judge")
    parser.add_argument("--rescore", nargs="+", type=Path, metavar="FOLDER", help="job or sweep folders to score again")
    args = parser.parse_args()
    questions = questions_by_id()
    if args.rescore:
        rescore(args.rescore, questions)
        return
    rows = grade(load_pairs(args.pairs), questions)
    figures(rows)
    if args.list:
        listing(rows)
    if args.judge or args.judge_url:
        ids = list(answers(rows))
        keep = {ids[i * len(ids) // args.sample] for i in range(min(args.sample, len(ids)))} if args.sample else None
        judge([r for r in rows if keep is None or r["answer_id"] in keep], questions, args.set, args.judge_url,
              args.judge_model)


if __name__ == "__main__":
    main()
