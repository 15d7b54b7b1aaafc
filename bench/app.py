"""App benchmark: time from `python app.py` to the page answering (no model loaded), from submit to
the first tool call shown with the packaged model, and how fast a second visitor's page and jobs
table answer while a run streams.

    python bench/app.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.app_server import PACKAGED_KNOBS, free_port  # noqa: E402

QUESTION = "Who audited the FY2025 financial statements?"


def wait_for_page(url: str, deadline: float) -> float:
    started = time.perf_counter()
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return time.perf_counter() - started
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the page never answered")


def timed_get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
    return time.perf_counter() - started


def main() -> None:
    from gradio_client import Client

    with tempfile.TemporaryDirectory(prefix="searchbox-app-bench-") as home:
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        env = {**os.environ, **PACKAGED_KNOBS, "MAX_OUTPUT_TOKENS": "64", "MAX_STEPS_PER_TURN": "3",
               "SEARCHBOX_JOBS_DIR": f"{home}/jobs", "SEARCHBOX_CACHE_DIR": f"{home}/cache"}
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_page(url, time.time() + 120)
            startup = time.perf_counter() - started
            print("== App ==")
            print(f"  python app.py -> page answers (no model loaded): {startup:.2f} s")

            client = Client(url, verbose=False)
            args = (QUESTION, None, 2, True, ["search_dataroom", "answer_question"], [], "packaged:gemma3-270m",
                    "", "", "packaged", "local", "local", "", "")
            submitted = time.perf_counter()
            job = client.submit(*args, api_name="/search")
            first_tool = None
            page_times: list[float] = []
            jobs_times: list[float] = []
            stop = threading.Event()

            def second_visitor() -> None:
                other = Client(url, verbose=False)
                while not stop.is_set():
                    page_times.append(timed_get(url))
                    t = time.perf_counter()
                    other.predict("someone-else", api_name="/jobs")
                    jobs_times.append(time.perf_counter() - t)
                    time.sleep(0.5)

            visitor = threading.Thread(target=second_visitor, daemon=True)
            for update in job:
                if visitor.ident is None:
                    visitor.start()
                titles = [str((m.get("metadata") or {}).get("title") or "") for m in update[1]]
                if first_tool is None and any(": " in t and not t.startswith(("ℹ", "Turn")) for t in titles):
                    first_tool = time.perf_counter() - submitted
            total = time.perf_counter() - submitted
            stop.set()
            visitor.join(timeout=30)
            print(f"  submit -> first tool call shown (packaged Gemma 3 270M, cold model): {first_tool:.2f} s")
            print(f"  whole run (2 forced turns): {total:.1f} s")
            print(f"  second visitor during the run: page load median {statistics.median(page_times) * 1000:.0f} ms, "
                  f"max {max(page_times) * 1000:.0f} ms over {len(page_times)} loads")
            print(f"  second visitor during the run: jobs table median {statistics.median(jobs_times) * 1000:.0f} ms, "
                  f"max {max(jobs_times) * 1000:.0f} ms over {len(jobs_times)} calls")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
