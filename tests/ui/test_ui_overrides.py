"""What a visitor may set for a run: a fixed list of knobs, checked, never arbitrary URLs or files."""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest

from searchbox.settings import Settings
from searchbox.ui.visitors import ENDPOINT_CHOICE, OWN_MODEL, RunRequest, llm_choices

ARGS = dict(budget=3, force=True, high=["keyword_search"], low=["rerank"], model_id="m", retrieval="packaged",
            embed_backend="local", rerank_backend="local")


def overrides_for(settings: Settings, **form) -> dict:
    return RunRequest(question="q", **form).overrides(settings)


def test_a_visitor_cannot_point_a_public_app_at_another_endpoint() -> None:
    operator = Settings.resolve(env={"LLAMA_URL": "http://gpu-box:8080/v1", "MODEL_ID": "qwen"})
    overrides = overrides_for(operator, llm=ENDPOINT_CHOICE, endpoint="http://evil.example/v1", **ARGS)
    assert overrides["llama_url"] == "http://gpu-box:8080/v1" and overrides["model_id"] == "qwen"
    public = Settings.resolve(env={})
    assert ENDPOINT_CHOICE not in llm_choices(public)
    with pytest.raises(gr.Error):
        overrides_for(public, llm=ENDPOINT_CHOICE, endpoint="http://evil.example/v1", **ARGS)
    with pytest.raises(gr.Error):
        overrides_for(public, llm="/etc/passwd", endpoint="", **ARGS)


def test_endpoints_can_be_allowed_and_tools_are_joined() -> None:
    laptop = Settings.resolve(env={"SEARCHBOX_VISITOR_ENDPOINTS": "1"})
    overrides = overrides_for(laptop, llm=ENDPOINT_CHOICE, endpoint="http://localhost:8080/v1", **ARGS)
    assert overrides["llama_url"] == "http://localhost:8080/v1"
    assert overrides["searchbox_tools"] == "keyword_search,rerank" and overrides["turn_budget"] == 3
    none = overrides_for(laptop, **{**ARGS, "high": [], "low": []}, llm="auto", endpoint="")
    assert none["searchbox_tools"] == "" and none["llm_gguf"] == "auto" and none["llama_url"] == ""


def test_a_visitor_sees_only_their_own_runs(tmp_path) -> None:
    from conftest import SMALL_DATAROOM, write_tree
    from searchbox.ui.services import Services

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    for operator in (False, True):
        settings = Settings.resolve(env={}, searchbox_jobs_dir=str(tmp_path / f"jobs-{operator}"),
                                    searchbox_operator=operator)
        services = Services.start(settings, run_fn=lambda *args: "first_turn_done")
        try:
            mine = services.store.create("Q?", source, {}, "alice", settings)
            assert [r.id for r in services.visible_jobs("alice")] == [mine.id]
            assert services.may_see(mine.id, "alice") is not None
            assert (services.may_see(mine.id, "mallory") is None) is not operator
            assert (services.visible_jobs("mallory") == []) is not operator
            assert services.may_see("../../etc", "alice") is None
        finally:
            services.scheduler.stop()


def test_a_public_app_offers_its_own_model_only_unless_the_operator_adds_some() -> None:
    """A preset name once booted (or downloaded, up to 22 GB) whatever model a visitor named."""
    public = Settings.resolve(env={})
    assert llm_choices(public) == ["auto"]  # LLM_GGUF's default: the largest model this machine holds
    with pytest.raises(gr.Error, match="Unknown model choice"):
        overrides_for(public, llm="qwen3.6-35b-a3b", endpoint="", **ARGS)
    served = Settings.resolve(env={"LLAMA_URL": "http://gpu-box:8080/v1", "MODEL_ID": "qwen"})
    assert llm_choices(served) == [ENDPOINT_CHOICE]  # not "auto": that would boot a model beside the endpoint
    with pytest.raises(gr.Error, match="Unknown model choice"):
        overrides_for(served, llm="auto", endpoint="", **ARGS)
    added = Settings.resolve(env={"LLM_GGUF": "/srv/models/own.gguf", "SEARCHBOX_VISITOR_MODELS": "qwen3-1.7b, auto"})
    assert llm_choices(added) == [OWN_MODEL, "qwen3-1.7b", "auto"]  # the operator's path is not shown
    assert overrides_for(added, llm=OWN_MODEL, endpoint="", **ARGS)["llm_gguf"] == "/srv/models/own.gguf"
    assert overrides_for(added, llm="qwen3-1.7b", endpoint="", **ARGS)["llm_gguf"] == "qwen3-1.7b"
    operator = Settings.resolve(env={"SEARCHBOX_OPERATOR": "1"})
    assert {"auto", "qwen3.6-35b-a3b", "gemma3-270m"} <= set(llm_choices(operator))



def test_with_a_pool_of_servers_the_pool_is_the_apps_model_and_no_visitor_sees_its_urls(tmp_path: Path) -> None:
    from searchbox.jobs.scheduler import Standing
    from searchbox.jobs.store import JobRecord
    from searchbox.ui.slots import server_name, standing_text
    from searchbox.llm.disclosure import operator_details

    pool = "http://gpu1.internal:8080/v1=4,http://user:pw@gpu2.internal:8080/v1=2"
    for operator in (False, True):
        settings = Settings.resolve(env={"SEARCHBOX_ENDPOINTS": pool, "SEARCHBOX_OPERATOR": str(int(operator))})
        assert llm_choices(settings) == [ENDPOINT_CHOICE]  # a model booted here would hold a slot and not use it
        overrides = overrides_for(settings, llm=ENDPOINT_CHOICE, endpoint="http://evil.example/v1", **ARGS)
        assert "llama_url" not in overrides  # the scheduler gives the run a pool server's
        assert "SEARCHBOX_ENDPOINTS" not in str(overrides) and settings.as_config()["SEARCHBOX_ENDPOINTS"] == "set"
    public = Settings.resolve(env={"SEARCHBOX_ENDPOINTS": pool})
    hidden = operator_details(public)
    assert {"http://gpu1.internal:8080/v1", "gpu2.internal:8080", "http://gpu2.internal:8080/v1"} <= set(hidden)
    record = JobRecord("j" * 16, "alice", "q", placements=[
        {"server": "http://gpu2.internal:8080/v1", "server_number": 2, "slot": 1}])
    assert server_name(record, operator=False) == "server 2 · slot 1"
    assert server_name(record, operator=True) == "http://gpu2.internal:8080/v1 · slot 1"
    assert server_name(JobRecord("k" * 16, "alice", "q"), operator=False) == ""  # not run yet
    assert standing_text(Standing("queued", 2, 3, 4, 4, 0), record, False) == "2nd of 3 in line · 4 of 4 slots busy"
    assert standing_text(Standing("running", None, 0, 3, 4, 1), record, False) == (
        "on server 2 · slot 1 · 3 of 4 slots busy, 1 server not answering")
    assert standing_text(Standing("paused", 1, 1, 0, 0, 2), record, False) == (
        "1st of 1 in line · 0 of 0 slots busy, 2 servers not answering: the run starts when one answers again")
    assert standing_text(Standing("held", None, 1, 1, 1, 0), record, False) == ""  # held: not in line

API = {**ARGS, "retrieval": "default", "embed_backend": "api", "llm": "auto", "endpoint": ""}


def test_a_visitors_api_backend_run_needs_a_key_of_their_own(tmp_path) -> None:
    """Without one, the operator's JINA_API_KEY paid for it, and for its resumption after a restart."""
    from conftest import SMALL_DATAROOM, write_tree
    from searchbox.ui.services import Services

    env = {"JINA_API_KEY": "jina_operators_own"}
    public = Settings.resolve(env=env)
    with pytest.raises(gr.Error, match="need a Jina API key of your own"):
        overrides_for(public, **API)
    with pytest.raises(gr.Error, match="need a Jina API key of your own"):
        overrides_for(public, **{**API, "embed_backend": "local", "rerank_backend": "api"})
    assert overrides_for(public, **API, jina_key="jina_visitors")["embed_backend"] == "api"
    no_reranker = Settings.resolve(env={**env, "RERANK_MODEL": "none"})  # an api reranker that never calls it
    assert overrides_for(no_reranker, **{**API, "embed_backend": "local", "rerank_backend": "api"})
    consenting = Settings.resolve(env={**env, "SEARCHBOX_VISITOR_KEYS": "1"})
    assert overrides_for(consenting, **API)["embed_backend"] == "api"

    source = write_tree(tmp_path / "room", SMALL_DATAROOM)
    for knobs, expected in (({}, ""), ({"SEARCHBOX_VISITOR_KEYS": "1"}, "jina_operators_own"),
                            ({"SEARCHBOX_OPERATOR": "1"}, "jina_operators_own")):
        settings = Settings.resolve(env={**env, **knobs, "SEARCHBOX_JOBS_DIR": str(tmp_path / f"jobs-{len(knobs)}{expected}")})
        keys: list[str] = []
        services = Services.start(settings, run_fn=lambda _dir, run, *_: keys.append(run.jina_api_key) or "first_turn_done")
        try:
            # As a restarted app finds a queued run: no key typed for it is held any more.
            record = services.store.create("Q?", source, {"embed_backend": "api"}, "alice", settings)
            services.scheduler.submit(record.id)
            assert services.scheduler.wait_idle(30)
            assert keys == [expected]
            assert services.visitor_settings().jina_api_key == expected
        finally:
            services.scheduler.stop()


@pytest.fixture(scope="module")
def public_app(tmp_path_factory: pytest.TempPathFactory):
    """The real app as a public demo, on a scripted endpoint whose URL and model id are the operator's."""
    from testkit.app_server import running_app, throwaway_home
    from testkit.scripted_endpoint import Reply, ScriptedEndpoint

    answer = Reply(text="The lease runs until 31 March 2029.")
    with ScriptedEndpoint(default=answer) as endpoint, throwaway_home("public") as home, \
            running_app(home, LLAMA_URL=endpoint.url, MODEL_ID="operators-model-7f3a",
                        GRADIO_TEMP_DIR=str(home / "gradio")) as url:
        yield url, endpoint.url, home


@pytest.mark.slow  # the real app in a subprocess
def test_a_visitor_sees_no_operator_endpoint_path_or_machine_report(public_app) -> None:
    """The page (/config) and the API description (/gradio_api/info) showed LLAMA_URL and MODEL_ID as the
    endpoint fields' defaults, and /machine_report the app's folders, disks and memory, to anyone."""
    import json
    import urllib.request

    from gradio_client import Client

    url, operators_url, home = public_app
    with urllib.request.urlopen(url + "config", timeout=60) as response:
        page = response.read().decode()
    described = json.dumps(Client(url, verbose=False).view_api(print_info=False, return_format="dict"))
    for text in (page, described):
        for secret in (operators_url, operators_url.split("//")[1], "operators-model-7f3a", str(home)):
            assert secret not in text
    assert "/machine_report" not in described and "This machine" not in page


@pytest.mark.slow  # the real app in a subprocess
def test_a_download_url_cannot_be_derived_from_the_files_bytes(public_app) -> None:
    """Gradio named a served copy by a hash of its bytes and its seed, which lies in Gradio's package for
    anyone running the app's Python (bash too) to read: a visitor who knew a run's answer could fetch
    its bundle's neighbour by path. Now each copy lives in a folder named by a secret of the process."""
    import urllib.error
    import urllib.request

    from gradio.processing_utils import hash_file
    from gradio_client import Client

    from testkit.app_server import live

    url, _, home = public_app
    args = ("When does the lease end?", None, 1, False, [], [], ENDPOINT_CHOICE, "", "", "packaged", "local", "local",
            "", "downloader")
    final = live(Client(url, verbose=False, download_files=False).predict(*args, api_name="/search"))
    served = Path(final["answer_file"]["path"])
    assert served.name == "ANSWER.md" and served.read_text().startswith("The lease runs until 31 March 2029.")
    with urllib.request.urlopen(f"{url}gradio_api/file={served}", timeout=30) as response:  # the visitor's link works
        assert response.read() == served.read_bytes()
    derived = home / "gradio" / hash_file(served) / "ANSWER.md"  # where Gradio put it before
    assert served.parent.name != hash_file(served) and not derived.exists()
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{url}gradio_api/file={derived}", timeout=30)


def test_a_visitor_picks_the_pi_harness_only_where_it_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from searchbox.agent.pi import install
    from searchbox.ui.visitors import own_model_choice

    settings = Settings.resolve(env={})
    monkeypatch.setattr(install, "pi_problem", lambda: None)
    assert overrides_for(settings, llm=own_model_choice(settings), endpoint="", harness="pi", **ARGS)["harness"] == "pi"
    assert "harness" not in overrides_for(settings, llm=own_model_choice(settings), endpoint="", **ARGS)  # the app's own
    monkeypatch.setattr(install, "pi_problem", lambda: "HARNESS=pi needs Node.js 20.6+ on PATH")
    with pytest.raises(gr.Error, match="Node.js"):
        overrides_for(settings, llm=own_model_choice(settings), endpoint="", harness="pi", **ARGS)
    with pytest.raises(gr.Error):
        overrides_for(settings, llm=own_model_choice(settings), endpoint="", harness="claude-code", **ARGS)
