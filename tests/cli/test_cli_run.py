"""End to end: `python -m searchbox run` with real llama.cpp (the packaged Gemma 3 270M), the
built-in dataroom, budget 2 and force-budget. Structure is asserted, not content: the model is tiny."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchbox.settings.loop import ASSIST_NAMES

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ["input.zip", "query.txt", "config.json", "session.jsonl", "events.jsonl", "turns.jsonl",
           "sources.json", "run_meta.json", "timing.json", "work/ANSWER.md"]


def test_a_full_run_produces_every_record(tmp_path: Path) -> None:
    out = tmp_path / "job"
    knobs = {"LLM_GGUF": "packaged:gemma3-270m", "RETRIEVAL_PRESET": "packaged", "CONTEXT_WINDOW": "4096",
             "MAX_OUTPUT_TOKENS": "64", "MAX_STEPS_PER_TURN": "2", "FORCE_TOOL_STEPS": "1",
             # Every assist, so that the 270M base model, which often replies nothing, still leaves an answer.
             "HARNESS_ASSISTS": ",".join(ASSIST_NAMES),
             "SEARCHBOX_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "searchbox", "run", "Who audited the FY2025 financial statements?",
               "--budget", "2", "--force-budget", "--out", str(out)]
    for knob, value in knobs.items():
        command += ["--set", f"{knob}={value}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JINA_API_KEY": "jina_do_not_leak_123"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "turn 1/2" in result.stdout and "stop reason: budget_spent" in result.stdout

    for name in RECORDS:
        assert (out / name).exists(), name
    meta = json.loads((out / "run_meta.json").read_text())
    assert meta["stop_reason"] == "budget_spent" and meta["turns"] == 2 and meta["done"]
    assert meta["tool_calls"] >= 2  # FORCE_TOOL_STEPS=1: every turn starts with a real tool call
    assert meta["model_id"].startswith("gemma-3-270m")

    # Token totals match the session file, summed over every LLM call.
    session = [json.loads(line) for line in (out / "session.jsonl").read_text().splitlines()]
    summed = {k: sum(row.get("usage", {}).get(k, 0) for row in session) for k in ("input", "output")}
    assert summed["input"] > 0 and summed["output"] > 0
    assert {k: meta["tokens"][k] for k in summed} == summed
    turns = [json.loads(line) for line in (out / "turns.jsonl").read_text().splitlines()]
    assert [t["turn"] for t in turns] == [1, 2] and turns[-1]["tokens"]["input"] == summed["input"]

    timing = json.loads((out / "timing.json").read_text())
    assert timing["llm_ms"] > 0 and timing["decode_tokens_per_s"] and timing["prefill_tokens_per_s"]
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert sum(e["type"] == "tool_end" for e in events) == meta["tool_calls"]
    # No secret reaches the job folder.
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".zip":
            assert "jina_do_not_leak_123" not in path.read_text(errors="replace"), path
