"""The environment's names: those that look like knobs but are not are named at start-up with the knob meant, and
.env.example lists the knobs an operator sets, generated from the settings like docs/knobs.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from searchbox.settings import Settings
from searchbox.settings.docs import WEB_SERVER_VARIABLES, env_example, knob_docs
from searchbox.settings.environ import SEED_NAMES, UnknownName, unknown_names
from searchbox.settings.resolved import knob_fields

ROOT = Path(__file__).resolve().parents[2]
KNOBS = {f.name.upper() for f in knob_fields()}


def clean_environment(**names: str) -> dict[str, str]:
    """This process's environment less any name it would flag itself (the runner's own), plus `names`."""
    flagged = {u.name for u in unknown_names(os.environ)}
    return {k: v for k, v in os.environ.items() if k not in flagged} | names


def test_a_misspelt_knob_gets_the_knob_meant_and_an_unrelated_name_none() -> None:
    env = {"SEARCHBOX_JOB_DIR": "/srv/jobs", "EMBED_DEVISE": "cuda", "LLM_TIMEOUT": "30", "LLM_API_KEY": "k",
           "SEARCHBOX_TRUSTED_PROXY": "10.0.0.1", "PI_COMPACTION_RESERVE": "1", "LLM_CONTEXT_WINDOW": "8192",
           "SEARCHBOX_FOO": "1", "PI_OFFLINE": "1", "RERANK_BATCH": "8"}
    found = {u.name: u.meant for u in unknown_names(env)}
    assert found == {"SEARCHBOX_JOB_DIR": "SEARCHBOX_JOBS_DIR", "EMBED_DEVISE": "EMBED_DEVICE",
                     "LLM_TIMEOUT": "LLM_TIMEOUT_SECONDS", "LLM_API_KEY": "LLAMA_API_KEY",
                     "SEARCHBOX_TRUSTED_PROXY": "SEARCHBOX_TRUSTED_PROXIES",
                     "PI_COMPACTION_RESERVE": "PI_COMPACTION_RESERVE_TOKENS", "LLM_CONTEXT_WINDOW": "CONTEXT_WINDOW",
                     "SEARCHBOX_FOO": "", "PI_OFFLINE": "", "RERANK_BATCH": ""}
    assert UnknownName("SEARCHBOX_JOB_DIR", "SEARCHBOX_JOBS_DIR", "").message() == (
        "SEARCHBOX_JOB_DIR is not a knob of searchbox: did you mean SEARCHBOX_JOBS_DIR? (nothing reads SEARCHBOX_JOB_DIR)")


def test_knobs_and_names_read_elsewhere_are_not_named() -> None:
    env = {name: "1" for name in KNOBS} | {"HOME": "/root", "PATH": "/bin", "HF_HOME": "/hf", "OPENAI_API_KEY": "k",
                                          "GRADIO_ROOT_PATH": "/sb", "LLAMA_ARG_CTX_SIZE": "4096", "LLAMA_CACHE": "/c",
                                          "LLAMA_CPP_LIB_PATH": "/lib", "SEARCHBOX_SHARE": "1"}
    assert unknown_names(env) == []


def test_the_seeds_names_map_to_knobs_that_exist_or_say_why_none_does() -> None:
    env = {"CTX_SIZE": "8192", "JOBS_DIR": "/srv", "PORT": "8001", "PI_BIN": "/opt/pi", "THINKING_LEVEL": "off",
           "LLAMA_API_KEY": "sk"}  # LLAMA_API_KEY is a knob now
    messages = {u.name: u.message() for u in unknown_names(env)}
    assert set(messages) == {"CTX_SIZE", "JOBS_DIR", "PORT", "PI_BIN", "THINKING_LEVEL"}
    assert messages["CTX_SIZE"].endswith("set CONTEXT_WINDOW instead")
    assert "SEARCHBOX_JOBS_DIR" in messages["JOBS_DIR"] and "--port" in messages["PORT"]
    assert "set THINKING instead" in messages["THINKING_LEVEL"]
    for name, (meant, why) in SEED_NAMES.items():
        assert meant in KNOBS or (not meant and why), name  # a renamed knob fails here


def test_the_cli_names_them_once_before_its_command_runs() -> None:
    env = clean_environment(CTX_SIZE="8192", SEARCHBOX_JOB_DIR="/srv/jobs")
    done = subprocess.run([sys.executable, "-m", "searchbox", "knobs"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: CTX_SIZE is not a knob of searchbox (hanxiao/searchbox read it): set CONTEXT_WINDOW instead",
                     "note: SEARCHBOX_JOB_DIR is not a knob of searchbox: did you mean SEARCHBOX_JOBS_DIR? "
                     "(nothing reads SEARCHBOX_JOB_DIR)"]


def test_the_app_names_them_and_stops_on_a_bad_value_with_its_message() -> None:
    """The names come first: an operator whose old name left a knob at a bad value sees both."""
    env = clean_environment(JOBS_DIR="/srv/jobs", EMBED_DEVICE="mps")
    done = subprocess.run([sys.executable, "app.py", "--port", "1"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1
    assert "!!! searchbox: JOBS_DIR is not a knob of searchbox (hanxiao/searchbox read it): set SEARCHBOX_JOBS_DIR " \
           "instead" in done.stderr
    assert done.stderr.rstrip().endswith("searchbox: EMBED_DEVICE must be one of cpu, cuda, got 'mps'")
    assert "Traceback" not in done.stderr


def test_env_example_is_generated_from_the_settings() -> None:
    page = (ROOT / ".env.example").read_text()
    assert page == env_example(), ".env.example is stale: python -m searchbox knobs --env-example > .env.example"


def commented_assignments(page: str) -> dict[str, str]:
    return dict(re.findall(r"^# ([A-Z][A-Z0-9_]*)=(.*)$", page, re.M))


def test_env_example_lists_every_deploy_knob_at_its_default_and_nothing_else() -> None:
    """Uncommented as they are, its lines set each knob to its default: an operator changes only what they mean to,
    and the values read the same to a shell, systemd and docker (no spaces, quotes or $)."""
    page = env_example()
    assert not [line for line in page.splitlines() if line and not line.startswith("#")]  # all commented out
    assignments = commented_assignments(page)
    deploy = [k["name"] for k in knob_docs() if k["deploy"]]
    assert set(assignments) == set(deploy) | {name for name, _, _ in WEB_SERVER_VARIABLES}
    assert unknown_names(assignments) == []
    assert all(not re.search(r"[\s'\"$#\\]", value) for value in assignments.values()), assignments
    knobs = {name: value for name, value in assignments.items() if name in KNOBS}
    assert Settings.resolve(env=knobs).as_config() == Settings.resolve(env={}).as_config()
    for section in dict.fromkeys(k["section"] for k in knob_docs() if k["deploy"]):
        assert f"# --- {section} ---" in page
