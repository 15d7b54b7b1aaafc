"""The embedding cache, keyed by (model, role, text): in memory for a job, on disk across jobs.

The disk layer is one SQLite file (atomic writes, safe across processes). Read-only "seed" files with
the same schema hold precomputed vectors, e.g. for the built-in dataroom. A disk file that cannot be
read, or has another schema, is moved aside and rebuilt, never trusted, whether that shows when it is
opened or only later; a stored vector that is not a finite unit vector of its recorded length is a miss.

The disk file is bounded (`max_bytes`, EMBED_CACHE_MB): a table kept by triggers counts the bytes its rows
hold, and a write that takes it past the bound removes the least recently used rows, down to 90% of it, in
the same transaction. A row's use is stamped when written and, at most once an hour, when read. Other
processes reading meanwhile keep their snapshot (WAL). A file from before the bound (no `used` column) is
migrated in place, its vectors kept.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_COLUMNS = ["key", "dim", "vec", "used"]
_COLUMNS_BEFORE_THE_BOUND = ["key", "dim", "vec"]
_ROW_OVERHEAD = 32  # bytes a row costs beyond its key and vector (record header, the `used` index), about
_ROW_BYTES = f"length(key) + length(vec) + {_ROW_OVERHEAD}"
_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL, "
    "used INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS embeddings_used ON embeddings (used)",
    "CREATE TABLE IF NOT EXISTS held (bytes INTEGER NOT NULL)",  # one row: what the rows hold
    f"INSERT INTO held SELECT coalesce(sum({_ROW_BYTES}), 0) FROM embeddings WHERE NOT EXISTS (SELECT 1 FROM held)",
    f"CREATE TRIGGER IF NOT EXISTS embeddings_added AFTER INSERT ON embeddings BEGIN "
    f"UPDATE held SET bytes = bytes + {_ROW_BYTES.replace('length(', 'length(NEW.')}; END",
    "CREATE TRIGGER IF NOT EXISTS embeddings_replaced AFTER UPDATE OF vec ON embeddings BEGIN "
    "UPDATE held SET bytes = bytes + length(NEW.vec) - length(OLD.vec); END",
    f"CREATE TRIGGER IF NOT EXISTS embeddings_removed AFTER DELETE ON embeddings BEGIN "
    f"UPDATE held SET bytes = bytes - ({_ROW_BYTES.replace('length(', 'length(OLD.')}); END",
]
_UPSERT = ("INSERT INTO embeddings (key, dim, vec, used) VALUES (?, ?, ?, ?) "
           "ON CONFLICT (key) DO UPDATE SET dim = excluded.dim, vec = excluded.vec, used = excluded.used")
_RESTAMP_AFTER_S = 3600  # a read re-stamps a row's use only when older: reads rarely write
_EVICT_TO = 0.9  # of max_bytes: the next eviction waits for a tenth of the bound to be written
_LOOKUP_BATCH = 500  # stays under SQLite's limit on bound parameters
# Another process writing the file: wait or skip, never take it for a broken file.
_BUSY = {"SQLITE_BUSY", "SQLITE_LOCKED"}

log = logging.getLogger(__name__)


def cache_key(model: str, role: str, text: str) -> bytes:
    return hashlib.blake2b(f"{model}\x00{role}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=20).digest()


class SqliteVectorStore:
    def __init__(self, path: Path, *, read_only: bool = False, max_bytes: int = 0) -> None:
        self.path = path
        self.read_only = read_only
        self.max_bytes = max_bytes  # 0: no bound
        self._lock = threading.Lock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        if self.read_only:
            # as_uri() percent-encodes '#', '?' and '%', which would otherwise cut the path short.
            # immutable=1: a seed may sit in a folder we cannot write (a WAL-mode file opened with
            # mode=ro alone then reads as empty), and no -wal/-shm files get created beside it. Only
            # a seed whose writer left a -wal behind needs SQLite to read that journal too.
            pending_wal = self.path.with_name(self.path.name + "-wal").exists()
            uri = f"{self.path.resolve().as_uri()}?mode=ro" + ("" if pending_wal else "&immutable=1")
            return sqlite3.connect(uri, uri=True, check_same_thread=False)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                return self._connect()
            except sqlite3.DatabaseError as exc:
                self._set_aside(exc)
                return self._connect()
        except (OSError, sqlite3.DatabaseError) as exc:
            return self._bypass(exc)

    def _bypass(self, exc: Exception) -> sqlite3.Connection:
        """No usable file (a folder that refuses writes, a file that stays broken): an empty in-memory
        table stands in, so runs go on, only without reuse across processes."""
        log.warning("embedding cache %s bypassed for this process: %s", self.path, exc)
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        _create_schema(conn)
        return conn

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        """A corrupt cache is only a slower start: set it aside (with its -wal/-shm files, which must
        not be replayed into the new file) so that the next connection begins an empty one."""
        log.warning("embedding cache %s is unusable (%s): set aside as %s.corrupt and rebuilt", self.path, exc,
                    self.path.name)
        for suffix in ("", "-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.replace(self.path.with_name(self.path.name + ".corrupt" + suffix))

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            _create_schema(conn)
            conn.execute("SELECT count(*) FROM embeddings").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        now = int(time.time())
        # A seed has no `used` column (and is never written): 0 stands in.
        used = "0" if self.read_only else "used"
        stale: list[bytes] = []
        with self._lock:
            for start in range(0, len(keys), _LOOKUP_BATCH):
                batch = list(keys[start : start + _LOOKUP_BATCH])
                marks = ",".join("?" * len(batch))
                try:
                    rows = self._conn.execute(f"SELECT key, dim, vec, {used} FROM embeddings WHERE key IN ({marks})",
                                              batch)
                    for key, dim, blob, stamp in rows:
                        vec = np.frombuffer(blob, dtype=np.float32) if isinstance(blob, bytes) else None
                        if vec is not None and _trusted(vec, dim):
                            found[bytes(key)] = vec
                            if isinstance(stamp, int) and stamp < now - _RESTAMP_AFTER_S:
                                stale.append(key)
                except sqlite3.DatabaseError as exc:
                    self._broken(exc)
                    return found
            self._stamp(stale, now)
        return found

    def _stamp(self, keys: list[bytes], now: int) -> None:
        """Mark rows as used now (called with the lock held). A file busy for longer than the timeout skips
        it: the rows are found all the same, and evicted sooner."""
        try:
            for start in range(0, len(keys), _LOOKUP_BATCH):
                batch = keys[start : start + _LOOKUP_BATCH]
                with self._conn:
                    self._conn.execute(f"UPDATE embeddings SET used = ? WHERE key IN ({','.join('?' * len(batch))})",
                                       [now, *batch])
        except sqlite3.DatabaseError as exc:
            self._broken(exc)

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        if self.read_only or not items:
            return
        now = int(time.time())
        rows = [(key, int(vec.shape[0]), np.asarray(vec, dtype=np.float32).tobytes(), now) for key, vec in items]
        with self._lock:
            try:
                with self._conn:
                    self._conn.executemany(_UPSERT, rows)
                    self._bound(max(len(key) + len(blob) for key, _, blob, _ in rows) + _ROW_OVERHEAD)
            except sqlite3.DatabaseError as exc:
                # The disk layer is an optimisation; the memory layer still holds the vectors.
                self._broken(exc)

    def _bound(self, row_bytes: int) -> None:
        """Past max_bytes: remove the least recently used rows down to _EVICT_TO of it (in the caller's
        transaction, so another process never sees the count and the rows disagree)."""
        if self.max_bytes <= 0:
            return
        held = self._held_bytes()
        if held <= self.max_bytes:
            return
        target = int(self.max_bytes * _EVICT_TO)
        while held > target:
            rows = (held - target) // row_bytes + 1  # rows of another model may be smaller: then again
            self._conn.execute("DELETE FROM embeddings WHERE key IN (SELECT key FROM embeddings ORDER BY used LIMIT ?)",
                               (rows,))
            held = self._held_bytes()

    def _held_bytes(self) -> int:
        """What the rows hold, as the triggers count it (keys, vectors and _ROW_OVERHEAD each)."""
        return int(self._conn.execute("SELECT bytes FROM held").fetchone()[0])

    def _broken(self, exc: sqlite3.DatabaseError) -> None:
        """Corruption found after opening (a page count(*) did not touch): rebuild the file now, so
        later runs get a working cache instead of silent misses. Called with the lock held."""
        if self.read_only or getattr(exc, "sqlite_errorname", "") in _BUSY:
            return
        self._conn.close()
        try:
            self._set_aside(exc)
            self._conn = self._connect()
        except (OSError, sqlite3.DatabaseError) as again:
            self._conn = self._bypass(again)

    def close(self) -> None:
        """Fold the write-ahead log back into the file, so the file alone holds every vector."""
        with self._lock:
            if not self.read_only:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()


def _create_schema(conn: sqlite3.Connection) -> None:
    """Create the tables (or migrate a file from before the bound) in one write transaction, so that
    processes opening the same new or old file at once never see half of it."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(embeddings)")]
        if columns == _COLUMNS_BEFORE_THE_BOUND:
            log.info("embedding cache: adding the column `used` (rows kept) so that it can be bounded")
            conn.execute("ALTER TABLE embeddings ADD COLUMN used INTEGER NOT NULL DEFAULT 0")
        elif columns not in ([], _COLUMNS):  # a file of the same name that some other program wrote
            raise sqlite3.DatabaseError(f"table embeddings has columns {columns}, not {_COLUMNS}")
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def _trusted(vec: np.ndarray, dim: int) -> bool:
    """Every vector written here was L2-normalized (a zero vector stays zero): anything else is damage."""
    if vec.shape[0] != dim or not np.isfinite(vec).all():
        return False
    norm = float(np.linalg.norm(vec.astype(np.float64)))  # float32 squares of garbage overflow
    return abs(norm - 1.0) < 1e-3 or norm == 0.0


class EmbeddingCache:
    def __init__(self, disk_path: Path | None = None, seed_paths: Sequence[Path] = (), max_bytes: int = 0) -> None:
        self._memory: dict[bytes, np.ndarray] = {}
        self._disk = SqliteVectorStore(disk_path, max_bytes=max_bytes) if disk_path else None
        self._seeds = [SqliteVectorStore(p, read_only=True) for p in seed_paths if p.exists()]
        self.hits = 0
        self.misses = 0

    def get_many(self, model: str, role: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        keys = [cache_key(model, role, t) for t in texts]
        result: list[np.ndarray | None] = [self._memory.get(k) for k in keys]
        for store in [*self._seeds, *([self._disk] if self._disk else [])]:
            missing = [k for k, v in zip(keys, result) if v is None]
            if not missing:
                break
            found = store.get_many(missing)
            if not found:
                continue
            self._memory.update(found)
            result = [v if v is not None else found.get(k) for k, v in zip(keys, result)]
        hit = sum(v is not None for v in result)
        self.hits += hit
        self.misses += len(result) - hit
        return result

    def put_many(self, model: str, role: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        items = [(cache_key(model, role, t), np.array(v, dtype=np.float32)) for t, v in zip(texts, vectors)]
        self._memory.update(items)
        if self._disk:
            self._disk.put_many(items)

    def close(self) -> None:
        for store in [*self._seeds, *([self._disk] if self._disk else [])]:
            store.close()

    def clear_memory(self) -> None:
        self._memory.clear()
