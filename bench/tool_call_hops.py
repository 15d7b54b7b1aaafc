"""How many files one tool call passes through, from the model's response to the feed and the records.

A scripted endpoint answers with one native call that holds a marker: `read` of a file whose name is
the marker, or `search_dataroom` with the marker in its query (the dataroom's files do not hold it, so
building the index on that first call is not counted, the query's way through the search is); the job
runs through the scheduler (and is stopped once the call ended), its live events are fanned out to a feed and a dashboard as the app's
run view does, and then the job is replayed from events.jsonl into a fresh feed. A profiler notes
every searchbox function called with the marker in its arguments (strings, bytes, and what dicts,
lists, tuples and objects hold, a few levels down; `self` left out): each such function is a hop,
and the files they sit in are the files the call passes through.

    python bench/tool_call_hops.py [--tool read|search_dataroom] [--list]

Not traced: the Gradio handler (ui/run_view.py), which passes events from the scheduler's queue to
the feed without looking inside them.
"""

from __future__ import annotations

import argparse
import inspect
import os
import queue
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.scripted_endpoint import Reply, ScriptedEndpoint  # noqa: E402
from searchbox.agent.control import RunControl  # noqa: E402
from searchbox.agent.run import run_job  # noqa: E402
from searchbox.jobs.scheduler import Scheduler  # noqa: E402
from searchbox.jobs.store import JobStore  # noqa: E402
from searchbox.llm.clients.openai_client import OpenAIClient  # noqa: E402
from searchbox.records.events import load_events  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from searchbox.ui.dashboard import Dashboard  # noqa: E402
from searchbox.ui.feed import Feed  # noqa: E402

MARKER = "zqxhopmarker"
# The call each --tool makes, the SEARCHBOX_TOOLS that offers it, and the name of the dataroom's one file.
CALLS = {
    "read": ({"path": f"dataroom/{MARKER}.txt"}, "", f"{MARKER}.txt"),
    "search_dataroom": ({"query": f"when does the office lease end {MARKER}", "k": 2}, "search_dataroom", "lease.txt"),
}
PACKAGE = str(ROOT / "searchbox")
_DEPTH = 8


def holds_marker(value: Any, depth: int = _DEPTH, seen: set[int] | None = None) -> bool:
    if isinstance(value, str):
        return MARKER in value
    if isinstance(value, (bytes, bytearray)):
        return MARKER.encode() in value
    if depth == 0 or isinstance(value, (int, float, bool, type(None), Path)):
        return False
    seen = seen if seen is not None else set()
    if id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, dict):
        return any(holds_marker(k, depth - 1, seen) or holds_marker(v, depth - 1, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset, queue.Queue)):
        items = list(value.queue) if isinstance(value, queue.Queue) else list(value)
        return any(holds_marker(v, depth - 1, seen) for v in items[-50:])
    attributes = getattr(value, "__dict__", None)
    if attributes is None and hasattr(type(value), "__slots__"):
        attributes = {name: getattr(value, name, None) for name in type(value).__slots__}
    return isinstance(attributes, dict) and holds_marker(attributes, depth - 1, seen)


class Tracer:
    def __init__(self) -> None:
        self.hops: dict[str, set[str]] = defaultdict(set)  # file -> functions called with the marker
        self._lock = threading.Lock()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(PACKAGE):
            return
        code = frame.f_code
        starred = bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount + starred]
        # What the function is handed, not the object it belongs to (which may hold the call somewhere).
        arguments = [frame.f_locals.get(name) for name in names if name not in ("self", "cls")]
        if any(holds_marker(a) for a in arguments):
            with self._lock:
                self.hops[os.path.relpath(path, ROOT)].add(code.co_qualname)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", choices=sorted(CALLS), default="read", help="the tool the model calls")
    parser.add_argument("--list", action="store_true", help="list the functions, file by file")
    args = parser.parse_args()
    arguments, tools, file_name = CALLS[args.tool]
    tmp = Path(tempfile.mkdtemp(prefix="searchbox-hops-"))
    room = tmp / "room"
    room.mkdir()
    (room / file_name).write_text("The office lease ends on 31 March 2029.\n")
    # In one chunk, so that the marker is whole wherever the response is; the run is stopped once the
    # call ended, so the result does not travel on to the model's next request.
    script = [Reply(tool_calls=[{"name": args.tool, "arguments": arguments}], chunk_chars=100_000)]
    tracer = Tracer()
    with ScriptedEndpoint(script) as endpoint:
        settings = Settings.resolve(env={}, llama_url=endpoint.url, model_id="scripted", searchbox_tools=tools,
                                    retrieval_preset="packaged", searchbox_cache_dir=str(tmp / "cache"))
        store = JobStore(tmp / "jobs")
        record = store.create("When does the office lease end?", room, {}, "bench", settings)

        def run_fn(job_dir: Path, job_settings: Settings, control: RunControl, listeners: list) -> str:
            client = OpenAIClient(endpoint.url, "scripted", max_attempts=1)
            stop_after_the_call = [lambda event: control.request("cancelled") if event.type == "tool_end" else None]
            try:
                return run_job(job_dir, job_settings, client, [*listeners, *stop_after_the_call], control)
            finally:
                client.close()

        scheduler = Scheduler(store, run_fn, settings)
        feed, dashboard = Feed(record.question), Dashboard()
        threading.setprofile(tracer)
        sys.setprofile(tracer)
        try:
            scheduler.start()
            subscription = scheduler.subscribe(record.id)
            scheduler.submit(record.id)
            while (event := subscription.get(timeout=120)) is not None:
                feed.add(event)
                dashboard.add(event)
            replay = Feed(record.question)
            for event in load_events(store.job_dir(record.id)):
                replay.add(event)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
            scheduler.stop(30)
    assert any(MARKER in str(m.get("content")) for m in feed.messages), "the call never reached the feed"
    ended = [e for e in load_events(store.job_dir(record.id)) if e.type == "tool_end"]
    assert ended and not ended[0].is_error, f"the call failed: {ended[0].preview if ended else 'no tool_end'}"
    hops = sum(len(functions) for functions in tracer.hops.values())
    print(f"one tool call ({args.tool}, native tool_calls): {len(tracer.hops)} files, {hops} functions called with it")
    if args.list:
        for path in sorted(tracer.hops):
            print(f"  {path}: {', '.join(sorted(tracer.hops[path]))}")


if __name__ == "__main__":
    main()
