"""Endpoint URLs as a run may record or show them: never with the credentials a URL may carry."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def without_userinfo(url: str) -> str:
    """A URL as it may be recorded or shown: credentials in it (user:password@) are left out."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def endpoint_forms(url: str) -> set[str]:
    """Every form in which an endpoint URL may be written down by a run: as given, without credentials,
    without a trailing / or /chat/completions, as the OpenAI base Pi is given (models.json: `.../v1`),
    and its host and port. A bare host name is one only when it has a dot or colon in it (an address or
    a domain): a one-label name such as `llm` is too likely an ordinary word of an answer."""
    if not url:
        return set()
    bare = without_userinfo(url)
    trimmed = bare.rstrip("/").removesuffix("/chat/completions").rstrip("/")
    forms = {url, bare, trimmed, trimmed if trimmed.endswith("/v1") else trimmed + "/v1",
             trimmed.removesuffix("/v1")}
    parts = urlsplit(bare)
    if parts.netloc:
        forms.add(parts.netloc)
        host = parts.hostname or ""
        if "." in host or ":" in host:
            forms.add(host)
    return {form for form in forms if form and form not in ("http:", "https:")}
