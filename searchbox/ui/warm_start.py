"""Warm start (SEARCHBOX_WARM_START): what the first run needs, prepared when the app starts, off any visitor's
clock. Three steps, one after another on a thread of their own:

1. the model: the built-in runtime loads the app's model (downloading or assembling it first when it must)
   and has it hold the prompt prefix runs start with (agent.run.keep_prompt_prefix); with LLAMA_URL or a pool
   of model servers there is nothing to load here;
2. the retrieval models: the embedder and the reranker the app's settings name, loaded and kept for the runs
   of this process (retrieval.models keeps them);
3. the built-in dataroom: its text extracted and its chunks embedded into the disk caches every run reads
   (the extraction cache, the embedding cache), so that a first search on it embeds nothing.

Each step records where it stands, which the page (warm_view) and GET /health (health) read. A step that
fails is said in the log and there; the run that needs it meets the same trouble and says so in its feed.
What a step says is made safe for anyone to read first (`hide`): the page and /health are public.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_VECTORS
from searchbox.settings import Settings

MODEL, RETRIEVAL, DATAROOM = "model", "retrieval models", "built-in dataroom"
STEPS = (MODEL, RETRIEVAL, DATAROOM)
# How the log names what the model step kept: bench/first_answer.py waits for this line.
KEPT_LINE = "the prompt prefix runs start with"


@dataclass(frozen=True)
class Step:
    name: str
    state: str = "waiting"  # waiting, running, done, skipped (nothing to prepare here) or failed
    detail: str = ""  # what it did, is doing, or why it failed
    seconds: float | None = None  # how long it took, once it ended

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "state": self.state, "detail": self.detail,
                "seconds": None if self.seconds is None else round(self.seconds, 1)}


@dataclass(frozen=True)
class WarmState:
    """Where the warm start stands: `off` (not asked for), `preparing`, `ready`, or `failed` (it ended with a
    step failed)."""

    state: str
    steps: tuple[Step, ...]

    def step(self, name: str) -> Step:
        return next(step for step in self.steps if step.name == name)

    def as_dict(self) -> dict[str, object]:
        return {"state": self.state, "steps": [step.as_dict() for step in self.steps]}


class WarmStart:
    def __init__(self, settings: Settings, hide: Callable[[str], str] = str,
                 log: Callable[[str, bool], None] | None = None) -> None:
        self.settings = settings
        self._hide = hide  # what a step says, made safe for the page and /health
        self._log = log or _print
        self._steps = {name: Step(name) for name in STEPS}
        self._lock = threading.Lock()
        self._started = False
        self.preset = ""  # the catalog preset of the model the built-in runtime loaded, once it did
        self._fitted: Settings | None = None  # the settings a run of that model gets (agent.run_settings)

    def start(self) -> bool:
        """Begin on a thread, when SEARCHBOX_WARM_START is on (once). False when it is off."""
        with self._lock:
            if self._started or not self.settings.searchbox_warm_start:
                return False
            self._started = True
        threading.Thread(target=self._run, name="searchbox-warm-start", daemon=True).start()
        return True

    def state(self) -> WarmState:
        with self._lock:
            steps = tuple(self._steps.values())
            started = self._started
        if not started:
            return WarmState("off", steps)
        if any(step.state in ("waiting", "running") for step in steps):
            return WarmState("preparing", steps)
        return WarmState("failed" if any(step.state == "failed" for step in steps) else "ready", steps)

    def _run(self) -> None:
        for name, prepare in ((MODEL, self._model), (RETRIEVAL, self._retrieval), (DATAROOM, self._dataroom)):
            self._set(name, state="running")
            started = time.monotonic()
            try:
                detail = prepare()
            except Exception as exc:  # the run that needs it meets it again and says so in its feed
                detail = self._hide(f"{type(exc).__name__}: {exc}")
                self._set(name, state="failed", detail=detail, seconds=time.monotonic() - started)
                self._log(f"warm start: could not prepare the {name}: {detail}", True)
                continue
            if detail is None:
                self._set(name, state="skipped", detail=self._skipped(name), seconds=0.0)
                continue
            seconds = time.monotonic() - started
            self._set(name, state="done", detail=self._hide(detail), seconds=seconds)
            self._log(f"warm start: {name} ready in {seconds:.1f} s ({self._hide(detail)})", False)

    def _set(self, name: str, **changes: object) -> None:
        with self._lock:
            self._steps[name] = replace(self._steps[name], **changes)  # type: ignore[arg-type]

    def _skipped(self, name: str) -> str:
        if name == MODEL:
            return "runs use a model server: nothing to load here"
        return "the retrieval runs on the Jina API: nothing to load here"

    def _run_settings(self) -> Settings:
        """What a run gets of the retrieval: the settings fitted to the model loaded, else to this machine alone
        (retrieval models it cannot load here give way to the packaged ones, as in a run)."""
        from searchbox.retrieval.availability import fit_retrieval

        return self._fitted or fit_retrieval(self.settings)[0]

    # -- the steps: each returns what it did, or None when there is nothing to prepare here ----------------

    def _model(self) -> str | None:
        from searchbox.agent.run import keep_prompt_prefix
        from searchbox.agent.run_settings import fit_run_settings
        from searchbox.llm.choice.connect import connect_for_run

        settings = self.settings
        if settings.llama_url or settings.searchbox_endpoints:
            return None
        last = [0.0]

        def progress(done: int, total: int | None) -> None:
            if time.monotonic() - last[0] > 1.0 or (total and done >= total):
                last[0] = time.monotonic()
                share = f" ({100 * done / total:.0f}%)" if total else ""
                self._set(MODEL, detail=f"downloading the model: {done / 2**20:,.0f} MB{share}")

        self._set(MODEL, detail="loading the model")
        connection = connect_for_run(settings, on_note=lambda note: self._log(note, False), progress=progress)
        self.preset = connection.preset.name if connection.preset is not None else ""
        self._fitted = fit_run_settings(settings, connection.model, preset=connection.preset)[0]
        detail = f"{connection.model.model_id} loaded"
        self._set(MODEL, detail=f"{detail}; keeping the prompt prefix")
        # The model is loaded and kept (llamacpp's registry): this only makes it hold the prefix; its notes were said.
        kept = keep_prompt_prefix(settings, on_note=lambda _note: None)
        if kept is not None and kept.tokens:
            self._log(f"{KEPT_LINE} ({kept.tokens} tokens) {kept.how} in {kept.seconds:.1f} s", False)
            detail += f", the prompt prefix runs start with ({kept.tokens} tokens) {kept.how}"
        return detail

    def _retrieval(self) -> str | None:
        from searchbox.retrieval.engine import job_encoder
        from searchbox.retrieval.models import load_reranker

        settings = self._run_settings()
        local_rerank = settings.rerank_backend == "local" and settings.rerank_model.strip().lower() not in {"", "none"}
        if settings.embed_backend == "api" and not local_rerank:
            return None
        loaded = []
        if settings.embed_backend != "api":
            encoder = job_encoder(settings)
            _ = encoder.embedder  # loaded now, and kept for the runs (retrieval.models)
            assert encoder.report is not None
            loaded.append(f"embedder {encoder.report.model} on {encoder.report.device}")
        if local_rerank:
            _, report = load_reranker(settings, job_encoder(settings).encode)
            loaded.append(f"reranker {report.model} on {report.device}")
        return ", ".join(loaded)

    def _dataroom(self) -> str:
        """The built-in dataroom through the path a run's takes (workspace: unpack, extract, chunk, embed), in
        a folder of its own deleted after: what stays is in the caches."""
        from searchbox.dataroom.work_dir import load_corpus, prepare_work_dir
        from searchbox.retrieval.engine import RetrievalEngine, job_encoder

        with tempfile.TemporaryDirectory(prefix="searchbox-warm-") as folder:
            settings = self._run_settings()
            work = prepare_work_dir(Path(folder), BUILTIN_DATAROOM)
            corpus = load_corpus(work, settings)
            encoder = job_encoder(settings, seed_caches=[BUILTIN_VECTORS])
            engine = RetrievalEngine(corpus, settings, encoder)
            texts = [engine.index_text(i) for i in range(len(corpus.chunks))]
            encoder.encode(texts, "passage")
        unique, fresh = len(set(texts)), encoder.stats.texts_embedded
        return f"{len(corpus.files)} files, {len(texts)} chunks; {fresh} embedded now, {unique - fresh} were cached"


def _print(line: str, trouble: bool) -> None:
    if trouble:
        print(f"!!! searchbox: {line}", file=sys.stderr, flush=True)
    else:
        print(f"searchbox: {line}", flush=True)
