"""The shared embedding cache on disk stays within EMBED_CACHE_MB (issue 43: every dataroom's vectors stayed
forever): the least recently used rows go first, a file from before the bound is migrated with its vectors,
and processes writing one file at once leave it sound. Real SQLite files, vectors of MiniLM's size."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np

from searchbox.retrieval.cache import EmbeddingCache, cache_key
from searchbox.retrieval.engine import job_encoder
from searchbox.settings import Settings

DIM = 384
ROOT = Path(__file__).resolve().parents[2]


def vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def texts(batch: int, n: int = 100) -> list[str]:
    return [f"chunk {i} of batch {batch}" for i in range(n)]


def put_batches(cache: EmbeddingCache, batches: range) -> None:
    for batch in batches:
        cache.put_many("m", "passage", texts(batch), vectors(100, batch))


def stored_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT coalesce(sum(length(key) + length(vec)), 0) FROM embeddings").fetchone()[0]


def hits(path: Path, batch: int) -> int:
    cache = EmbeddingCache(path)
    found = sum(v is not None for v in cache.get_many("m", "passage", texts(batch)))
    cache.close()
    return found


def bounded_cache(cache_dir: Path, mb: int = 1) -> EmbeddingCache:
    settings = Settings.resolve(env={"SEARCHBOX_CACHE_DIR": str(cache_dir), "EMBED_CACHE_MB": str(mb)})
    return job_encoder(settings).cache


def test_the_shared_cache_stays_within_its_bound(tmp_path: Path) -> None:
    cache = bounded_cache(tmp_path)
    put_batches(cache, range(20))  # 2,000 vectors, about 3.1 MB
    cache.close()
    path = tmp_path / "embeddings.sqlite"
    assert stored_bytes(path) <= 2**20
    assert path.stat().st_size < 1.6 * 2**20  # the file too: SQLite reuses the pages rows left
    assert hits(path, 19) == 100 and hits(path, 0) == 0  # the newest kept, the oldest gone


def test_a_vector_read_again_stays_longer(tmp_path: Path) -> None:
    cache = bounded_cache(tmp_path)
    put_batches(cache, range(5))  # about 0.8 MB: within the bound
    path = tmp_path / "embeddings.sqlite"
    with sqlite3.connect(path) as conn:  # written long ago, all five
        conn.execute("UPDATE embeddings SET used = used - 7200")
    conn.close()
    assert hits(path, 0) == 100  # read now: stamped again
    put_batches(cache, range(5, 8))
    cache.close()
    assert hits(path, 0) == 100 and hits(path, 1) == 0


def test_a_file_from_before_the_bound_is_migrated_with_its_vectors(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    with sqlite3.connect(path) as conn:  # the schema before issue 43
        conn.execute("CREATE TABLE embeddings (key BLOB PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL)")
        conn.executemany("INSERT INTO embeddings VALUES (?, ?, ?)",
                         [(cache_key("m", "passage", t), DIM, v.tobytes()) for t, v in zip(texts(0), vectors(100, 0))])
    conn.close()
    cache = bounded_cache(tmp_path)
    assert sum(v is not None for v in cache.get_many("m", "passage", texts(0))) == 100
    put_batches(cache, range(1, 20))
    cache.close()
    assert not list(tmp_path.glob("*.corrupt*"))  # migrated, not set aside
    assert stored_bytes(path) <= 2**20


_WRITER = """
import sys
from pathlib import Path
import numpy as np
from searchbox.retrieval.cache import EmbeddingCache

cache = EmbeddingCache(Path(sys.argv[1]), max_bytes=2**20)
rng = np.random.default_rng(int(sys.argv[2]))
for batch in range(30):
    v = rng.standard_normal((50, 384)).astype(np.float32)
    cache.put_many("m", "passage", [f"{sys.argv[2]} {batch} {i}" for i in range(50)], v / np.linalg.norm(v, axis=1, keepdims=True))
cache.close()
"""


def test_processes_sharing_a_bounded_file_keep_it_sound(tmp_path: Path) -> None:
    """Three processes write one bounded file at once (each past the bound on its own) while this one reads it:
    no read fails, nothing is set aside, and the file ends sound, within the bound, its count true."""
    path = tmp_path / "embeddings.sqlite"
    reader = EmbeddingCache(path)
    put_batches(reader, range(1))
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(i)], cwd=ROOT) for i in range(3)]
    while any(w.poll() is None for w in writers):
        reader.get_many("m", "passage", texts(0))
        reader.clear_memory()
    assert [w.returncode for w in writers] == [0, 0, 0]
    reader.close()
    assert not list(tmp_path.glob("*.corrupt*"))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counted = conn.execute("SELECT bytes FROM held").fetchone()[0]
        actual = conn.execute("SELECT sum(length(key) + length(vec) + 32) FROM embeddings").fetchone()[0]
    conn.close()
    assert counted == actual <= 2**20
