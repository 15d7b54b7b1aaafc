"""A run's bookkeeping, one listener on its events: the recorder is handed each event and, at each turn
end and at the stop, what run_meta.json holds beside the events (the answer's citations checked by the
workspace, the run's model, backends and tools); the workspace saves its ledger at those points and
after each tool call that added sources (a run killed before its turn ended still knows, when
restarted, the ids its tool results showed the model). The recorder (records/recorder.py) only writes:
asking the workspace is done here, a layer above both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchbox.records.events import Event, Stop, ToolEnd, TurnEnd
from searchbox.records.recorder import RunRecorder
from searchbox.workspace import Workspace


class RunRecording:
    def __init__(self, workspace: Workspace, recorder: RunRecorder, run_info: Callable[[], dict[str, Any]]) -> None:
        self.workspace = workspace
        self.recorder = recorder
        self.run_info = run_info  # model id, backends, airgap level, tools: asked at each write
        self._sources_saved = len(workspace.ledger.sources())

    def __call__(self, event: Event) -> None:
        self.recorder.add(event)
        match event:
            case ToolEnd():
                if len(self.workspace.ledger.sources()) != self._sources_saved:
                    self._save_sources()
            case TurnEnd():
                self._save_sources()
                self.recorder.turn_end(event, self._meta())
            case Stop():
                self._save_sources()
                self.recorder.stop(event, self._meta())

    def _save_sources(self) -> None:
        self._sources_saved = len(self.workspace.ledger.sources())
        self.workspace.save_ledger()

    def _meta(self) -> dict[str, Any]:
        return {"citations": self.workspace.check_citations(self.workspace.folder.answer_text()), **self.run_info()}
