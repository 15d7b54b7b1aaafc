"""The first visitor's time from Search to answer on a freshly started app, with and without the warm start
(SEARCHBOX_WARM_START), in one run.

Each app is `python app.py` on a fresh HOME of its own (no cache, no kept prompt prefix, no model assembled, no
jobs), started as a user starts it: no SEARCHBOX_* variable but the warm start's, the model `--model` names, the
hub off. Three apps, one after another:

- `off`: the visitor asks as soon as the page answers, and the run prepares everything itself;
- `on, at once`: the visitor asks as soon as the page answers, while the warm start prepares (a run waits for
  what is not ready yet);
- `on, when ready`: the visitor asks once GET /health says the warm start is ready (a visitor after a restart).

The visitor is gradio_client calling /search as the page does, Quick effort (one turn, not forced) with the
catalog's default tools; the time is from the call to its last update (the run's end, the answer shown).

    python bench/warm_start.py [--model packaged:qwen2.5-coder-1.5b] [--question "..."] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.app_server import default_jobs_dir, free_port, stop_process, throwaway_home  # noqa: E402

QUESTION = "When does the lease of the Duluth headquarters at 410 Lakewalk Avenue expire?"
CASES = (("off", "0", False), ("on, at once", "1", False), ("on, when ready", "1", True))


def health(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url + "health", timeout=10) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read() or b"null")
    except OSError:  # not listening yet
        return None


def first_visit(model: str, seed: str, question: str, warm: str, when_ready: bool) -> dict[str, Any]:
    from gradio_client import Client

    with throwaway_home("warm-start-bench") as home:
        port = free_port()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SEARCHBOX_")}, "HOME": str(home),
               "HF_HUB_OFFLINE": "1", "LLM_GGUF": model, "LLM_SEED": seed, "SEARCHBOX_WARM_START": warm}
        log_path = home / "app.log"
        with log_path.open("w") as log:
            started = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.time() + 1800
            while (state := health(url)) is None or (when_ready and state["warm"]["state"] == "preparing"):
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"the app did not get ready:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.2)
            asked_at = time.perf_counter() - started
            client = Client(url, verbose=False)
            # The page's Quick effort and defaults: the catalog's default tools, the app's own model and retrieval.
            args = (question, None, 1, False, ["search_dataroom", "answer_question"], [], model, "", "", "default",
                    "local", "local", "", "")
            submitted = time.perf_counter()
            for _update in client.submit(*args, api_name="/search"):
                pass
            seconds = time.perf_counter() - submitted
            [job_dir] = [p for p in default_jobs_dir(home).iterdir() if (p / "run_meta.json").is_file()]
            meta = json.loads((job_dir / "run_meta.json").read_text())
            answer = (job_dir / "work" / "ANSWER.md").read_text() if (job_dir / "work" / "ANSWER.md").is_file() else ""
            final = health(url) or {}
            return {"asked_at": asked_at, "seconds": seconds, "stop": meta.get("stop_reason"),
                    "run_s": meta.get("elapsed_seconds"), "answer": " ".join(answer.split())[:120],
                    "warm": final.get("warm", {})}
        finally:
            stop_process(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="packaged:qwen2.5-coder-1.5b")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--seed", default="1")
    args = parser.parse_args()
    print(f"{args.model}, seed {args.seed}: {os.cpu_count()} logical CPUs; load average before "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = []
    for label, warm, when_ready in CASES:
        result = first_visit(args.model, args.seed, args.question, warm, when_ready)
        steps = ", ".join(f"{s['name']} {s['state']} {s['seconds']} s" for s in result["warm"].get("steps", []))
        rows.append(f"{label} | {result['asked_at']:.1f} | {result['seconds']:.1f} | {result['run_s']} | "
                    f"{result['stop']} | {steps or '-'} | {result['answer']}")
        print(rows[-1], flush=True)
    print("warm start | asked at s after start | Search to answer s | the run's own s | stop | warm steps | answer")
    print("\n".join(rows))
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
