"""A job's form, read as the page's uploads are read (ui.file_gate, ui.uploads): the body must say its size
and be no larger than SEARCHBOX_MAX_UPLOAD_MB, it is held against its client address's upload caps and the
app's total while it arrives, and it must keep the gate's pace; its zip is written to a private folder in the
jobs folder, never one Gradio serves, and goes once the job has its own copy.

The file gate never sees /api/ (ui.api.routes mounts the API in front of it), so these are the caps it would
apply, and the errors are the API's JSON ones."""

from __future__ import annotations

import re
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.types import Message

from searchbox.records.removal import remove_job_folder
from searchbox.ui.api.errors import ApiError
from searchbox.ui.file_gate import Pace, Stalled
from searchbox.ui.uploads import UploadLedger, UploadRefused

FIELD_MAX = 64 * 1024  # a field other than the zip: a pasted page of question fits many times over
MAX_FIELDS = 64  # a run's fields, with a tool a field for each of the catalog's
ZIP_FIELD = "zip"
# The store removes a `.staging-*` folder an hour old at its next start: a crash mid-request leaves none for long.
_STAGING = ".staging-upload-"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_FORMS = ("multipart/form-data", "application/x-www-form-urlencoded")
_MB = 1024 * 1024


@asynccontextmanager
async def posted_form(request: Request, uploads: UploadLedger, address: str, max_bytes: int) -> AsyncIterator[FormData]:
    """The request's form, read within the caps; ApiError when the body is refused or is no form."""
    headers = request.headers
    lengths = headers.getlist("content-length")
    if len(lengths) != 1 or not lengths[0].isdigit() or "transfer-encoding" in headers:
        raise ApiError(411, "A job's form must say its size: one Content-Length header, and no Transfer-Encoding.")
    if headers.get("content-type", "").split(";")[0].strip().lower() not in _FORMS:
        raise ApiError(415, "Post a job as a form (multipart/form-data, as `curl -F` sends it), not as "
                            f"{headers.get('content-type') or 'a body with no Content-Type'}.")
    size = int(lengths[0])
    if size > max_bytes:
        raise ApiError(413, f"This request ({size / _MB:.1f} MB) is larger than the app takes ({max_bytes / _MB:.0f} MB).")
    try:
        grant = uploads.reserve(address, size)
    except UploadRefused as refused:
        raise ApiError(refused.status, str(refused)) from None
    pace = Pace(uploads.limits.stall_s, size)
    arrived = 0

    async def receive() -> Message:
        nonlocal arrived
        try:
            message = await pace.receive(request.receive)
        except Stalled as stalled:
            raise ApiError(408, str(stalled)) from None
        if message["type"] != "http.request":
            raise ApiError(400, "The client went away part-way through its request.")
        arrived += len(message.get("body", b""))
        try:
            uploads.grow(grant, arrived, 1)  # one file at most: the form's zip
        except UploadRefused as refused:
            raise ApiError(refused.status, str(refused)) from None
        return message

    try:
        try:
            form = await Request(request.scope, receive).form(max_files=1, max_fields=MAX_FIELDS, max_part_size=FIELD_MAX)
        except (MultiPartException, HTTPException) as exc:  # Starlette's parser says what it refused with either
            raise ApiError(400, f"The form could not be read: {getattr(exc, 'detail', exc)}") from None
        try:
            yield form
        finally:
            await form.close()
    finally:
        uploads.cancel(grant)  # what arrived is gone when the form is closed: its room is free again


@contextmanager
def staged_zip(form: FormData, jobs_root: Path) -> Iterator[Path | None]:
    """The form's zip as a file in a private folder of the jobs folder (None when the form has none), named as
    its client named it, so a refusal names the caller's file; the folder goes when the caller is done."""
    given = form.getlist(ZIP_FIELD)
    if not given:
        yield None
        return
    upload = given[0]
    if not isinstance(upload, UploadFile):
        raise ApiError(400, f"`{ZIP_FIELD}` must be a file (curl -F {ZIP_FIELD}=@dataroom.zip), not text.")
    folder = jobs_root / f"{_STAGING}{secrets.token_urlsafe(12)}"
    folder.mkdir(mode=0o700)
    try:
        target = folder / (_UNSAFE.sub("_", Path(upload.filename or "").name).lstrip(".") or "dataroom.zip")
        with target.open("xb") as out:
            shutil.copyfileobj(upload.file, out)
        yield target
    finally:
        remove_job_folder(folder)
