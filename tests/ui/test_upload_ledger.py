"""The upload ledger's rules on their own (ui.uploads), with a clock the test moves: caps counted before
storing, an upload taken only by its address and first page session, and deleted once nothing needs it.
tests/ui/test_app_uploads.py holds the same rules against the real app."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchbox.ui.uploads import AHEAD, NotYourUpload, UploadLedger, UploadLimits, UploadRefused

A, B = "203.0.113.1", "198.51.100.2"
KB = 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ledger(clock: Clock, *, per_address: int = 3, per_address_kb: int = 100, total_kb: int = 250) -> UploadLedger:
    return UploadLedger(UploadLimits(per_address, per_address_kb * KB, total_kb * KB, unclaimed_s=60, keep_s=3600),
                        clock)


def store(uploads: UploadLedger, folder: Path, address: str, name: str, size: int = KB) -> Path:
    """An upload as the file gate records one: room reserved at its size, then the file Gradio wrote (in a
    folder of its own, as Gradio's are)."""
    grant = uploads.reserve(address, size)
    path = folder / f"upload-{name}" / name
    path.parent.mkdir()
    path.write_bytes(b"x")
    uploads.stored(grant, [str(path)])
    return path


def test_caps_per_address_and_in_total_are_met_before_anything_is_stored(tmp_path: Path) -> None:
    uploads = ledger(Clock())
    for n in range(3):
        store(uploads, tmp_path, A, f"a{n}.zip")
    with pytest.raises(UploadRefused, match="already has 3 uploads kept here") as count:
        uploads.reserve(A, KB)
    assert count.value.status == 429
    with pytest.raises(UploadRefused, match="more than one address may keep") as big:
        uploads.reserve(B, 101 * KB)
    assert big.value.status == 413
    store(uploads, tmp_path, B, "b.zip", 90 * KB)
    with pytest.raises(UploadRefused, match="would pass 0.1 MB"):
        uploads.reserve(B, 20 * KB)
    store(uploads, tmp_path, "192.0.2.3", "c.zip", 90 * KB)
    with pytest.raises(UploadRefused, match="holds all the uploads it can keep") as full:
        uploads.reserve("192.0.2.4", 90 * KB)
    assert full.value.status == 507
    grant = uploads.reserve("192.0.2.4", 60 * KB)
    uploads.cancel(grant)  # not stored (refused by Gradio, or the client left): its room is free again
    uploads.reserve("192.0.2.4", 60 * KB)


def test_an_upload_is_taken_only_by_its_address_and_its_first_page(tmp_path: Path) -> None:
    uploads = ledger(Clock())
    path = store(uploads, tmp_path, A, "room.zip")
    with pytest.raises(NotYourUpload, match="not yours"):
        uploads.claim(path, B, "page-b")
    uploads.claim(path, A, "page-a")
    uploads.claim(path.parent / "." / "room.zip", A, "page-a")  # the same file, however its path is spelled
    with pytest.raises(NotYourUpload):
        uploads.claim(path, A, "another-page-a")
    with pytest.raises(NotYourUpload):
        uploads.claim(tmp_path / "unknown.zip", A, "page-a")
    assert uploads.uploaders(path) == {A} and uploads.uploaders(tmp_path / "unknown.zip") is None


def test_an_upload_goes_once_nothing_needs_it(tmp_path: Path) -> None:
    clock = Clock()
    uploads = ledger(clock, per_address=1)
    unclaimed = store(uploads, tmp_path, A, "unclaimed.zip")
    clock.now += 61
    uploads.sweep()
    assert not unclaimed.parent.exists()
    shown = store(uploads, tmp_path, A, "shown.zip")  # the address has room again
    uploads.claim(shown, A, "page")
    clock.now += 600
    uploads.sweep()
    assert shown.exists()  # a page shows it: kept past the unclaimed time
    uploads.release_session("page")
    assert not shown.exists()
    ran = store(uploads, tmp_path, A, "ran.zip")
    uploads.claim(ran, A, "api-call")
    uploads.release(ran, "api-call")  # the run has its own copy
    assert not ran.exists()


def test_an_upload_in_flight_holds_what_arrived_and_counts_its_parts() -> None:
    """A trickle that declares 100 MB holds its address's room at that size, but the total only at what
    arrived plus AHEAD; each part counts as a file as it arrives (issue #43)."""
    mb = 1024 * KB
    uploads = ledger(Clock(), per_address=3, per_address_kb=200 * 1024, total_kb=20 * 1024)
    first, second = uploads.reserve(A, 100 * mb), uploads.reserve(B, 100 * mb)
    assert first.held == second.held == AHEAD  # 16 MB of the 20 held, not 200
    with pytest.raises(UploadRefused, match="would pass"):
        uploads.reserve(A, 150 * mb)  # the address's own room is held at the declared size
    uploads.reserve("192.0.2.3", mb)
    with pytest.raises(UploadRefused, match="holds all the uploads") as full:
        uploads.grow(first, 4 * mb, 1)  # 4 MB arrived: it would hold 12 MB, past the total
    assert full.value.status == 507
    with pytest.raises(UploadRefused, match="more files than your address may keep") as parts:
        uploads.grow(second, KB, 4)
    assert parts.value.status == 429
