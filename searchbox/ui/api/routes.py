"""The REST API's routes, on the app's own server and services: the same job store, scheduler, upload ledger
and visitor policy as the page (ui.submit makes a run as the Search button does; ui.panels reads the answer as
the page shows it), so every rule of the page holds for a caller.

Who a caller is: the visitor id it sends in X-Visitor-Id, which its first job gives it (a new one when it sends
none); in a public app it sees and acts on that id's jobs only, and another's job is answered 404 as a job that
does not exist. Its client address (ui.visitors.address_of) is counted for the upload caps and queue limits, as a
page's is, whatever id it sends. With SEARCHBOX_AUTH set, each call gives the same user and password (HTTP Basic).
A POST that a browser sends from another site's page (its Origin is not the app's) is refused: a form needs no
preflight, so without that any page a user opens could start runs on their searchbox.

Mounted as an ASGI middleware in front of the file gate (ui.app.launch_options): the gate would take a job's zip
for a Gradio call and cut it at its call size, so /api/ is routed here first and reads its own bodies within the
same caps (ui.api.body)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from searchbox.dataroom.unpack import DataroomError
from searchbox.jobs.store import WAITING, JobRecord, QueueFull
from searchbox.llm.disclosure import hidden, operator_details
from searchbox.records.job_folder import JobFolder
from searchbox.settings import SettingsError
from searchbox.ui.api.body import posted_form, staged_zip
from searchbox.ui.api.errors import ApiError
from searchbox.ui.api.fields import run_request
from searchbox.ui.api.stream import event_stream
from searchbox.ui.answer import render_answer
from searchbox.ui.panels import reader_answer
from searchbox.ui.services import Services
from searchbox.ui.slots import server_name
from searchbox.ui.submit import create_run
from searchbox.ui.visitors import address_of, forwarded_for

PREFIX = "/api"
VISITOR_HEADER = "X-Visitor-Id"
_VISITOR_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")  # as the ids the API and the page make, not a guessable name
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ACTIONS = {"pause": "paused", "resume": "resumed", "cancel": "cancelled"}
_CHECK_KEYS = ("id", "occurrence", "verdict", "reason")
_SOURCE_KEYS = ("id", "kind", "path", "chunk", "start", "end", "label", "preview")


class ApiMount:
    """Sends /api/ to the API and everything else on to the app's routes."""

    def __init__(self, app: ASGIApp, api: ASGIApp) -> None:
        self.app, self.api = app, api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        if scope["type"] == "http" and (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.api(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def build_api(services: Services) -> FastAPI:
    settings = services.settings
    api = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    hide = operator_details(settings)

    @api.exception_handler(ApiError)
    async def refused(_: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse({"error": exc.reason}, status_code=exc.status)

    @api.exception_handler(HTTPException)
    async def not_routed(_: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @api.middleware("http")
    async def logged_in(request: Request, call_next: Any) -> Any:
        origin = request.headers.get("origin")
        if request.method not in _SAFE_METHODS and origin is not None and not _same_site(origin, request):
            return JSONResponse({"error": f"A page at {origin} may not post to this app: the API takes jobs from "
                                          "scripts (which send no Origin) and from the app's own pages."},
                                status_code=403)
        if settings.searchbox_auth and not _authorized(request, settings.searchbox_auth):
            return JSONResponse({"error": "This app asks for its user and password (HTTP Basic: curl -u user:password)."},
                                status_code=401, headers={"WWW-Authenticate": 'Basic realm="searchbox"'})
        return await call_next(request)

    def visitor(request: Request) -> str:
        given = request.headers.get(VISITOR_HEADER, "")
        if given and not _VISITOR_ID.match(given):
            raise ApiError(400, f"{VISITOR_HEADER} is the id a job's answer gave you (16 to 64 letters, digits, - "
                                "or _), not a name of your own.")
        return given

    def address(request: Request) -> str:
        return address_of(request.client.host if request.client else "", forwarded_for(request.headers))

    def own_job(request: Request, job_id: str) -> JobRecord:
        record = services.may_see(job_id, visitor(request))
        if record is None:
            raise ApiError(404, "No such job among your runs.")
        return record

    def summary(record: JobRecord) -> dict[str, Any]:
        meta = JobFolder(services.store.job_dir(record.id)).read_meta()
        tokens = meta.get("tokens") if isinstance(meta.get("tokens"), dict) else {}
        place = services.scheduler.standing(record.id).place if record.state in WAITING else None
        return {"id": record.id, "question": record.question, "state": record.state, "stop_reason": record.stop_reason,
                "turns": meta.get("turns", 0), "tokens": tokens, "place_in_line": place,
                "server": server_name(record, settings.searchbox_operator), "created_at": record.created_at,
                "updated_at": record.updated_at}

    def shown(data: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
        """JSON with the operator's details left out, as the page's downloads have them (llm.disclosure)."""
        if hide:
            data = _hidden(data, hide)
        return JSONResponse(data, status_code=status, headers=headers)

    @api.post(f"{PREFIX}/jobs")
    async def post_job(request: Request) -> JSONResponse:
        owner, where = visitor(request) or secrets.token_urlsafe(16), address(request)
        async with posted_form(request, services.uploads, where, settings.searchbox_max_upload_mb * 2**20) as form:
            run = run_request(form, settings, None)  # the fields first: a bad one costs no copy of the zip
            record = await asyncio.to_thread(_create, services, form, run, owner, where)
        services.scheduler.submit(record.id)
        return shown({"visitor": owner, "job": summary(record)}, 201, {"Location": f"{PREFIX}/jobs/{record.id}"})

    @api.get(f"{PREFIX}/jobs")
    async def list_jobs(request: Request) -> JSONResponse:
        owner = visitor(request)
        records = await asyncio.to_thread(services.visible_jobs, owner) if owner or settings.searchbox_operator else []
        return shown({"jobs": [summary(r) for r in records]})

    @api.get(PREFIX + "/jobs/{job_id}")
    async def get_job(request: Request, job_id: str) -> JSONResponse:
        return shown(summary(own_job(request, job_id)))

    @api.get(PREFIX + "/jobs/{job_id}/answer")
    async def get_answer(request: Request, job_id: str) -> JSONResponse:
        record = own_job(request, job_id)
        answer = await asyncio.to_thread(reader_answer, services.store.job_dir(record.id))
        cited = set(answer.cited)
        return shown({
            "id": record.id, "state": record.state, "stop_reason": record.stop_reason,
            "answer": answer.text or None, "note": answer.note or None,
            "html": render_answer(answer.text, answer.sources, answer.checks) if answer.text else None,
            "citations": None if answer.checks is None else [_picked(c, _CHECK_KEYS) for c in answer.checks],
            "sources": [{**_picked(s, _SOURCE_KEYS), "cited": str(s.get("id")) in cited} for s in answer.sources]})

    @api.get(PREFIX + "/jobs/{job_id}/events")
    async def get_events(request: Request, job_id: str) -> StreamingResponse:
        record = own_job(request, job_id)
        after = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not after.isdigit():
            raise ApiError(400, f"Last-Event-ID (or ?after=) is an event's seq, a whole number, not {after!r}.")
        return StreamingResponse(event_stream(services, record.id, int(after), hide), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @api.post(PREFIX + "/jobs/{job_id}/{action}")
    async def act(request: Request, job_id: str, action: str) -> JSONResponse:
        if action not in _ACTIONS:
            raise ApiError(404, f"No action {action!r}: a job is paused, resumed or cancelled.")
        record = own_job(request, job_id)
        if not getattr(services.scheduler, action)(record.id):
            raise ApiError(409, f"This job is {record.state}: it cannot be {_ACTIONS[action]} now.")
        return shown(summary(services.store.get(record.id) or record))

    return api


def _create(services: Services, form: Any, run: Any, owner: str, address: str) -> JobRecord:
    """The job, made as the page makes one, on the form's zip (if any); ApiError for what cannot run."""
    with staged_zip(form, services.store.root) as path:
        request = dataclasses.replace(run, upload=str(path) if path else None)
        try:
            return create_run(services, request, owner, address)
        except QueueFull as exc:
            raise ApiError(429, str(exc)) from None
        except (DataroomError, SettingsError, ValueError) as exc:  # gr.Error too: a choice refused
            raise ApiError(400, _plain(exc, path)) from None


def _plain(exc: Exception, path: Path | None) -> str:
    """An error's words without the private folder the zip was staged in."""
    text = str(getattr(exc, "message", None) or exc)
    return text.replace(str(path.parent) + "/", "") if path else text


def _picked(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: row.get(key) for key in keys if key in row}


def _hidden(value: Any, hide: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return hidden(value, hide)
    if isinstance(value, dict):
        return {key: _hidden(item, hide) for key, item in value.items()}
    if isinstance(value, list):
        return [_hidden(item, hide) for item in value]
    return value


def _same_site(origin: str, request: Request) -> bool:
    """Whether a browser's Origin is this app's own, as the request reached the app (Host) or a reverse proxy
    (X-Forwarded-Host): another site's page can set neither, so its form posts are refused (CSRF). A proxy that
    passes the host without its port (nginx's $host) is matched by the host name alone."""
    try:
        parsed = urlsplit(origin)
        hostname, port = parsed.hostname, parsed.port or _DEFAULT_PORTS.get(parsed.scheme)
    except ValueError:
        return False
    if parsed.scheme not in ("http", "https") or not hostname:
        return False  # "null" (a sandboxed frame, a file) and anything else no page of ours sends
    for given in [request.headers.get("host", ""), *request.headers.get("x-forwarded-host", "").split(",")]:
        try:
            host = urlsplit(f"//{given.strip()}")
            if host.hostname == hostname and (host.port is None or host.port == port):
                return True
        except ValueError:
            continue
    return False


def _authorized(request: Request, auth: str) -> bool:
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(encoded, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    return secrets.compare_digest(given.encode(), auth.encode())
