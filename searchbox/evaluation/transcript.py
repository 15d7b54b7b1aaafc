"""A finished run's conversation as its model saw it: the knobs it ran with (its config.json), its system
prompt and tools, and its session's messages, for benches that ask the run's model again
(bench/follow_up_replay.py, bench/prompt_lookup.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchbox.agent.prompts import run_system_prompt
from searchbox.agent.toolbox import RunToolbox
from searchbox.evaluation.assist_replay import run_settings
from searchbox.llm.types import Message
from searchbox.records.files import read_jsonl
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.workspace import Workspace


@dataclass(frozen=True)
class RunTranscript:
    settings: Settings  # the run's recorded knobs, no assist on
    tools: list[dict[str, Any]]
    messages: list[Message]  # the system prompt, then session.jsonl's messages in order


def run_transcript(job_dir: Path) -> RunTranscript:
    """The run in job_dir as its model saw it; ValueError for a folder that holds no run."""
    folder = JobFolder(job_dir)
    if not folder.session.is_file() or not folder.config.is_file():
        raise ValueError(f"{job_dir} is not a job folder with a transcript (no config.json or session.jsonl)")
    settings = run_settings(folder.read_config(), "")
    tools = RunToolbox(Workspace.open(job_dir, settings), settings).schemas()
    rows = [row["message"] for row in read_jsonl(folder.session) if row.get("type") == "message"]
    return RunTranscript(settings, tools, [{"role": "system", "content": run_system_prompt(settings, tools)}, *rows])
