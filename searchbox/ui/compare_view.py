"""The Compare tab: an ablation sweep's (or retrieval evaluation's) summary table with 95% intervals,
its charts, a paired comparison of two chosen entries question by question, who graded the runs and
every fact's verdict with the passage it rests on, and a small sweep over the built-in questions
started in the background.

It renders what `searchbox.evaluation.report` loads and `report_charts` draws, the same as the
`report` command's page. Sweeps live in the `sweeps/` folder beside the jobs folder. A sweep folder
is files on disk that anyone may have made: its names and texts are shown inert (searchbox.inert).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from searchbox import inert
from searchbox.assets import BUILTIN_DATAROOM, BUILTIN_QUESTIONS, EXAMPLE_SWEEP
from searchbox.evaluation.questions import load_questions
from searchbox.evaluation.files import RESULTS, RETRIEVAL
from searchbox.evaluation.intervals import accuracy_interval, format_p, paired_comparison, question_means
from searchbox.evaluation.report import (INTERVAL_NOTE, PAIRED_COLUMNS, PAIRED_NOTE, SUMMARY_COLUMNS, load_folder,
                                         paired_table, report_figures, results_frame, summary_table)
from searchbox.evaluation.report_graders import FACT_COLUMNS, GRADER_COLUMNS, GRADER_NOTE, fact_table, grader_table
from searchbox.settings import Settings

# The charts in the order of the tab's plots; a folder without retrieval.json shows those two empty.
CHARTS = ("score_by_type", "budget_curve", "tool_usage", "cost", "recall_by_method", "recall_by_type")
# The example sweep's name in the folder list: not a folder under sweeps/, so no sweep of one's own hides it.
EXAMPLE = "example: each assist alone (shipped with the app)"
WHAT_A_SWEEP_IS = """A **sweep** runs each entry of a matrix of settings (effort, tools, harness assists) over a set of
questions and grades every answer; this tab compares the entries: accuracy with 95% intervals, each
pair question by question, the charts and every fact's verdict. Make one with
`python -m searchbox ablate --per-type 1 --out {folder}/my-sweep` (then Rescan), or look at the example
sweep shipped with the app: five assists, each alone, over 10 built-in questions at two seeds."""


def sweeps_dir(settings: Settings) -> Path:
    return Path(settings.jobs_dir).parent / "sweeps"


def sweep_folders(settings: Settings) -> list[str]:
    """The names of the folders under sweeps/ that hold something to compare, newest first (names: a
    public page shows no path of the server's)."""
    root = sweeps_dir(settings)
    if not root.is_dir():
        return []
    folders = [p for p in root.iterdir() if p.is_dir() and any((p / f).is_file() for f in (RESULTS, RETRIEVAL))]
    return [p.name for p in sorted(folders, key=lambda p: (p.stat().st_mtime, p.name), reverse=True)]


@dataclass
class SmallSweep:
    """The one background sweep this app runs at a time."""
    folder: Path
    started: float
    total: int
    done: int = 0
    error: str | None = None
    finished: float | None = None


class CompareView:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sweep: SmallSweep | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def resolve(self, text: str | None) -> Path:
        """A folder under sweeps/ (by name or path); for the operator, any typed path."""
        text = (text or "").strip()
        if not text:
            raise gr.Error("Choose or type a sweep folder.")
        if text == EXAMPLE:
            return EXAMPLE_SWEEP
        root = sweeps_dir(self.settings).resolve()
        for folder in (Path(text).expanduser(), root / text):
            folder = folder.resolve()
            # A public demo's visitors see only the sweeps folder, not the server's file system.
            if folder.is_dir() and (self.settings.searchbox_operator or folder.is_relative_to(root)):
                return folder
        raise gr.Error(inert.html(f"No sweep folder {text} under {root}" if self.settings.searchbox_operator else
                                  f"No sweep folder {text} (any path is open to the operator: SEARCHBOX_OPERATOR=1)."))

    def load(self, text: str | None) -> tuple[Any, ...]:
        """(heading, summary table, every pair compared, entry A and entry B choices, *the CHARTS figures)
        of a folder."""
        folder = self.resolve(text)
        try:
            df, retrieval, _ = load_folder(folder)
        except ValueError as exc:
            raise gr.Error(inert.html(exc)) from exc
        parts = []
        if df is not None:
            parts.append(f"{len(df)} runs of {df['entry'].nunique()} entries over {df['question_id'].nunique()} questions"
                         if not df.empty else "no runs yet")
        if retrieval is not None:
            parts.append(f"retrieval evaluation of {inert.literal(retrieval.get('questions', '?'))} questions")
        # The shipped example is named as a clone has it, not by the server's path.
        named = EXAMPLE_SWEEP.relative_to(EXAMPLE_SWEEP.parents[1]) if folder == EXAMPLE_SWEEP.resolve() else folder
        heading = (f"**{inert.literal(folder.name)}**: {'; '.join(parts)}. A shareable page: "
                   f"{inert.code(f'python -m searchbox report {named}')}.")
        df = df if df is not None else results_frame([])
        figures = report_figures(df, retrieval or {})
        scored = list(dict.fromkeys(df.dropna(subset=["accuracy"])["entry"])) if not df.empty else []
        pick_a = gr.update(choices=scored, value=scored[0] if scored else None)
        pick_b = gr.update(choices=scored, value=scored[1] if len(scored) > 1 else None)
        return (heading, summary_table(df), paired_table(df), pick_a, pick_b, *(figures[key] for key in CHARTS))

    def graders(self, text: str | None) -> tuple[Any, Any]:
        """(each entry's grader with its fact counts and judge agreement, every fact's verdict and why)."""
        try:
            df, _, _ = load_folder(self.resolve(text))
        except ValueError as exc:
            raise gr.Error(str(exc)) from exc
        df = df if df is not None else results_frame([])
        return grader_table(df), fact_table(df)

    def compare(self, text: str | None, a: str | None, b: str | None) -> str:
        """Entry A against entry B on the questions both scored: each one's accuracy with its 95% interval,
        A's wins, losses and ties, and the exact sign test."""
        if not a or not b or a == b:
            raise gr.Error("Choose two different entries to compare.")
        try:
            df, _, _ = load_folder(self.resolve(text))
        except ValueError as exc:
            raise gr.Error(inert.html(exc)) from exc
        scored = df.dropna(subset=["accuracy"]) if df is not None and not df.empty else results_frame([])
        runs = {name: scored[scored["entry"] == name] for name in (a, b)}
        means = {name: question_means(zip(r["question_id"], r["accuracy"])) for name, r in runs.items()}
        paired = paired_comparison(means[a], means[b])
        if paired is None:
            raise gr.Error(inert.html(f"{a} and {b} have no scored question in common."))
        lines = []
        for name, r in runs.items():
            interval = accuracy_interval(zip(r["question_id"], r["accuracy"]))
            lines.append(f"- **{inert.literal(name)}**: accuracy {interval.mean:.2f} (95% interval {interval.low:.2f}–"
                         f"{interval.high:.2f}) over {interval.questions} questions, {len(r)} runs")
        verdict = ("A difference this lopsided is unlikely by chance (p < 0.05)." if paired.p_value < 0.05 else
                   "No evidence of a difference at p < 0.05.")
        lines.append(f"- On {paired.questions} shared questions **{inert.literal(a)}** wins {paired.wins}, loses {paired.losses}, "
                     f"ties {paired.ties}; mean difference {paired.mean_difference:+.2f}; exact sign test "
                     f"p = {format_p(paired.p_value)}. {verdict}")
        return "\n".join(lines) + f"\n\n{PAIRED_NOTE}"

    def start_sweep(self) -> str:
        """Start the default matrix over one built-in question per type, in the background."""
        if not self.settings.searchbox_operator:  # 40 runs on a shared model slot: not for a demo's visitors
            raise gr.Error("Only the operator (SEARCHBOX_OPERATOR=1) can start a sweep here; "
                           "use python -m searchbox ablate --per-type 1 --out <folder>.")
        try:
            from searchbox.evaluation.sweep import run_sweep
            from searchbox.evaluation.sweep_rows import select_questions
            from searchbox.evaluation.matrix import DEFAULT_MATRIX_PATH, load_matrix
        except ImportError as exc:
            raise gr.Error(f"Sweeps are not available in this build (searchbox.evaluation.sweep: {exc}).") from exc
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                raise gr.Error(f"A sweep is already running into {self.sweep.folder}.")
            try:
                matrix = load_matrix(DEFAULT_MATRIX_PATH)
                questions = select_questions(load_questions(BUILTIN_QUESTIONS), per_type=1)
            except ValueError as exc:
                raise gr.Error(str(exc)) from exc
            folder = sweeps_dir(self.settings) / time.strftime("small-%Y%m%d-%H%M%S")
            sweep = self.sweep = SmallSweep(folder, time.time(), len(matrix) * len(questions))

            def work() -> None:
                try:
                    run_sweep(matrix, questions, BUILTIN_DATAROOM, folder, self.settings,
                              progress=lambda row, done, total: setattr(sweep, "done", done))
                except Exception as exc:  # shown in the status line: a thread has nobody else to tell
                    sweep.error = f"{type(exc).__name__}: {exc}"
                finally:
                    sweep.finished = time.time()

            self._thread = threading.Thread(target=work, name="small-sweep", daemon=True)
            self._thread.start()
        return self.status()

    def status(self) -> str:
        sweep = self.sweep
        if sweep is None:
            return "No sweep started from this app yet."
        runs = f"{sweep.done} of {sweep.total} runs"
        folder = inert.code(sweep.folder)
        if sweep.error:
            return f"Sweep into {folder} failed after {runs}: {inert.literal(sweep.error)}"
        if sweep.finished is not None:
            return f"Sweep finished in {sweep.finished - sweep.started:,.0f} s: {runs} in {folder}. Load it above."
        return f"Sweep running for {time.time() - sweep.started:,.0f} s: {runs} done, into {folder}."

    def build(self) -> None:
        with gr.Row():
            folder = gr.Dropdown([*sweep_folders(self.settings), EXAMPLE], value=None, allow_custom_value=True,
                                 label="Sweep folder (or type a path)", scale=4)
            rescan = gr.Button("Rescan", scale=0)
            load = gr.Button("Load", variant="primary", scale=0)
        # Before a sweep is loaded the tab says what goes here and how to make it, not six blank charts.
        with gr.Column() as intro:
            gr.Markdown(WHAT_A_SWEEP_IS.format(folder=sweeps_dir(self.settings) if self.settings.searchbox_operator
                                               else "<jobs folder>/../sweeps"))
            example = gr.Button("Load the example sweep", variant="primary", size="md")
        heading = gr.Markdown()
        with gr.Column(visible=False, elem_id="compare-charts") as results:
            table = gr.Dataframe(headers=SUMMARY_COLUMNS, interactive=False,
                                 label="Per entry: accuracy over questions with its 95% interval; the rest means per run, and the runs with no answer")
            gr.Markdown(INTERVAL_NOTE)
            with gr.Accordion("Paired comparison", open=True):
                with gr.Row():
                    pick_a = gr.Dropdown([], label="Entry A", scale=2)
                    pick_b = gr.Dropdown([], label="Entry B", scale=2)
                    compare = gr.Button("Compare A with B", scale=1)
                verdict = gr.Markdown()
                pairs = gr.Dataframe(headers=PAIRED_COLUMNS, label="Every pair, question by question", interactive=False)
            with gr.Accordion("Graders and fact verdicts", open=False):
                gr.Markdown(GRADER_NOTE)
                graders = gr.Dataframe(headers=GRADER_COLUMNS, interactive=False, label="Who graded each entry")
                facts = gr.Dataframe(headers=FACT_COLUMNS, interactive=False, wrap=True,
                                     label="Every fact of every run: its verdict and the passage it rests on")
            plots = [gr.Plot(label=key, show_label=False) for key in CHARTS]  # each figure carries its title
        rescan.click(lambda: gr.update(choices=[*sweep_folders(self.settings), EXAMPLE]), None, [folder], api_name=False)

        shown = [heading, table, pairs, pick_a, pick_b, *plots]

        def after_load(loaded: Any, api: bool) -> None:
            loaded.success(self.graders, [folder], [graders, facts], api_name="compare_graders" if api else False)
            loaded.success(lambda: (gr.update(visible=True), gr.update(visible=False)), None, [results, intro],
                           api_name=False)
        after_load(load.click(self.load, [folder], shown, api_name="compare_load"), api=True)
        after_load(example.click(lambda: EXAMPLE, None, [folder], api_name=False, queue=False)
                   .then(self.load, [folder], shown, api_name=False), api=False)
        compare.click(self.compare, [folder, pick_a, pick_b], [verdict], api_name="compare_pair")
        if not self.settings.searchbox_operator:  # 40 runs on the shared model slot, into a folder of the server's
            return
        with gr.Accordion("Run a small sweep", open=False):
            gr.Markdown("The default matrix over one built-in question per type, with this app's model settings, "
                        f"into `{sweeps_dir(self.settings)}`. Its runs share the model with the job queue and "
                        "take a while.")
            with gr.Row():
                start = gr.Button("Run a small sweep")
                refresh = gr.Button("Refresh status")
            status = gr.Markdown(self.status())
        start.click(self.start_sweep, None, [status], api_name=False)
        refresh.click(self.status, None, [status], api_name=False)

