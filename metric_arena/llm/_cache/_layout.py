"""The cache file's layout: its tables, its version (``PRAGMA user_version``) and the migration of an older
file in place, and WAL mode set up while another process may be creating the same file."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
import time
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.llm._types import canonical_json

__all__ = ["CACHE_ENV", "CLAIMS_SCHEMA", "SCHEMA", "SCHEMA_VERSION", "CacheCorrupt", "migrate", "set_wal",
           "split_usage"]

CACHE_ENV = "RAG_QA_ARENA_CACHE"
_ORIGINAL_CHARS = "original_chars"  # version 0 kept a cut reply's full length in the usage column
#: The layout of the cache file (``PRAGMA user_version``): 0 before it was versioned, 1 with the
#: ``original_chars`` and ``system_folded`` columns.
SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    usage TEXT,
    valid INTEGER NOT NULL,
    backend TEXT,
    created_at REAL NOT NULL,
    original_chars INTEGER,
    system_folded INTEGER NOT NULL DEFAULT 0
)
"""

# Requests being sent right now, by key: another process that needs the same answer waits for it
# instead of paying for it again. ``owner`` is "host:pid:start:token" (older caches: "host:pid:token");
# a claim lapses at ``expires`` or when its owner's process is gone (a pid now used by another
# process, or a zombie, counts as gone).
CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
)
"""



class CacheCorrupt(RagQaArenaError):
    """The cache file is damaged; the message names it and the fix."""


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Create the tables, or bring a file of an older layout to :data:`SCHEMA_VERSION` (one
    transaction: another process opening the file at the same time waits, then finds it done)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise CacheCorrupt(f"The cache file {path} has layout version {version}, written by a newer rag-qa-arena "
                           f"(this one reads up to {SCHEMA_VERSION}): upgrade rag-qa-arena, or choose another cache "
                           f"folder with --cache-dir / cache_dir= or ${CACHE_ENV}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:
            conn.execute(SCHEMA)
            conn.execute(CLAIMS_SCHEMA)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(completions)")}
            if "original_chars" not in columns:
                conn.execute("ALTER TABLE completions ADD COLUMN original_chars INTEGER")
            if "system_folded" not in columns:
                conn.execute("ALTER TABLE completions ADD COLUMN system_folded INTEGER NOT NULL DEFAULT 0")
            _move_original_chars(conn)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def _move_original_chars(conn: sqlite3.Connection) -> None:
    """Version 0 kept a cut reply's full length in the ``usage`` JSON: move it to its column."""
    rows = conn.execute("SELECT key, usage FROM completions WHERE usage LIKE ?", (f'%"{_ORIGINAL_CHARS}"%',)).fetchall()
    for key, usage in rows:
        usage, original = split_usage(usage)
        if original is not None:
            conn.execute("UPDATE completions SET usage = ?, original_chars = ? WHERE key = ?",
                         (None if usage is None else canonical_json(usage), original, key))


def split_usage(text: str | None) -> tuple[dict | None, int | None]:
    """``(usage, original_chars)`` of a ``usage`` JSON text that may hold ``original_chars``."""
    usage = None if text is None else json.loads(text)
    if not isinstance(usage, dict) or _ORIGINAL_CHARS not in usage:
        return usage, None
    original = usage.pop(_ORIGINAL_CHARS)
    return usage or None, original if isinstance(original, int) and not isinstance(original, bool) else None


def set_wal(conn: sqlite3.Connection, patience: float = 60.0) -> None:
    """WAL mode; SQLite says "locked" at once (no busy handler) while another process sets up a new file."""
    ends = time.monotonic() + patience
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > ends:
                raise
            time.sleep(0.05 + 0.05 * random.random())
