"""The environment's names: those that look like knobs but are not are named at start-up with the knob meant."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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

