"""An endpoint URL with credentials in it (LLAMA_URL=http://user:password@host/v1) is used, never
recorded: not in config.json, run_meta.json, job.json or anything else in a job folder, not in the
terminal's output, not in the page the app serves (design §5: secrets never reach a job folder, a log
or the UI)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from testkit.app_server import running_app, throwaway_home
from conftest import SMALL_DATAROOM, write_tree
from testkit.scripted_endpoint import Reply, ScriptedEndpoint
from searchbox.jobs.store import STATE_FILE, JobStore
from searchbox.settings import Settings
from searchbox.settings.urls import without_userinfo
from searchbox.ui.visitors import ENDPOINT_CHOICE, RunRequest

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "s3cret-pw-0123"


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@")


def test_credentials_leave_a_url_and_nothing_else_does() -> None:
    assert without_userinfo(f"https://alice:{PASSWORD}@api.example.com:8443/v1?x=1") == "https://api.example.com:8443/v1?x=1"
    assert without_userinfo("http://token@[::1]:8080/v1") == "http://[::1]:8080/v1"
    assert without_userinfo("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert without_userinfo("") == ""
    config = Settings.resolve(env={"LLAMA_URL": f"http://alice:{PASSWORD}@127.0.0.1:9/v1",
                                   "JINA_API_URL": f"https://bob:{PASSWORD}@api.jina.ai/v1"}).as_config()
    assert (config["LLAMA_URL"], config["JINA_API_URL"]) == ("http://127.0.0.1:9/v1", "https://api.jina.ai/v1")
    assert PASSWORD not in json.dumps(config)


@pytest.mark.slow  # a real CLI run in a subprocess
def test_a_run_uses_the_credentials_and_records_none(tmp_path: Path) -> None:
    out = tmp_path / "job"
    with ScriptedEndpoint(default=Reply(text="The lease ends in 2029.")) as endpoint:
        command = [sys.executable, "-m", "searchbox", "run", "When does the lease end?", "--out", str(out),
                   "--set", "SEARCHBOX_TOOLS=", "--set", "RETRIEVAL_PRESET=packaged",
                   "--set", f"SEARCHBOX_CACHE_DIR={tmp_path / 'cache'}"]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "LLAMA_URL": with_credentials(endpoint.url), "MODEL_ID": "scripted"}
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        sent = {r.headers.get("Authorization") for r in endpoint.requests}
        shown = endpoint.url
    assert sent == {"Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()}  # they were used
    assert PASSWORD not in result.stdout + result.stderr
    assert json.loads((out / "config.json").read_text())["LLAMA_URL"] == shown
    assert json.loads((out / "run_meta.json").read_text())["config"]["LLAMA_URL"] == shown
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".zip":
            assert PASSWORD not in path.read_text(errors="replace"), path


def test_job_json_never_holds_the_password(tmp_path: Path) -> None:
    operators = with_credentials("http://127.0.0.1:9/v1")
    base = Settings.resolve(env={"LLAMA_URL": operators}, searchbox_tools="")
    store, source = JobStore(tmp_path / "jobs"), write_tree(tmp_path / "room", SMALL_DATAROOM)
    # The page sends the operator's endpoint for every run; the environment gives it back to the run.
    overrides = RunRequest(question="q", budget=1, force=False, high=[], low=[], llm=ENDPOINT_CHOICE, endpoint="",
                           model_id="", retrieval=base.retrieval_preset, embed_backend=base.embed_backend,
                           rerank_backend=base.rerank_backend).overrides(base)
    record = store.create("q", source, overrides, "visitor", base)
    assert store.settings_for(record, base).llama_url == operators
    job_dir = store.job_dir(record.id)
    assert PASSWORD not in (job_dir / STATE_FILE).read_text()
    for path in job_dir.rglob("*"):
        if path.is_file() and path.suffix != ".zip":
            assert PASSWORD not in path.read_text(errors="replace"), path
    # A visitor's own endpoint with a password in it is refused before anything is written.
    with pytest.raises(ValueError, match="user name and password"):
        store.create("q", source, {"llama_url": with_credentials("http://127.0.0.1:10/v1")}, "visitor", base)
    assert [p.name for p in store.root.iterdir()] == [record.id]


@pytest.mark.slow  # the real app in a subprocess
def test_visitors_see_neither_the_operators_endpoint_nor_its_credentials(tmp_path: Path) -> None:
    operators = with_credentials("http://127.0.0.1:9/v1")
    # With visitor endpoints open, an empty endpoint field means the operator's own, credentials and all.
    open_settings = Settings.resolve(env={"LLAMA_URL": operators, "SEARCHBOX_VISITOR_ENDPOINTS": "1"})
    overrides = RunRequest(question="q", budget=1, force=False, high=[], low=[], llm=ENDPOINT_CHOICE,
                           endpoint="", model_id="", retrieval=open_settings.retrieval_preset,
                           embed_backend=open_settings.embed_backend,
                           rerank_backend=open_settings.rerank_backend).overrides(open_settings)
    assert overrides["llama_url"] == operators
    with throwaway_home("credentials") as home, \
            running_app(home, LLAMA_URL=operators, MODEL_ID="scripted", SEARCHBOX_VISITOR_ENDPOINTS="1") as url:
        with urllib.request.urlopen(url + "config", timeout=60) as response:
            page = response.read().decode()
    assert "127.0.0.1:9/v1" not in page and PASSWORD not in page
