"""A run of the README's kind from the page, over an uploaded room: how long a visitor waits for the first tool
result shown in the feed, and for the whole run, in headless Chromium, for one or more checkouts (before and
after a change) run one after another on the same machine.

Each checkout's `python app.py` starts as a new user's would: no flags, no SEARCHBOX_ knob, a fresh HOME (so
nothing of the room is cached, and the default packaged model is assembled from its PyPI packages again).
The visitor opens the page, uploads the room, types the question (`--typing` seconds), and presses Search.
Timed from that press: the first tool call shown, the first tool result shown (a path of the room in the
feed: a call's arguments hold none unless the model names a file, so `first_call` is recorded to check), and the
run's end ("Stopped:").

    python bench/page_first_result.py --room assets/libref_dataroom.zip \\
        --question "Which solver does scikit-learn's LogisticRegression use by default?" \\
        --checkout /tmp/before --checkout .
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.app_server import free_port, stop_process  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
TOOL_TITLE = re.compile(r"\b(search_dataroom|keyword_search|answer_question|grep|read|find|ls|bash|write|edit)(: |\s*$)")
# A path of the room in a tool's output (hits, a listing, a read): the first result the visitor sees.
ROOM_PATH = re.compile(r"[\w.-]+/[\w./-]+\.(md|txt|pdf|docx|xlsx|csv|html)")


def app_in(checkout: Path, home: Path, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHBOX_")}
    env.update(HOME=str(home), GRADIO_TEMP_DIR=str(home / "gradio"))
    log = (home / "app.log").open("a")
    return subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=checkout, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def visit(checkout: Path, room: Path, question: str, typing_s: float, timeout_s: float) -> dict[str, Any]:
    from playwright.sync_api import expect, sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    home = Path(tempfile.mkdtemp(prefix="searchbox-page-first-result-"))
    port = free_port()
    row: dict[str, Any] = {"checkout": str(checkout), "commit": _commit(checkout)}
    started = time.perf_counter()
    proc = app_in(checkout, home, port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1300})
            deadline = time.time() + 300
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                    break
                except Exception:
                    if proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError((home / "app.log").read_text()[-3000:]) from None
                    time.sleep(0.5)
            box = page.get_by_label("Question")
            expect(box).to_be_visible(timeout=300_000)
            row["page_s"] = round(time.perf_counter() - started, 2)
            page.locator("input[type=file]").first.set_input_files(str(room))
            box.fill(question)
            time.sleep(typing_s)
            page.get_by_role("button", name="Search", exact=True).click()
            pressed = time.perf_counter()
            activity = page.locator("#activity")
            call = activity.get_by_text(TOOL_TITLE).first
            expect(call).to_be_visible(timeout=timeout_s * 1000)
            row["first_call_s"] = round(time.perf_counter() - pressed, 2)
            row["first_call"] = call.inner_text()[:200]
            expect(activity.get_by_text(ROOM_PATH).first).to_be_visible(timeout=timeout_s * 1000)
            row["first_result_s"] = round(time.perf_counter() - pressed, 2)
            expect(page.get_by_text("Stopped:").first).to_be_visible(timeout=timeout_s * 1000)
            row["run_s"] = round(time.perf_counter() - pressed, 2)
            row["stopped"] = page.get_by_text("Stopped:").first.inner_text()[:200]
            row["answer"] = page.locator("#answer").inner_text()[:400]
            browser.close()
    finally:
        stop_process(proc)
        shutil.rmtree(home, ignore_errors=True)
    return row


def _commit(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--room", type=Path, default=ROOT / "assets" / "libref_dataroom.zip")
    parser.add_argument("--question", default="Which solver does scikit-learn's LogisticRegression use by default?")
    parser.add_argument("--checkout", type=Path, action="append", help="a checkout to run app.py from "
                        "(repeatable, measured in order; default: this one)")
    parser.add_argument("--typing", type=float, default=10.0, help="seconds between the upload and Search")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds each wait may take")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    rows = []
    for checkout in args.checkout or [ROOT]:
        row = visit(checkout.resolve(), args.room.resolve(), args.question, args.typing, args.timeout)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
