"""What a search says about the part of the room its dense half covered: in the tool's output the model
sees (only when not all of it) and in the record (always), and across processes: the CLI's vectors are
the next call's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from searchbox.tools.registry import REGISTRY
from searchbox.tools.tool import ToolContext
from testkit.small_room import SMALL_DATAROOM

ROOT = Path(__file__).resolve().parents[2]


def test_a_partly_embedded_room_is_named_in_the_output_and_the_record(tool_context: ToolContext) -> None:
    engine = tool_context.engine
    engine.settings = engine.settings.with_overrides(dense_prefilter=2, search_mode="dense")
    result = REGISTRY["search_dataroom"].run(tool_context, {"query": "Harbour Street lease", "k": 3})
    embedded = result.details["dense_coverage"]["embedded"]
    assert 1 <= embedded <= 2 and result.details["dense_coverage"]["total"] == 5
    line = result.data["coverage"]
    assert line.startswith(f"dense: {embedded} of 5 chunks embedded; only those") and "keyword_search" in line
    assert line in result.text
    engine.settings = engine.settings.with_overrides(search_mode="hybrid")
    hybrid = REGISTRY["search_dataroom"].run(tool_context, {"query": "Harbour Street lease", "k": 3})
    assert hybrid.data["coverage"].endswith("the rest was ranked by keywords only")
    answer = REGISTRY["answer_question"].run(tool_context, {"question": "When does the Harbour Street lease end?"})
    assert answer.details["dense_coverage"]["total"] == 5 and "coverage" in answer.data


def test_a_wholly_embedded_room_says_so_only_in_the_record(tool_context: ToolContext) -> None:
    result = REGISTRY["search_dataroom"].run(tool_context, {"query": "parental leave", "k": 2})
    assert result.details["dense_coverage"] == {"embedded": 5, "total": 5}
    assert "coverage" not in result.data and "chunks embedded" not in result.text


def _cli_search(room: Path, cache: Path, query: str) -> dict:
    env = {**os.environ, "SEARCHBOX_CACHE_DIR": str(cache), "RETRIEVAL_PRESET": "packaged", "DENSE_PREFILTER": "2",
           "SEARCH_MODE": "dense"}
    done = subprocess.run([sys.executable, "-m", "searchbox", "tool", "search_dataroom", "--dataroom", str(room),
                           "--args", json.dumps({"query": query, "k": 5})],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["details"]["dense_coverage"]


def test_the_cli_and_a_later_call_share_the_cache(tmp_path: Path) -> None:
    room = tmp_path / "room.zip"
    with zipfile.ZipFile(room, "w") as zf:
        for name, text in SMALL_DATAROOM.items():
            zf.writestr(name, text)
    lease = _cli_search(room, tmp_path / "shared", "Harbour Street lease")
    alone = _cli_search(room, tmp_path / "fresh", "full-disk encryption of laptops")
    after = _cli_search(room, tmp_path / "shared", "full-disk encryption of laptops")
    # The second process ranks the first one's candidates too (the two queries share no keyword).
    assert after["embedded"] == lease["embedded"] + alone["embedded"]
