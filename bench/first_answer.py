"""The README's question answered from a fresh process and in a warm app, each next to its limit.

A run's limit is what llama.cpp alone needs for the tokens that are really new to it: each step's prompt
tokens no cache held (input - cacheRead, from its session.jsonl) evaluated at the depth they sit at (after
the step's cached tokens), plus its output tokens decoded one at a time, timed here right after each run (the
machine's speed drifts from minute to minute), on the same model with the runtime's settings but no harness,
chat template or sampler (`LlamaCppModel.replay_time`). Prefill slows with depth, so the speed of a short cold prompt (printed
too, as "raw llama.cpp") would make a limit no run can meet. The fresh process is `python -m
searchbox run` with no flags but the model, after the prompt prefix was kept on disk (by this script, as
an earlier process would have); the warm app is `python app.py` once it has evaluated its prefix at
start-up, asked the question twice through its API (a first visitor, then a second).

    python bench/first_answer.py [--model packaged:qwen2.5-coder-1.5b] [--seed 1] [--skip-app]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from searchbox.agent.run import keep_prompt_prefix  # noqa: E402
from searchbox.llm.choice.connect import connect_for_run  # noqa: E402
from searchbox.llm.llamacpp.speed import StepShape  # noqa: E402
from searchbox.settings import Settings  # noqa: E402
from testkit.app_server import free_port, stop_process  # noqa: E402

QUESTION = "Who audited the FY2025 financial statements?"
KEPT_LINE = "the prompt prefix runs start with"


def usages(job_dir: Path) -> list[dict[str, int]]:
    rows = [json.loads(line) for line in (job_dir / "session.jsonl").read_text().splitlines()]
    return [row["usage"] for row in rows if row.get("usage")]


def step_shapes(job_dir: Path) -> list[StepShape]:
    return [StepShape(u.get("cacheRead", 0), u["input"], u["output"]) for u in usages(job_dir)]


def new_tokens(job_dir: Path) -> dict[str, int]:
    """Prompt tokens no cache held, and output tokens, summed over the run's LLM calls."""
    usages_ = usages(job_dir)
    return {"steps": len(usages_), "prompt": sum(u["input"] for u in usages_),
            "cached": sum(u.get("cacheRead", 0) for u in usages_),
            "new_prompt": sum(u["input"] - u.get("cacheRead", 0) for u in usages_),
            "output": sum(u["output"] for u in usages_)}


def report(label: str, seconds: float, limit: float, job_dir: Path) -> None:
    tokens = new_tokens(job_dir)
    meta = json.loads((job_dir / "run_meta.json").read_text())
    timing = json.loads((job_dir / "timing.json").read_text())
    # Where the seconds went: the run itself (its LLM calls and tools) and what came before it.
    split = (f"{meta['elapsed_seconds']:.1f} ({timing['llm_ms'] / 1000:.1f} / {timing['tool_ms'] / 1000:.1f})")
    print(f"{label} | {seconds:.1f} | {limit:.1f} | {seconds / limit:.2f} | {split} | {tokens['steps']} | "
          f"{tokens['prompt']:,} ({tokens['cached']:,} cached) | {tokens['new_prompt']:,} | {tokens['output']:,} | "
          f"{meta.get('stop_reason')}, {meta.get('tool_calls')} tool calls", flush=True)


def fresh_process(env: dict[str, str], job_dir: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "searchbox", "run", QUESTION, "--out", str(job_dir)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # 1: the run stopped without being done, its records are still whole
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
    return seconds


def warm_app(env: dict[str, str], jobs: Path, model: str, asks: int,
             after_each: Callable[[Path], None]) -> list[tuple[float, Path]]:
    """The app started, its prefix kept at start-up, then the question asked `asks` times, one after another,
    `after_each` called on each run's job folder before the next ask."""
    from gradio_client import Client

    port = free_port()
    log_path = jobs.parent / "app.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        started, deadline = time.perf_counter(), time.time() + 900
        while KEPT_LINE not in log_path.read_text(errors="replace"):
            if proc.poll() is not None or time.time() > deadline or "warm start: could not" in log_path.read_text():
                raise RuntimeError(f"the app kept no prefix:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        kept = next(line for line in log_path.read_text().splitlines() if KEPT_LINE in line)
        print(f"app start-up to prefix kept: {time.perf_counter() - started:.1f} s ({kept.strip()})", flush=True)
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        # The page's defaults: the catalog's default tools, the app's own model and retrieval settings.
        args = (QUESTION, None, 10, False, ["search_dataroom", "answer_question"], [], model, "", "", "default",
                "local", "local", "", "")
        timed = []
        for _ in range(asks):
            before = set(jobs.iterdir()) if jobs.exists() else set()
            submitted = time.perf_counter()
            for _update in client.submit(*args, api_name="/search"):
                pass
            seconds = time.perf_counter() - submitted
            [job_dir] = [p for p in jobs.iterdir() if p not in before and (p / "session.jsonl").is_file()]
            timed.append((seconds, job_dir))
            after_each(job_dir)
        return timed
    finally:
        stop_process(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="packaged:qwen2.5-coder-1.5b")
    parser.add_argument("--seed", default="1")
    parser.add_argument("--skip-app", action="store_true")
    args = parser.parse_args()
    knobs = {"LLM_GGUF": args.model, "LLM_SEED": args.seed}
    with tempfile.TemporaryDirectory(prefix="searchbox-first-answer-") as home:
        jobs = Path(home) / "jobs"
        env = {**os.environ, **knobs, "HF_HUB_OFFLINE": "1", "SEARCHBOX_JOBS_DIR": str(jobs)}
        settings = Settings.resolve(env=env)
        print(f"{args.model}, seed {args.seed}: {os.cpu_count()} logical CPUs; load average before "
              f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        kept = keep_prompt_prefix(settings, on_note=lambda note: print(f"note: {note}"))
        if kept is not None:
            print(f"prompt prefix: {kept.tokens} tokens {kept.how} in {kept.seconds:.1f} s", flush=True)
        model = connect_for_run(settings).model
        # A short cold prompt's speed, for reference: the limits below are timed at each step's depth.
        raw = model.measure_speed(prompt_tokens=1500, decoded=64)
        print(f"raw llama.cpp, a cold 1,500-token prompt: prefill {raw.prefill_tps:.1f} tok/s, decode "
              f"{raw.decode_tps:.1f} tok/s", flush=True)
        limits: list[float] = []

        def limit(job_dir: Path) -> None:  # idle while the run's own process waits: the same machine, minutes apart
            timed = model.replay_time(step_shapes(job_dir))
            limits.append(timed.seconds)
            print(f"{job_dir.name}: llama.cpp alone {timed.prefill_s:.1f} s for {timed.new_prompt:,} new prompt "
                  f"tokens at their depth ({timed.new_prompt / max(timed.prefill_s, 1e-9):.1f} tok/s), "
                  f"{timed.decode_s:.1f} s for {timed.output:,} output tokens", flush=True)

        fresh = Path(home) / "fresh"
        runs = [("fresh process (python -m searchbox run)", fresh_process(env, fresh), fresh)]
        limit(fresh)
        if not args.skip_app:
            runs += [(f"warm app, ask {ask}", seconds, job_dir) for ask, (seconds, job_dir)
                     in enumerate(warm_app(env, jobs, args.model, asks=2, after_each=limit), start=1)]
        model.close()
        print("run | seconds | limit s | ratio | the run's own s (LLM / tools) | steps | prompt tokens | "
              "new prompt tokens | output tokens | stop")
        for (label, seconds, job_dir), limit in zip(runs, limits):
            report(label, seconds, limit, job_dir)
        print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
