"""What a sweep runs and what it records: its questions (a question set's, or one ad-hoc question),
each run's job folder and seed, and the results row built from a finished run's records."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.evaluation.matrix import MatrixEntry
from searchbox.grading.score import score_run
from searchbox.llm.types import ChatModel
from searchbox.records.files import write_json
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings

TOKEN_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "reasoning", "total")
FACT_FIELDS = ("fact", "kind", "status", "explanation")
Question = dict[str, Any]
ADHOC_TYPE = "adhoc"  # the type of a question with no gold answer


def adhoc_question(text: str) -> Question:
    """An ad-hoc question (ablate --query): no gold answer, so runs are compared on behaviour only."""
    text = text.strip()
    if not text:
        raise ValueError("--query needs a question")
    return {"id": "query", "question": text, "answer": None, "must_facts": [], "gold_files": [], "type": ADHOC_TYPE}


def is_adhoc(question: Question) -> bool:
    return question.get("answer") is None


def first_seed(settings: Settings) -> int:
    """Repeat 1's sampling seed: LLM_SEED when set, else 1."""
    return settings.llm_seed if settings.llm_seed is not None else 1


def job_folder(out: Path, entry: str, question_id: str, repeat: int) -> Path:
    """A run's job folder; repeat 1 keeps the name a sweep without repeats gives it."""
    name = question_id if repeat == 1 else f"{question_id}@r{repeat}"
    return out / "runs" / entry / name


@dataclass(frozen=True)
class Placement:
    """Where a run ran (the engine's name for the machine) and how long it waited for a slot."""

    node: str
    queue_s: float


def build_row(entry: MatrixEntry, question: Question, job_dir: Path, out: Path, repeat: int = 1,
              judge: ChatModel | None = None, placement: Placement | None = None) -> dict[str, Any]:
    """One results row, from the run's records (run_meta.json is the authority) and its score; with a
    judge, the full score (the judge's prompt and raw reply too) is also kept as the run's score.json.
    `placement` says where the run ran and how long it waited; a row rebuilt from a job folder alone
    (the driver was killed before writing it) does not know, and says None."""
    meta = JobFolder(job_dir).read_meta()
    score = score_run(job_dir, question, judge)
    if judge is not None:
        write_json(JobFolder(job_dir).score, score)
    tokens = meta.get("tokens") or {}
    citations = score["citations"]
    adhoc = is_adhoc(question)
    row = {
        "entry": entry.name,
        "question_id": question["id"],
        "type": question["type"],
        "repeat": repeat,
        "seed": (meta.get("config") or {}).get("LLM_SEED"),
        "overrides": entry.knobs(),
        "endpoint": (meta.get("config") or {}).get("LLAMA_URL") or None,  # None: the built-in runtime
        "stop_reason": meta.get("stop_reason"),
        "done": bool(meta.get("done")),
        "turns": meta.get("turns", 0),
        "budget": meta.get("budget"),
        "force_budget": meta.get("force_budget"),
        "tokens": {name: tokens.get(name, 0) for name in TOKEN_FIELDS},
        "tool_calls": meta.get("tool_calls", 0),
        "tool_counts": dict(sorted((meta.get("tool_counts") or {}).items())),
        "bash_programs": dict(sorted((meta.get("bash_programs") or {}).items())),
        "wall_s": meta.get("elapsed_seconds"),
        "node": placement.node if placement is not None else None,
        "queue_s": round(placement.queue_s, 3) if placement is not None else None,
        "harness": meta.get("harness"),  # None: recorded before runs named their harness
        "assist_firings": meta.get("assist_firings") or {},
        "score": {
            "verdict": None if adhoc else score["verdict"],
            "fact_recall": None if adhoc else score["fact_recall"],
            "citation_validity": citations["validity"],
            # With no gold files there is nothing to be precise about.
            "citation_precision": None if adhoc else citations["precision"],
            "citation_recall": None if adhoc else citations["recall"],
            "citation_supported": citations["supported_rate"],
            "premise_corrected": score["premise"]["corrected"] if score["premise"] is not None else None,
            "grader": score["grader"],
            # Each fact's verdict and the passage it rests on, for the report and the Compare tab.
            "facts": [] if adhoc else [{k: f[k] for k in FACT_FIELDS} for f in score["facts"]],
        },
        "job_dir": job_dir.relative_to(out).as_posix(),
    }
    if score["judge"] is not None:
        row["judge"] = score["judge"]
    return row


def select_questions(questions: list[Question], ids: list[str] | None = None, per_type: int | None = None,
                     limit: int | None = None) -> list[Question]:
    """The questions a sweep runs, in question-set order: these ids, then the first N of each type, then the first N."""
    if ids:
        unknown = sorted(set(ids) - {q["id"] for q in questions})
        if unknown:
            raise ValueError(f"no question with id(s) {', '.join(unknown)} in the question set")
        questions = [q for q in questions if q["id"] in set(ids)]
    if per_type is not None:
        seen: Counter[str] = Counter()
        chosen = []
        for question in questions:
            seen[question["type"]] += 1
            if seen[question["type"]] <= per_type:
                chosen.append(question)
        questions = chosen
    if limit is not None:
        questions = questions[:limit]
    if not questions:
        raise ValueError("the selection leaves no questions to run")
    return questions
