"""A run's bookkeeping, one listener on its events: it counts them (records/stats.py) and, at each turn
end and at the stop, hands the recorder those counts and what run_meta.json holds beside the events (the
answer's citations checked by the workspace, the run's setup, what its retrieval loaded so far); the
workspace saves its ledger at those points and after each tool call that added sources (a run killed
before its turn ended still knows, when restarted, the ids its tool results showed the model). The
recorder (records/recorder.py) only writes what it is given: asking the workspace is done here, a layer
above both."""

from __future__ import annotations

from typing import Any

from searchbox.records.events import Event, Stop, ToolEnd, TurnEnd, load_events
from searchbox.records.recorder import RunRecorder
from searchbox.records.stats import RunStats
from searchbox.workspace import Workspace


class RunRecording:
    def __init__(self, workspace: Workspace, recorder: RunRecorder, run_info: dict[str, Any]) -> None:
        self.workspace = workspace
        self.recorder = recorder
        self.run_info = run_info  # the run's setup (model id, backends, airgap level, tools): fixed for the run
        # From the events the job recorded, not from timing.json: a run killed mid-turn recorded its
        # tool calls as events but wrote no timing.json after them.
        self.stats = RunStats()
        for event in load_events(workspace.job_dir):
            self.stats.add(event)
        self._sources_saved = len(workspace.ledger)

    def __call__(self, event: Event) -> None:
        self.stats.add(event)
        match event:
            case ToolEnd():
                if len(self.workspace.ledger) != self._sources_saved:
                    self._save_sources()
            case TurnEnd():
                self._save_sources()
                self.recorder.turn_end(event, self.stats, self._meta())
            case Stop():
                self._save_sources()
                self.recorder.stop(event, self.stats, self._meta())

    def _save_sources(self) -> None:
        self._sources_saved = len(self.workspace.ledger)
        self.workspace.save_ledger()

    def _meta(self) -> dict[str, Any]:
        backends = {**self.run_info["backends"], "loaded": self.workspace.retrieval_loads()}
        return {"citations": self.workspace.check_citations(self.workspace.folder.answer_text()), **self.run_info,
                "backends": backends}
