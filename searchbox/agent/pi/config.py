"""How a run starts Pi: its agent folder (models.json naming the run's model), its command line and its
environment. Everything lives in the job folder beside work/ (`<job>/pi/`), never inside it, and Pi's
environment is an allowlist: no key or token of the app reaches it but the endpoint's own (LLAMA_API_KEY),
which models.json names as an environment variable (`"$NAME"`, which Pi interpolates), so that the key is
in no file.

Pi's openai-completions provider always streams (`stream: true` is fixed in pi-ai; its compat settings
drop only `stream_options`). An endpoint that must get plain requests (LLM_STREAM=off, or auto once it
refused a stream in this process) is therefore relayed to Pi by searchbox (llm/serve.py) through the
endpoint's client, which makes them.

THINKING is Pi's thinking level (`--thinking`: off, low, medium, high; auto gives none, and the model is not
marked as reasoning, so Pi sends nothing). Pi sends it as `chat_template_kwargs` (its "chat-template" format):
`enable_thinking` and, for a level, `reasoning_effort`, both chat template variables, which is how llama-server
and vLLM hand them to the template (the native harness sends `reasoning_effort` as OpenAI's top-level field)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from searchbox.agent.pi.install import EXTENSION, node_binary, pi_entry
from searchbox.llm.clients.openai_client import is_stream_refusal, refused_streams, refuses_streams
from searchbox.settings import Settings

PROVIDER = "searchbox"
KEY_VARIABLE = "SEARCHBOX_LLM_KEY"  # the variable of Pi's environment that holds the key (models.json: "$NAME")
# What Pi sends where there is no key (the relay, a local server): any value, since Pi requires one.
NO_KEY = "searchbox"


@dataclass(frozen=True)
class PiPaths:
    root: Path  # <job>/pi

    @property
    def agent_dir(self) -> Path:  # PI_CODING_AGENT_DIR: models.json, settings.json
        return self.root / "agent"

    @property
    def project(self) -> Path:
        """Pi's working folder: empty, the app's own, outside work/.

        Pi reads `<cwd>/.pi/` as project settings (extensions, packages, skills) and runs them
        unconfined; with work/ as its cwd, a `.pi/` that bash wrote there would be loaded. Bash never
        sees this folder, so nothing a document makes the model write can become Pi's settings.
        """
        return self.root / "project"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def socket(self) -> Path:
        return self.root / "tools.sock"

    @property
    def stderr(self) -> Path:
        return self.root / "pi-stderr.log"

    def session_file(self) -> Path | None:
        """Pi's session of this job, once it wrote one (the newest, should there be more)."""
        files = sorted(self.sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if self.sessions.is_dir() else []
        return files[-1] if files else None


def base_url(llama_url: str) -> str:
    """LLAMA_URL as the OpenAI-compatible base Pi appends /chat/completions to."""
    url = llama_url.rstrip("/")
    url = url.removesuffix("/chat/completions")
    return url if url.endswith("/v1") else url + "/v1"


def relayed(settings: Settings) -> bool:
    """Whether Pi talks to searchbox's loopback relay rather than to LLAMA_URL: the built-in runtime, or an
    endpoint that gets plain requests, which Pi cannot make."""
    if not settings.llama_url:
        return True
    return settings.llm_stream == "off" or (settings.llm_stream == "auto" and refused_streams(settings.llama_url))


def llm_problem(settings: Settings, error: str) -> str:
    """Pi's error for a failed request, with what to do where the endpoint refused a key or a stream. A
    stream refused under LLM_STREAM=auto is remembered, so that the process's next Pi run is relayed."""
    status = error.lstrip()[:3]  # Pi's message opens with the HTTP status: "401: {...}"
    if status in ("401", "403"):
        return f"{error} (the endpoint wants an API key: set LLAMA_API_KEY)"
    if status.isdigit() and is_stream_refusal(int(status), error) and settings.llama_url:
        if settings.llm_stream == "auto":
            refuses_streams(settings.llama_url)
            return f"{error} (the endpoint refuses streamed requests: the next run relays plain ones to Pi)"
        return f"{error} (the endpoint refuses streamed requests: set LLM_STREAM=off or auto)"
    return error


def url_problem(llama_url: str) -> str | None:
    """Pi's models.json is a file of the run: an endpoint with credentials in its URL cannot go there."""
    if "@" in urlsplit(llama_url).netloc:
        return "HARNESS=pi cannot use a LLAMA_URL with credentials in it (they would be written to the job folder)"
    return None


def pi_settings(settings: Settings) -> dict[str, Any]:
    """Pi's settings.json: its loop as it ships but for the compaction's budgets, which are knobs (the
    seed's values unless set), and its retries and waits, which are the native loop's (LLM_ATTEMPTS,
    LLM_TIMEOUT_SECONDS): both harnesses give an endpoint the same patience."""
    timeout_ms = settings.llm_timeout_seconds * 1000
    return {"quietStartup": True,
            "compaction": {"reserveTokens": settings.pi_compaction_reserve_tokens,
                           "keepRecentTokens": settings.pi_compaction_keep_recent_tokens},
            "httpIdleTimeoutMs": timeout_ms,
            "retry": {"enabled": settings.llm_attempts > 1, "maxRetries": settings.llm_attempts - 1,
                      "provider": {"timeoutMs": timeout_ms}}}


# Pi's "chat-template" thinking format: these chat_template_kwargs, from the run's thinking level.
THINKING_KWARGS = {"enable_thinking": {"$var": "thinking.enabled"},
                   "reasoning_effort": {"$var": "thinking.effort", "omitWhenOff": True}}


def thinking_compat(thinking: str) -> dict[str, Any]:
    """models.json's compat for THINKING: nothing where Pi is to send nothing (auto)."""
    if thinking == "auto":
        return {}
    return {"thinkingFormat": "chat-template", "chatTemplateKwargs": THINKING_KWARGS}


def write_agent_dir(paths: PiPaths, url: str, model_id: str, settings: Settings) -> None:
    """models.json with one provider, the run's model (its window and output cap, whether it thinks and how Pi
    says so); settings.json."""
    for folder in (paths.agent_dir, paths.sessions, paths.home, paths.project):
        folder.mkdir(parents=True, exist_ok=True)
    models = {"providers": {PROVIDER: {
        "baseUrl": url, "api": "openai-completions", "apiKey": f"${KEY_VARIABLE}",
        # max_tokens, as the native loop sends it: Pi's default for an unknown host, max_completion_tokens, is
        # ignored by llama_cpp.server, whose replies then run to the window.
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False, "maxTokensField": "max_tokens",
                   **thinking_compat(settings.thinking)},
        # reasoning: false makes Pi send no thinking field at all; off needs true, to send enable_thinking false
        "models": [{"id": model_id, "name": model_id, "reasoning": settings.thinking != "auto", "input": ["text"],
                    "contextWindow": settings.context_window, "maxTokens": settings.max_output_tokens,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
    }}}
    (paths.agent_dir / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
    (paths.agent_dir / "settings.json").write_text(json.dumps(pi_settings(settings), indent=2), encoding="utf-8")


def pi_argv(paths: PiPaths, model_id: str, task_block: str, session: Path | None,
            thinking: str = "auto") -> list[str]:
    node = node_binary() or "node"
    argv = [node, str(pi_entry()), "--mode", "rpc", "--provider", PROVIDER, "--model", model_id,
            # Only the extension's tools: every built-in Pi offers runs through searchbox's confined tools.
            "--no-builtin-tools", "--extension", str(EXTENSION),
            # No other extension, skill, template, theme, context file or MCP server, and no project-local file.
            "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files", "--no-mcp",
            "--no-approve", "--offline", "--session-dir", str(paths.sessions), "--append-system-prompt", task_block]
    if session is not None:
        argv += ["--session", str(session)]
    if thinking != "auto":  # THINKING's levels are Pi's own names
        argv += ["--thinking", thinking]
    return argv


def pi_env(paths: PiPaths, token: str, socket_path: Path, llm_key: str = "") -> dict[str, str]:
    """An allowlist, as bash's is: Pi needs a PATH for node, its agent folder, the tool socket and the
    endpoint's key (none for the relay)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(paths.home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(paths.home),
        "PI_CODING_AGENT_DIR": str(paths.agent_dir),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
        "SEARCHBOX_TOOL_SOCKET": str(socket_path),
        "SEARCHBOX_TOOL_TOKEN": token,
        KEY_VARIABLE: llm_key or NO_KEY,
    }
