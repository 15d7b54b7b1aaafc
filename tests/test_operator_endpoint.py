"""No form of the operator's endpoint reaches a visitor (issue #32 item 3): not the bundle's records
(Pi's models.json writes it as Pi needs it, `.../v1` with no /chat/completions; pi-stderr.log names
it), not the feed's "connecting to" line."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from searchbox.agent.pi.config import PiPaths, base_url, write_agent_dir
from searchbox.agent.run import _loading_message
from searchbox.jobs.bundle import make_bundle
from searchbox.records.job_folder import JobFolder
from searchbox.settings import Settings
from searchbox.ui.visitors import operator_details

LLAMA_URL = "http://10.11.12.13:8081/v1/chat/completions/"
HOST = "10.11.12.13"


def test_a_visitors_bundle_shows_no_form_of_the_operators_endpoint(tmp_path: Path) -> None:
    settings = Settings.resolve(env={"LLAMA_URL": LLAMA_URL, "MODEL_ID": "m"})
    job = tmp_path / "job"
    JobFolder(job).work.mkdir(parents=True)
    (job / "work" / "ANSWER.md").write_text("The lease ends in 2029.\n")
    paths = PiPaths(job / "pi")
    write_agent_dir(paths, base_url(settings.llama_url), "m", 4096, 256)  # what a HARNESS=pi run writes
    paths.stderr.write_text(f"Error: connect ECONNREFUSED {HOST}:8081 ({base_url(LLAMA_URL)})\n")
    (job / "events.jsonl").write_text(json.dumps({"type": "notice", "message": _loading_message(settings)}) + "\n")

    bundle = make_bundle(job, hide=operator_details(settings))

    with zipfile.ZipFile(bundle) as archive:
        texts = {name: archive.read(name).decode("utf-8", errors="replace") for name in archive.namelist()}
    assert {"pi/agent/models.json", "pi/pi-stderr.log", "events.jsonl"} <= set(texts)
    leaks = {name: text for name, text in texts.items() if HOST in text}
    assert not leaks, f"the operator's endpoint in a visitor's bundle: {leaks}"
    assert "The lease ends in 2029." in texts["work/ANSWER.md"]


def test_the_feed_names_the_endpoints_host_to_an_operator_only() -> None:
    visitor = Settings.resolve(env={"LLAMA_URL": LLAMA_URL, "MODEL_ID": "m"})
    operator = Settings.resolve(env={"LLAMA_URL": LLAMA_URL, "MODEL_ID": "m", "SEARCHBOX_OPERATOR": "1"})
    assert HOST not in _loading_message(visitor)
    assert HOST in _loading_message(operator)
