"""Fuzzing install_dataroom: any archive either unpacks inside the dataroom or is refused with
DataroomError; no other exception, and never a byte written outside the job folder."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import warnings
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from dataroom_factories import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchbox.dataroom import DataroomError, install_dataroom
from testkit.tally import report

# Path pieces that attack the unpacker, mixed with ordinary ones.
_PIECES = st.one_of(
    st.sampled_from(["..", ".", "", "/", "\\", "C:", "a", "docs", "ANSWER.md", "__MACOSX", ".DS_Store"]),
    st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), min_size=1, max_size=12),
)
_NAMES = st.lists(_PIECES, min_size=1, max_size=5).map(
    lambda pieces: "".join(p if p in ("/", "\\") else p + "/" for p in pieces).rstrip("/") or "x"
)
_MEMBERS = st.lists(
    st.tuples(_NAMES, st.binary(max_size=2048), st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])),
    min_size=1,
    max_size=6,
)
# Damage applied to a valid archive: flip bits, cut it short, or overwrite a byte range.
_DAMAGE = st.one_of(
    st.none(),
    st.tuples(st.just("cut"), st.floats(0.0, 1.0)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(1, 255)), max_size=8)),
    st.tuples(st.just("flags"), st.integers(0, 0xFFFF)),
)

TALLY: Counter[str] = Counter()


def _archive(members: list[tuple[str, bytes, int]], damage: tuple | None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        for name, data, method in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            zf.writestr(info, data)
    data = bytearray(buf.getvalue())
    if damage is None:
        return bytes(data)
    kind, arg = damage
    if kind == "cut":
        return bytes(data[: int(len(data) * arg)])
    if kind == "flip":
        for where, mask in arg:
            data[min(int(len(data) * where), len(data) - 1)] ^= mask
        return bytes(data)
    # Random general-purpose flag bits (encryption, UTF-8, data descriptor…) in every header.
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at != -1:
            data[at + offset : at + offset + 2] = arg.to_bytes(2, "little")
            at = data.find(signature, at + 4)
    return bytes(data)


@pytest.fixture(scope="module", autouse=True)
def report_tally() -> Iterator[None]:
    yield
    report("fuzz unpacker", f"{TALLY['tried']} archives, {TALLY['handled']} handled "
          f"({TALLY['accepted']} unpacked, {TALLY['refused']} refused)")


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(members=_MEMBERS, damage=_DAMAGE)
def test_any_archive_is_unpacked_inside_or_refused(members: list[tuple[str, bytes, int]], damage: tuple | None) -> None:
    TALLY["tried"] += 1
    base = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        (base / "outside").mkdir()
        (base / "job" / "work").mkdir(parents=True)
        source = base / "input.zip"
        source.write_bytes(_archive(members, damage))
        before = snapshot(base)
        dest = base / "job" / "work" / "dataroom"
        try:
            install_dataroom(source, dest)
        except DataroomError as exc:
            assert str(exc) and "\n" not in str(exc)
            assert snapshot(base) == before and not dest.exists()
            TALLY["refused"] += 1
        else:
            written = set(snapshot(base)) - set(before)
            assert written and all(p.startswith(os.path.join("job", "work", "dataroom")) for p in written)
            TALLY["accepted"] += 1
        TALLY["handled"] += 1
    finally:
        _make_writable(base)
        shutil.rmtree(base)


def _make_writable(folder: Path) -> None:
    for dirpath, _, _ in os.walk(folder):
        os.chmod(dirpath, 0o755)  # the dataroom is read-only; rmtree needs to unlink its files


def test_tally_counts_every_example() -> None:
    assert TALLY["tried"] == TALLY["handled"] >= 150
