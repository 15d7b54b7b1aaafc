"""A new job (design §2.2): the dataroom installed read-only under work/, the inputs beside it (the
layout is records.job_folder's). Only the folder: the run builds the job's workspace when it starts, and
records its config.json then, with the settings it really uses (agent/run_settings.py); until then the
settings asked for are the caller's (the app keeps them in job.json)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from searchbox.dataroom.unpack import DataroomError
from searchbox.dataroom.work_dir import prepare_work_dir
from searchbox.records.job_folder import JobFolder
from searchbox.records.tree import walk
from searchbox.settings import Settings


def create_job(job_dir: Path, question: str, source: Path, settings: Settings) -> None:
    """Lay out a new job. A refused dataroom raises DataroomError after recording error_dataroom, with the
    settings asked for in its run_meta.json (no run starts to record a config.json)."""
    if not question.strip():
        raise ValueError("the question is empty")
    job_dir.mkdir(parents=True, exist_ok=True)
    if any(job_dir.iterdir()):
        raise FileExistsError(f"{job_dir} is not empty; choose a new folder for the run")
    folder = JobFolder(job_dir)
    folder.write_question(question)
    try:
        prepare_work_dir(job_dir, source)
    except DataroomError as exc:
        folder.write_meta({"stop_reason": "error_dataroom", "done": False, "error": str(exc), "turns": 0,
                           "config": settings.as_config()})
        raise
    _keep_input(source, folder.input_zip)


def _keep_input(source: Path, target: Path) -> None:
    if source.is_file():
        shutil.copyfile(source, target)
        return
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        # Bounded: install_dataroom refused a deeper document, but never looked inside the junk it leaves out.
        for path in sorted(folder / n for folder, _, names in walk(source) for n in names):
            if path.is_file() and not path.is_symlink():
                archive.write(path, path.relative_to(source).as_posix())


def stop_reason_of(job_dir: Path) -> str | None:
    return JobFolder(job_dir).read_meta().get("stop_reason")
