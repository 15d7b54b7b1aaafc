"""A visitor's new run, as the page's Search button and the REST API make it: the same knobs checked, the
same queue limits and dataroom checks, the same secrets kept for the run. The caller submits it to the
scheduler (after subscribing to it, when it follows the run)."""

from __future__ import annotations

from pathlib import Path

from searchbox.assets import BUILTIN_DATAROOM
from searchbox.jobs.store import JobRecord, QueueLimits
from searchbox.ui.services import Services
from searchbox.ui.visitors import RunRequest


def create_run(services: Services, request: RunRequest, owner: str, address: str) -> JobRecord:
    """A new queued job of `owner`, who called from client `address`, on the request's upload (a path the
    caller took for this call) or the built-in dataroom. Raises gr.Error for a choice the visitor may not
    make, QueueFull when too many runs wait, and DataroomError, SettingsError or ValueError for a dataroom or
    a question that cannot run; nothing is left then."""
    settings, store = services.settings, services.store
    overrides = request.overrides(settings)
    source = Path(request.upload) if request.upload else BUILTIN_DATAROOM
    record = store.create(request.question, source, overrides, owner, settings,
                          max_waiting=settings.searchbox_max_queued_runs, visitor=store.visitor_of(address),
                          limits=QueueLimits.of(settings))
    if request.jina_key:
        services.remember_secrets(record.id, {"jina_api_key": request.jina_key})
    return record
