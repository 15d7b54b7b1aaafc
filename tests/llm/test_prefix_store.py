"""The prefix store on its own: what it keeps, what it refuses, and how it stays bounded (no model here;
tests/llm/test_kept_prefix.py puts real KV states through it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from searchbox.llm.llamacpp.prefix_store import MAGIC, PrefixKey, PrefixStore

SETUP = {"gguf_sha256": "ab" * 32, "n_ctx": 4096, "n_ubatch": 512, "kv_cache": "q8_0"}
KEY = PrefixKey(SETUP, tuple(range(1024)))
STATE = os.urandom(20_000)


def test_a_saved_state_loads_for_its_key_only(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 10 * 2**20)
    store.save(KEY, STATE)
    assert store.load(KEY) == STATE
    assert store.load(PrefixKey(SETUP, tuple(range(512)))) is None  # another prefix
    assert store.load(PrefixKey({**SETUP, "n_ctx": 8192}, KEY.tokens)) is None  # another context


def test_a_corrupt_file_is_ignored_and_removed(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 10 * 2**20)
    store.save(KEY, STATE)
    path = tmp_path / KEY.name
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # one bit of the state flipped: the checksum catches it
    path.write_bytes(bytes(data))
    assert store.load(KEY) is None and not path.exists()
    store.save(KEY, STATE)
    path.write_bytes(path.read_bytes()[:-10])  # truncated
    assert store.load(KEY) is None and not path.exists()
    path.write_bytes(b"not a kept prefix at all")
    assert store.load(KEY) is None and not path.exists()


def test_a_foreign_file_under_the_keys_name_is_ignored(tmp_path: Path) -> None:
    """A file whose header names another key (renamed, or kept by another model) is never loaded, even
    with a checksum that matches its own bytes."""
    store = PrefixStore(tmp_path, 10 * 2**20)
    foreign = PrefixKey({**SETUP, "gguf_sha256": "cd" * 32}, KEY.tokens)
    store.save(foreign, STATE)
    (tmp_path / foreign.name).rename(tmp_path / KEY.name)
    assert store.load(KEY) is None and not (tmp_path / KEY.name).exists()


def test_a_malformed_header_is_ignored_and_removed_never_raised(tmp_path: Path) -> None:
    """Headers anything of the app's user could write under the key's name (issue 43): each is a miss, and
    the file goes, so the next process does not meet it again."""
    store = PrefixStore(tmp_path, 10 * 2**20)
    path = tmp_path / KEY.name
    named = json.dumps(KEY.as_json()).encode()
    headers = {
        "deeply nested JSON": b"[" * 200_000 + b"]" * 200_000,
        "wrong types": json.dumps({"setup": list(SETUP), "tokens": "0 1 2", "state_bytes": "20000", "sha256": 5}).encode(),
        "not JSON": b"\xff\xfe{",
        "the key's, cut short": named[: len(named) // 2],
        "the key's and more": named + b" " * 100,
    }
    for why, header in headers.items():
        path.write_bytes(MAGIC + len(header).to_bytes(8, "little") + header + STATE)
        assert store.load(KEY) is None and not path.exists(), why
    for claimed in (2**63 - 1, 16 * 2**20):  # a length no header has: refused before anything is read
        path.write_bytes(MAGIC + claimed.to_bytes(8, "little") + named)
        assert store.load(KEY) is None and not path.exists(), claimed
    store.save(KEY, STATE)
    assert store.load(KEY) == STATE  # and the next save keeps it again


def test_a_discarded_state_is_removed(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 10 * 2**20)
    store.save(KEY, STATE)
    store.discard(KEY, "it did not check out")
    assert store.load(KEY) is None and not any(tmp_path.iterdir())


def test_links_and_oversized_files_are_refused(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path / "store", 10 * 2**20)
    store.save(KEY, STATE)
    real = tmp_path / "elsewhere.kv"
    (tmp_path / "store" / KEY.name).rename(real)
    (tmp_path / "store" / KEY.name).symlink_to(real)
    assert store.load(KEY) is None
    small = PrefixStore(tmp_path / "store", 1000)
    os.replace(real, tmp_path / "store" / KEY.name)
    assert small.load(KEY) is None  # more than the store may hold: not read


def test_the_store_keeps_the_most_recently_used_within_its_bound(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 60_000)  # room for two states of 20 kB with their headers, not three
    keys = [PrefixKey(SETUP, tuple(range(n))) for n in (512, 1024, 1536)]
    store.save(keys[0], STATE)
    store.save(keys[1], STATE)
    os.utime(tmp_path / keys[1].name, ns=(1, 1))  # the second is the least recently used now
    assert store.load(keys[0]) == STATE
    store.save(keys[2], STATE)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([keys[0].name, keys[2].name])
    too_big = PrefixStore(tmp_path, 1000)
    too_big.save(keys[1], STATE)  # larger than the whole store: not kept
    assert not (tmp_path / keys[1].name).exists()


def test_a_store_that_cannot_be_written_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("where the store's folder would be")
    store = PrefixStore(blocker / "prefixes", 10 * 2**20)
    store.save(KEY, STATE)  # the run goes on; the next process evaluates the prefix again
    assert store.load(KEY) is None
