"""An abandoned request to the model searchbox serves to Pi: how long the next request waits.

Under HARNESS=pi, searchbox serves its built-in model to Pi over HTTP (`searchbox.llm.serve.ModelServer`), one
request at a time. When Pi aborts a request (a stop, Ctrl-C in a sweep, its own timeout) while the model is still
evaluating a long prompt, what matters to the next run is when the model is free again. For each checkout (before
and after a change, one after another on the same machine), in a child process that imports that checkout's
searchbox: the packaged 0.5B behind a ModelServer; a client streams a request whose prompt is `--notes` short
notes (about 22 tokens each) and closes its connection after `--gone-after` seconds; a second client then asks a short question, and
the time from the first client's going to the second reply is measured.

    python bench/abandoned_request.py --checkout /tmp/before --checkout .
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, socket, sys, threading, time
sys.path.insert(0, ".")
from searchbox.llm.llamacpp.model import LlamaCppModel
from searchbox.llm.serve import ModelServer
from searchbox.llm.weights.gguf import resolve_gguf
from searchbox.llm.weights.packaged import PACKAGED_QWEN_05B

notes_asked, gone_after = int(sys.argv[1]), float(sys.argv[2])
model = LlamaCppModel(resolve_gguf(PACKAGED_QWEN_05B), 16384)
server = ModelServer(model, max_tokens=64, seed=1).__enter__()
host, port = server.base_url.split("//")[1].split("/")[0].split(":")

def post(body, keep=None):
    data = json.dumps(body).encode()
    sock = socket.create_connection((host, int(port)))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    if keep is not None:
        keep.append(sock)
        return None
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    sock.close()
    return reply

import select
notes = " ".join(f"Note {n}: box {n} holds the ledgers from {1900 + n % 100}." for n in range(notes_asked))
prompt_tokens = len(model._llama.tokenize(notes.encode()))
kept = []
post({"messages": [{"role": "user", "content": notes + "\nSummarise the notes."}], "stream": True,
      "max_tokens": 64}, keep=kept)
time.sleep(gone_after)
# The abandoned request must still be under way (no reply, no error yet) for the measure to mean anything.
busy = not select.select([kept[0]], [], [], 0)[0]
gone = time.monotonic()
kept[0].close()
reply = post({"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8})
waited = time.monotonic() - gone
print(json.dumps({"prompt_tokens": prompt_tokens, "still_busy_when_gone": busy, "next_reply_s": round(waited, 1),
                  "answered": b" 200 " in reply.split(b"\r\n")[0]}))
server.close()
model.close()
"""


def measure(checkout: Path, notes: int, gone_after: float) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(notes), str(gone_after)], cwd=checkout,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: {done.stderr[-2000:]}")
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"checkout": str(checkout), "commit": commit, **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, action="append", help="a checkout to measure (repeatable; "
                        "default: this one)")
    parser.add_argument("--notes", type=int, default=555, help="the abandoned request's prompt, in notes of about "
                        "22 tokens (555: some 12,000 tokens, minutes of prefill on 2 cores)")
    parser.add_argument("--gone-after", type=float, default=3.0, help="seconds before its client goes")
    args = parser.parse_args()
    for checkout in args.checkout or [ROOT]:
        print(json.dumps(measure(checkout.resolve(), args.notes, args.gone_after)), flush=True)


if __name__ == "__main__":
    main()
