"""How the page words where a run stands and where it ran, from what the scheduler says: its place in
line, the slots busy and free, its server. An operator sees a server's URL; a visitor sees its number in
the pool (the URL is the operator's)."""

from __future__ import annotations

from typing import Any

from searchbox.jobs.scheduler import Standing
from searchbox.jobs.store import JobRecord

OWN_MODEL = "the app's model"


def server_name(record: JobRecord, operator: bool) -> str:
    """Where the job ran last ("" before it ran): `server N · slot M` of a pool, or the app's own model."""
    placement: dict[str, Any] = record.placements[-1] if record.placements else {}
    if not placement:
        return ""
    if placement.get("server") is None:
        return OWN_MODEL
    server = placement["server"] if operator else f"server {placement.get('server_number')}"
    return f"{server} · slot {placement.get('slot')}"


def standing_text(standing: Standing, record: JobRecord, operator: bool) -> str:
    """A running job's server, or a waiting job's place in line; then the slots."""
    if standing.state == "running":
        where = f"on {server_name(record, operator)}"
    elif standing.place is not None:
        where = f"{_ordinal(standing.place)} of {standing.waiting} in line"
    else:
        return ""
    slots = f"{standing.busy} of {standing.slots} slot{'s' if standing.slots != 1 else ''} busy"
    if standing.servers_down:
        down = standing.servers_down
        slots += f", {down} server{'s' if down != 1 else ''} not answering"
        if not standing.slots:
            slots += ": the run starts when one answers again"
    return f"{where} · {slots}"


def lost_server(record: JobRecord) -> bool:
    """Whether the job's last run ended because its model server stopped answering."""
    return bool(record.placements and record.placements[-1].get("server_down"))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
