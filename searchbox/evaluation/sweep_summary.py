"""A sweep's summary (design §4): per entry its verdicts, accuracy with a 95% interval, means and tools,
every pair of entries compared question by question, and the same as a terminal table. It reads rows
only; running the sweep is evaluation/sweep.py's job."""

from __future__ import annotations

from collections import Counter
from typing import Any

from searchbox.evaluation.files import VERDICT_POINTS
from searchbox.grading.grader import grader_label, judge_agreement, row_grader
from searchbox.evaluation.intervals import accuracy_interval, format_p, paired_comparison, question_means
from searchbox.records.events import NO_ANSWER


def summarize(rows: list[dict[str, Any]], entry_names: list[str]) -> dict[str, Any]:
    """Per entry: runs that ended without an answer, verdict counts, accuracy (correct 1, partial 0.5) with its 95% interval over questions,
    means, the most used tools; then every pair of entries compared question by question."""
    entries = []
    for name in entry_names:
        mine = [r for r in rows if r["entry"] == name]
        verdicts = Counter(r["score"]["verdict"] for r in mine)
        tools: Counter[str] = Counter()
        for row in mine:
            tools.update(row["tool_counts"])
        types = sorted({r["type"] for r in mine})
        interval = accuracy_interval((r["question_id"], _points(r)) for r in mine)
        judged = [r for r in mine if (r.get("judge") or {}).get("verdict") in VERDICT_POINTS]
        entries.append({
            "entry": name,
            "runs": len(mine),
            "no_answer": sum(r.get("stop_reason") == NO_ANSWER for r in mine),  # runs that ended without an answer
            "repeats": max(Counter(r["question_id"] for r in mine).values(), default=0),
            **{verdict: verdicts[verdict] for verdict in VERDICT_POINTS},
            "accuracy": _accuracy(mine),
            "accuracy_ci": interval.as_dict() if interval is not None else None,
            "judge_accuracy": _mean(VERDICT_POINTS[r["judge"]["verdict"]] for r in judged) if judged else None,
            "judge_agreement": judge_agreement(mine),
            "graders": sorted({grader_label(row_grader(r)) for r in mine}),
            "fact_recall": _mean(r["score"]["fact_recall"] for r in mine),
            "citation_validity": _mean(r["score"]["citation_validity"] for r in mine),
            "citation_precision": _mean(r["score"]["citation_precision"] for r in mine),
            "turns": _mean(r["turns"] for r in mine),
            "tokens": _mean(r["tokens"]["total"] for r in mine),
            "wall_s": _mean(r["wall_s"] for r in mine),
            "top_tools": dict(sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))[:3]),
            "by_type": {t: {"runs": sum(r["type"] == t for r in mine),
                            "accuracy": _accuracy([r for r in mine if r["type"] == t])} for t in types},
        })
    return {"runs": len(rows), "entries": entries, "comparisons": compare_entries(rows, entry_names)}


def compare_entries(rows: list[dict[str, Any]], entry_names: list[str]) -> list[dict[str, Any]]:
    """Every pair (A before B in matrix order) that scored some of the same questions: A's wins, losses
    and ties against B (per question, accuracy averaged over repeats) and the sign test's p-value."""
    means = {name: question_means((r["question_id"], _points(r)) for r in rows if r["entry"] == name)
             for name in entry_names}
    pairs = []
    for i, a in enumerate(entry_names):
        for b in entry_names[i + 1:]:
            paired = paired_comparison(means[a], means[b])
            if paired is not None:
                pairs.append({"a": a, "b": b, **paired.as_dict()})
    return pairs


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a terminal table, then the pairwise comparisons."""
    head = (f"{'entry':<16} {'runs':>4} {'no ans':>6} {'ok/part/wrong':>13} {'acc [95% CI]':>18} {'facts':>5} {'citeV':>5} "
            f"{'citeP':>5} {'turns':>5} {'tokens':>9} {'wall_s':>7}  top tools")
    lines = [head, "-" * len(head)]
    for e in summary["entries"]:
        verdicts = f"{e['correct']}/{e['partial']}/{e['wrong']}"
        tools = ", ".join(f"{name} {n}" for name, n in e["top_tools"].items()) or "-"
        lines.append(f"{e['entry']:<16} {e['runs']:>4} {e.get('no_answer', 0):>6} {verdicts:>13} {_fmt_ci(e.get('accuracy_ci')):>18} "
                     f"{_fmt(e['fact_recall'], 2):>5} {_fmt(e.get('citation_validity'), 2):>5} "
                     f"{_fmt(e['citation_precision'], 2):>5} "
                     f"{_fmt(e['turns'], 1):>5} {_fmt(e['tokens'], 0):>9} {_fmt(e['wall_s'], 1):>7}  {tools}")
    if any(e.get("accuracy_ci") for e in summary["entries"]):
        lines.append("acc: mean over questions (repeats averaged per question), 95% Wilson interval over questions")
    judged = [e for e in summary["entries"] if e.get("judge_accuracy") is not None]
    if judged:
        lines.append("judge accuracy: " + ", ".join(f"{e['entry']} {e['judge_accuracy']:.2f}" for e in judged))
        agreements = [(e["entry"], e["judge_agreement"]) for e in judged if e.get("judge_agreement")]
        if agreements:
            lines.append("judge agrees with the lexical verdict: " + ", ".join(
                f"{name} {a['agree']}/{a['runs']}" for name, a in agreements))
    comparisons = summary.get("comparisons") or []
    if comparisons:
        lines += ["", "paired, question by question (A vs B: wins/losses/ties of A; exact sign test)"]
        for c in comparisons:
            lines.append(f"  {c['a']} vs {c['b']}: {c['wins']}/{c['losses']}/{c['ties']} over {c['questions']} "
                         f"questions, mean difference {c['mean_difference']:+.2f}, p = {format_p(c['p_value'])}")
    return "\n".join(lines)


def _mean(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def _points(row: dict[str, Any]) -> float | None:
    """A run's accuracy from its verdict; None for an ad-hoc question's run, which has none."""
    verdict = row["score"]["verdict"]
    return VERDICT_POINTS[verdict] if verdict is not None else None


def _accuracy(rows: list[dict[str, Any]]) -> float | None:
    return _mean(_points(r) for r in rows)


def _fmt_ci(ci: dict[str, Any] | None) -> str:
    return "-" if ci is None else f"{ci['mean']:.2f} [{ci['low']:.2f},{ci['high']:.2f}]"


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"
