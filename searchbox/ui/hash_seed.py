"""Gradio's upload hash seed, kept in the app's memory only.

Gradio names the folder of each upload and of each file it serves sha256(seed + content), with the seed
read from `gradio/hash_seed.txt` inside the installed package. A public app's bash sees the app's Python
read-only at both confining levels (it needs it to run Python), so a hostile document could have the
model print the seed, and with it the path of any upload whose content is known or guessed. At start-up
the app puts fresh random bytes in the module global every reader uses at call time
(`gradio.processing_utils.hash_seed`: processing_utils' hash functions and route_utils' upload
hashing), so the file's content names nothing this app stores. Hiding the file from bash instead would
need a rule per level (a mount over it at `namespaces`; Landlock cannot take one file out of a folder it
allows), and `off` would still show it."""

from __future__ import annotations

import functools
import secrets

from gradio import processing_utils


@functools.cache  # once per process: a second app in it keeps the names the first one made
def keep_hash_seed_in_memory() -> None:
    processing_utils.hash_seed = secrets.token_hex(16).encode("ascii")
