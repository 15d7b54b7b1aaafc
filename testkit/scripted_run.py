"""A whole run of the native loop against an in-process scripted model, for the loop's own decisions:
the real job folder, tools and records, with the model's replies chosen by the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchbox.agent.run import run_job
from searchbox.jobs.job import create_job
from searchbox.llm.types import ChatModel
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings


def scripted_run(tmp_path: Path, question: str, source: Path, model: ChatModel, name: str = "job",
                 **knobs: Any) -> tuple[str, JobFolder]:
    """The stop reason and the job folder of `question` asked of `model` over `source`, keyword search only."""
    settings = Settings.resolve(env={}, **{"searchbox_tools": "keyword_search", "retrieval_preset": "packaged",
                                           "searchbox_cache_dir": str(tmp_path / "cache"), **knobs})
    job_dir = tmp_path / name
    create_job(job_dir, question, source, settings)
    return run_job(job_dir, settings, model), JobFolder(job_dir)
