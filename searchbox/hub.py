"""Can the Hugging Face hub be used? One quick check per process, shared by every model lookup.

With no network, each huggingface-hub lookup retries with backoff (about 23 s each), so an offline boot
spent minutes before it fell back to what is on disk. Lookups ask here first and, when the hub cannot be
used, look only in the local cache.
"""

from __future__ import annotations

import functools
import logging

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 3.0


def hub_unavailable_reason() -> str | None:
    """None when the hub can be used, else why not, as a clause ("HF_HUB_OFFLINE is set", "the hub
    cannot be reached (...)") that messages append after "and"."""
    from huggingface_hub import constants

    # Read on every call, not cached: tests and callers may switch offline mode at run time.
    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    return _probe(constants.ENDPOINT)


def hub_reachable() -> bool:
    return hub_unavailable_reason() is None


@functools.cache
def _probe(endpoint: str) -> str | None:
    """One HEAD request to the hub, remembered for the process (per endpoint)."""
    import httpx

    try:
        response = httpx.head(endpoint, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError as exc:
        why = f"the hub cannot be reached (no answer from {endpoint}: {type(exc).__name__})"
    else:
        if response.status_code < 500:  # any answer short of a server error: the hub is there
            return None
        why = f"the hub cannot be reached ({endpoint} answers HTTP {response.status_code})"
    log.warning("%s: models come from the local cache and PyPI packages only", why)
    return why
