"""A sweep small enough to run in seconds: three questions over the small dataroom, a two-entry matrix, and
the scripted model's plan for each question (correct, partial, wrong), for the sweep tests and bench/sweep_scaling.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchbox.settings import Settings
from testkit.scripted_endpoint import Reply

QUESTIONS = [
    {"id": "lease", "question": "When does the office lease at 14 Harbour Street end?", "answer": "31 March 2029",
     "must_facts": ["31 March 2029"], "gold_files": ["legal/lease.txt"], "type": "literal"},
    {"id": "leave", "question": "How much holiday and parental leave do staff get?",
     "answer": "28 days of holiday; sixteen weeks of parental leave at full pay",
     "must_facts": ["28 days", "sixteen weeks"], "gold_files": ["hr/handbook.md"], "type": "paraphrased"},
    {"id": "dublin", "question": "Why did hosting spend rise after the move to the Dublin data centre?",
     "answer": "It fell, after a move to Frankfurt, not Dublin.", "must_facts": ["Frankfurt", "fell"],
     "gold_files": ["finance/costs.md"], "type": "negative"},
]
# What the scripted model reads for each question, then answers: correct, partial, wrong (wrong file).
PLAN = {
    QUESTIONS[0]["question"]: ("legal/lease.txt", "The lease runs until 31 March 2029 [s1]."),
    QUESTIONS[1]["question"]: ("hr/handbook.md", "Staff get 28 days of paid holiday [s1]."),
    QUESTIONS[2]["question"]: ("tech/security.md", "Hosting went up because of encryption [s1]."),
}
MATRIX = {"entries": [
    {"name": "kw-b1", "overrides": {"SEARCHBOX_TOOLS": "keyword_search", "TURN_BUDGET": 1}},
    # lower-case knob names; an effort whose budget the explicit override replaces
    {"name": "none-b2f", "effort": "Balanced", "overrides": {"searchbox_tools": "", "turn_budget": "2"}},
]}


def answer_from_content(body: dict[str, Any]) -> Reply:
    path, answer = PLAN[body["messages"][1]["content"]]
    if not any(m["role"] == "tool" for m in body["messages"]):
        return Reply(tool_calls=[{"name": "read", "arguments": {"path": f"dataroom/{path}"}}])
    return Reply(text=answer)


def base_settings(cache: Path, url: str = "") -> Settings:
    return Settings.resolve(env={}, llama_url=url, model_id="scripted", retrieval_preset="packaged",
                            searchbox_cache_dir=str(cache))
