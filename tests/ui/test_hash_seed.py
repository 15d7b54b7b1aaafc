"""Gradio's upload hash seed is the app's alone (issue #43 item 8): bash at each confining level reads
gradio/hash_seed.txt (the app's Python is in its view), but the app names uploads after a seed it holds in
memory only, so what bash reads predicts no upload's folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from gradio import processing_utils
from gradio.utils import HASH_SEED_PATH

from searchbox.citations.ledger import SourceLedger
from searchbox.settings import Settings
from searchbox.tools.registry import REGISTRY
from searchbox.tools.sandbox import SandboxConfig, choose
from searchbox.tools.tool import ToolContext
from searchbox.ui.app import build_app
from searchbox.ui.services import Services

# What a model obeying a hostile document would run: the file as packaged, and as Gradio itself reads it.
READ_SEED = f"cat {HASH_SEED_PATH}; echo; python3 -c 'import gradio.utils as u; print(u.get_hash_seed())'"


@pytest.mark.parametrize("level", ["namespaces", "landlock"])
def test_bash_cannot_learn_the_seed_the_app_names_uploads_after(level: str, tmp_path: Path) -> None:
    if choose(level).name != level:
        pytest.skip(f"this host has no {level} level: {choose(level).reason}")
    settings = Settings.resolve(env={}, searchbox_cache_dir=str(tmp_path / "cache"), searchbox_jobs_dir=str(tmp_path / "jobs"))
    services = Services.start(settings, run_fn=lambda *args: "done")
    try:
        build_app(settings, services)  # the app's start-up
    finally:
        services.scheduler.stop()
    work = tmp_path / "job" / "work"
    (work / "dataroom").mkdir(parents=True)
    result = REGISTRY["bash"].run(ToolContext(work, SourceLedger(), SandboxConfig(level=level)),
                                  {"command": READ_SEED, "timeout": 60})
    read = Path(HASH_SEED_PATH).read_text().strip()
    assert read and read in result.text, result.text  # bash does read the file: the test can fail
    seed = processing_utils.hash_seed
    assert seed.decode() not in result.text
    content = b"a visitor's upload"
    # An upload's folder, as Gradio names it, from what bash learned and from what the app holds.
    assert processing_utils.hash_bytes(content) != hashlib.sha256(read.encode() + content).hexdigest()
