"""Entry point of the Gradio app (what a Hugging Face Space runs): python app.py [--share]."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from searchbox.settings.storage import space_storage  # noqa: E402

# A Space's persistent storage keeps the hub's downloads (the models) across restarts, as it keeps searchbox's
# cache (settings.storage); set before huggingface_hub is imported, which reads it once.
if (_storage := space_storage()) is not None:
    os.environ.setdefault("HF_HOME", os.path.join(_storage, "huggingface"))

from searchbox.doctor import check_gpu, gpu_notices  # noqa: E402
from searchbox.llm.endpoints import PoolError  # noqa: E402
from searchbox.llm.llamacpp.gpu_build import prepare as prepare_gpu_build  # noqa: E402
from searchbox.settings import Settings, SettingsError  # noqa: E402
from searchbox.settings.environ import unknown_names  # noqa: E402
from searchbox.tools.sandbox import for_settings  # noqa: E402
from searchbox.ui.app import build_app, launch_options  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description="searchbox: agentic search over a dataroom")
    parser.add_argument("--share", action="store_true", default=os.environ.get("SEARCHBOX_SHARE") == "1",
                        help="also serve through a public share link")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    args = parser.parse_args()
    for unknown in unknown_names(os.environ):  # said before a bad value stops the app
        print(f"!!! searchbox: {unknown.message()}", file=sys.stderr, flush=True)
    try:
        settings = Settings.resolve()
    except SettingsError as exc:  # a knob's bad value: the message, not a traceback
        sys.exit(f"searchbox: {exc}")
    # Before llama_cpp is first imported: a GPU Space's pip built llama.cpp for the CPU, so the app installs (once)
    # and uses the prebuilt CUDA wheel that fits (SEARCHBOX_GPU_BUILD).
    prepared = prepare_gpu_build(settings)
    for line in prepared.lines:
        print(f"{'!!! ' if prepared.loud else ''}searchbox: {line}", file=sys.stderr, flush=True)
    # Checked at every boot: a GPU machine with a CPU build of llama.cpp runs fine, only many times slower,
    # so nothing else would say that the GPU sits unused (`python -m searchbox doctor` has the rest).
    for notice in gpu_notices(check_gpu()):
        print(f"!!! searchbox: {notice}", file=sys.stderr, flush=True)
    sandbox = for_settings(settings)
    if sandbox.requested == "off" and sandbox.name != "off":  # a public app never runs bash unconfined
        print(f"!!! searchbox: {sandbox.reason}", file=sys.stderr, flush=True)
    auth = tuple(settings.searchbox_auth.split(":", 1)) if ":" in settings.searchbox_auth else None
    # uvicorn rewrites a loopback peer's address from X-Forwarded-For by default (FORWARDED_ALLOW_IPS),
    # so a client behind a local tunnel could pick its own; client_address decides, from the real peer.
    os.environ["FORWARDED_ALLOW_IPS"] = "0.0.0.0/32"  # a peer that never connects: uvicorn trusts no one
    os.environ["SEARCHBOX_TRUSTED_PROXIES"] = settings.searchbox_trusted_proxies
    try:
        app = build_app(settings).queue(default_concurrency_limit=8)
    except PoolError as exc:  # a SEARCHBOX_ENDPOINTS that names no usable pool: say so, not a traceback
        sys.exit(f"searchbox: {exc}")
    # What the first run needs (the model and its prompt prefix, the retrieval models, the built-in dataroom's
    # caches), ready before the first visitor asks: SEARCHBOX_WARM_START.
    app.services.warm.start()  # type: ignore[attr-defined]
    # Gradio's own banner tells a user to edit launch() for a share link; this app has a flag for it.
    print(f"searchbox: http://{args.host}:{args.port}/" + ("" if args.share else "  (python app.py --share for a public link)"),
          flush=True)
    app.launch(server_name=args.host, server_port=args.port, share=args.share, auth=auth, quiet=not args.share,
               max_file_size=settings.searchbox_max_upload_mb * 1024 * 1024, **launch_options(app))


if __name__ == "__main__":
    main()
