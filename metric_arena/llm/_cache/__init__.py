"""A persistent cache of LLM completions in SQLite, keyed by what determines the answer.

Key = sha256 of the canonical JSON of (backend identity, decoding parameters, exact messages,
attempt). The backend identity is the backend's name, model and, for HTTP backends, the server's
address (scheme, host, port and path; never a key or a URL credential) or its endpoint name.
``attempt`` (1 for the re-ask after an invalid reply) is in the key only, never in the request.

Every completion is stored with a ``valid`` flag set by whoever asked (the judge: "the reply
holds exactly one valid rating"). Only valid entries count as answers; an invalid one merely
records that the first attempt failed, so a resumed run goes straight to the re-ask. A valid
entry is never overwritten by an invalid one.

Concurrent runs share work in flight: before a request is sent its key is claimed
(:meth:`CompletionCache.claim`); a run that needs the same key while another live process holds
the claim waits for that answer in the cache instead of paying for it again. A claim lapses when
its owner's process ends (even by ``kill -9``) or after its time-to-live.

SQLite runs in WAL mode (a busy timeout to share a file); async code calls the cache through
:meth:`CompletionCache.off_loop` (its own thread): never blocking the loop. The calls made while that thread
is busy run in one transaction: one commit for many writes.

Schema version 1 (``PRAGMA user_version``) has columns for a cut reply's full length
(``original_chars``) and the chat-template fallback (``system_folded``); a version-0 file is migrated in
place when opened, in one transaction. ``backend`` records who answered: a spec, or for an imported
answer :func:`import_source` (its file and the model the reply named), read back into the completion.
A damaged file raises :class:`CacheCorrupt`; a full disk or a read-only folder an ``OSError``.

>>> import tempfile
>>> from metric_arena.llm._specs import ChatRequest, Completion
>>> cache = CompletionCache(tempfile.mkdtemp())
>>> key = cache_key({"backend": "openai", "model": "m"}, ChatRequest([{"role": "user", "content": "hi"}]))
>>> cache.put(key, Completion("<rating>1</rating>"), valid=True)
>>> cache.get(key).text
'<rating>1</rating>'
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from lfrqa.kernel import make_folder, process_identity
from metric_arena.llm._cache._layout import CACHE_ENV, SCHEMA_VERSION, CacheCorrupt, migrate, set_wal, split_usage
from metric_arena.llm._tasks import SerialThread, call_outcome
from metric_arena.llm._types import ChatRequest, Completion, cache_keys, canonical_json, imported_fields

__all__ = ["CACHE_ENV", "SCHEMA_VERSION", "CacheCorrupt", "CachedCompletion", "CompletionCache", "cache_key",
           "default_cache_dir"]

CACHE_FILE = "completions.sqlite"
_SQLITE_MAX_VARS = 900
#: The most claims on answered keys kept by :meth:`CompletionCache.store` before they are dropped together.
STORED_CLAIMS_KEPT = 256
_RETURNING = " RETURNING owner" if sqlite3.sqlite_version_info >= (3, 35) else ""
_COLUMNS = "text, finish_reason, usage, valid, original_chars, system_folded, backend"


def claim_owner() -> str:
    """A new owner name for :meth:`CompletionCache.claim`: this host, this process (its pid and its
    start: boot id and start time, so that a later process given the same pid is never taken for
    it), a random token."""
    return f"{socket.gethostname()}:{os.getpid()}:{process_identity(os.getpid()) or ''}:{uuid.uuid4().hex[:12]}"


def _owner_alive(owner: str) -> bool:
    """Whether the process that wrote claim ``owner`` still runs: on another host, trust the expiry;
    here, the pid must be alive, not a zombie, and (for owners that record it) the same process,
    started at the same time (a pid reused after ``kill -9`` or a container restart is not)."""
    parts = owner.split(":")
    host, pid = parts[0], parts[1] if len(parts) > 1 else ""
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's process: trust the expiry
    recorded = parts[2] if len(parts) == 4 else ""
    current = process_identity(int(pid))
    if current is None:
        return False
    if recorded and current:
        return current == recorded
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def default_cache_dir() -> Path:
    """``$RAG_QA_ARENA_CACHE``, else ``~/.cache/rag_qa_arena``."""
    value = os.environ.get(CACHE_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "rag_qa_arena"


def cache_key(identity: dict, request: ChatRequest, attempt: int = 0) -> str:
    """sha256 hex digest of (backend identity, decoding parameters, messages, attempt)."""
    return cache_keys(identity, request, [attempt])[0]


@dataclass(frozen=True)
class CachedCompletion:
    text: str
    finish_reason: str | None
    usage: dict | None
    valid: bool
    original_chars: int | None = None
    system_folded: bool = False
    source: str | None = None  # the backend column

    def completion(self) -> Completion:
        imported = imported_fields(self.source)
        return Completion(text=self.text, finish_reason=self.finish_reason, usage=self.usage,
                          original_chars=self.original_chars, system_folded=self.system_folded,
                          model=imported.get("model"), imported_from=imported.get("file"))


class CompletionCache:
    """SQLite completion cache in ``cache_dir`` (default :func:`default_cache_dir`).

    ``path`` may also be a ``.sqlite`` file. Safe to share between processes and threads.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        path = Path(path).expanduser() if path is not None else default_cache_dir()
        if path.suffix not in (".sqlite", ".db"):
            path = path / CACHE_FILE
        try:
            make_folder(path.parent, target=path)
        except OSError as error:
            raise PermissionError(error.errno, f"Cannot create the cache folder {path.parent}: {error.strerror}. Choose "
                                  f"another with cache_dir= / --cache-dir or ${CACHE_ENV}", str(path.parent)) from None
        self.path = path
        self._lock = threading.RLock()  # (held by a transaction of calls made together, which take it again)
        self._thread = SerialThread("rag-qa-arena-cache", idle=self._release_stored, together=self._together)
        self._stored_claims: list[tuple[str, str]] = []  # (key, owner): claims on keys just answered (store)
        with _sqlite_errors(path):
            self._conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
            try:
                set_wal(self._conn)
                self._conn.execute("PRAGMA synchronous=NORMAL")
                migrate(self._conn, path)
            except BaseException:
                self._conn.close()
                raise

    # -- off the event loop --------------------------------------------------------------------
    async def off_loop(self, fn, /, *args, **kwargs):
        """``fn(*args, **kwargs)`` (e.g. ``cache.get``) run on this cache's worker thread, awaited:
        async code calls the cache this way, so a write waiting for another process's lock never
        blocks the event loop. Calls run one at a time in the order made; a call already made
        still runs when the awaiting task is cancelled (a decided write is stored, a claim released).
        Calls made while the thread is busy are drained together (:class:`SerialThread`)."""
        return await self._thread.call(functools.partial(fn, *args, **kwargs) if args or kwargs else fn)

    def _together(self, calls: list) -> list[tuple[bool, object]]:
        """``calls`` (this cache's methods, made through :meth:`off_loop` while its thread was busy) in one
        transaction: one commit for many writes (a commit costs more than its statements). Each call's
        outcome; an error that undoes the transaction (a full disk) fails the calls before it too, their writes
        having gone with it, and an error of the commit fails them all. A transaction that cannot begin (a
        read-only file): each call on its own, with its own error."""
        with self._lock:
            outcomes: list[tuple[bool, object]] = []
            started = self._begin()
            for fn in calls:
                outcome = call_outcome(fn)
                if started and not self._conn.in_transaction:  # undone: what was written before went with it
                    outcomes = [(False, outcome[1])] * len(outcomes)
                    started = self._begin()
                outcomes.append(outcome)
            if started:
                kept = list(self._stored_claims)
                try:
                    with _sqlite_errors(self.path):
                        self._release_stored()  # the claims of the answers stored: in the same commit
                        self._conn.execute("COMMIT")
                except Exception as error:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    outcomes, self._stored_claims = [(False, error)] * len(outcomes), kept
            return outcomes

    def _begin(self) -> bool:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            return True
        except sqlite3.Error:
            return False

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str) -> CachedCompletion | None:
        with self._lock, _sqlite_errors(self.path):
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM completions WHERE key = ?", (key,)).fetchone()
        return None if row is None else _row_to_entry(row)

    def get_many(self, keys: list[str]) -> dict[str, CachedCompletion]:
        found: dict[str, CachedCompletion] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock, _sqlite_errors(self.path):
            for start in range(0, len(unique), _SQLITE_MAX_VARS):
                chunk = unique[start : start + _SQLITE_MAX_VARS]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, {_COLUMNS} FROM completions WHERE key IN ({marks})", chunk
                ).fetchall()
                for row in rows:
                    found[row[0]] = _row_to_entry(row[1:])
        return found

    def __contains__(self, key: str) -> bool:
        return (entry := self.get(key)) is not None and entry.valid

    def __len__(self) -> int:
        return self.count()

    def count(self, *, valid: bool | None = None) -> int:
        where, values = ("", ()) if valid is None else (" WHERE valid = ?", (int(valid),))
        with self._lock, _sqlite_errors(self.path):
            return int(self._conn.execute(f"SELECT COUNT(*) FROM completions{where}", values).fetchone()[0])

    # -- writing -----------------------------------------------------------------------------
    def put(self, key: str, completion: Completion, *, valid: bool, backend: str | None = None) -> None:
        """Store a completion (one transaction). A valid entry is never replaced by an invalid one."""
        usage = None if completion.usage is None else canonical_json(completion.usage)
        original = None if completion.original_chars is None else int(completion.original_chars)
        with self._lock, _sqlite_errors(self.path):
            self._conn.execute(
                "INSERT INTO completions (key, text, finish_reason, usage, valid, backend, created_at, original_chars, "
                "system_folded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET text = excluded.text, finish_reason = excluded.finish_reason, "
                "usage = excluded.usage, valid = excluded.valid, backend = excluded.backend, "
                "created_at = excluded.created_at, original_chars = excluded.original_chars, "
                "system_folded = excluded.system_folded WHERE completions.valid = 0 OR excluded.valid = 1",
                (key, completion.text, completion.finish_reason, usage, int(bool(valid)), backend, time.time(),
                 original, int(bool(completion.system_folded))),
            )

    # -- sharing work in flight ----------------------------------------------------------------
    def claim(self, key: str, owner: str, ttl: float) -> bool:
        """Claim ``key`` for ``ttl`` seconds before sending its request (True), or learn that another
        live owner is sending it right now (False). The owner's own claim is renewed."""
        now = time.time()
        with self._lock, _sqlite_errors(self.path):
            # (RETURNING, SQLite 3.35+: the row when this owner wrote it, so the common case needs no second look)
            written = self._conn.execute(
                "INSERT INTO claims (key, owner, expires) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "owner = excluded.owner, expires = excluded.expires WHERE claims.expires < ? OR claims.owner = ?"
                + _RETURNING, (key, owner, now + ttl, now, owner)).fetchall()
            if written:
                return True
            row = self._conn.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] == owner:
                return True
            if _owner_alive(row[0]):
                return False
            # its process is gone (kill -9): take the claim over
            self._conn.execute("UPDATE claims SET owner = ?, expires = ? WHERE key = ? AND owner = ?",
                               (owner, now + ttl, key, row[0]))
            return self._conn.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()[0] == owner

    def claimed(self, key: str, owner: str) -> bool:
        """Whether another live owner holds a claim on ``key`` (a read; nothing is written)."""
        with self._lock, _sqlite_errors(self.path):
            row = self._conn.execute("SELECT owner, expires FROM claims WHERE key = ?", (key,)).fetchone()
        return row is not None and row[0] != owner and row[1] >= time.time() and _owner_alive(row[0])

    def release(self, key: str, owner: str) -> None:
        """Drop ``owner``'s claim on ``key`` (after its answer is stored, or its attempts failed)."""
        with self._lock, _sqlite_errors(self.path):
            self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    def store(self, key: str, completion: Completion, *, valid: bool, owner: str, backend: str | None = None) -> None:
        """:meth:`put` the answer to ``owner``'s claim on ``key``, then drop the claim: at once after an invalid answer
        (a run waiting for it takes it), after a valid one with those stored meanwhile: in the transaction of the
        calls made together, once the thread is idle, at :data:`STORED_CLAIMS_KEPT` or at :meth:`close` (till then it
        only sends another run to the answer stored)."""
        try:
            self.put(key, completion, valid=valid, backend=backend)
        except BaseException:
            self.release(key, owner)
            raise
        if not valid:
            return self.release(key, owner)
        with self._lock:
            self._stored_claims.append((key, owner))
            due = len(self._stored_claims) >= STORED_CLAIMS_KEPT
        if due:  # calls that never stop coming: no wait for the thread to be idle
            self._release_stored()

    def _release_stored(self) -> None:
        """Drop the claims :meth:`store` kept, up to 450 in one statement."""
        with self._lock, _sqlite_errors(self.path):
            while self._stored_claims:
                chunk = self._stored_claims[: _SQLITE_MAX_VARS // 2]
                self._conn.execute(f"DELETE FROM claims WHERE (key, owner) IN (VALUES {','.join(['(?, ?)'] * len(chunk))})",
                                   [value for claim in chunk for value in claim])
                del self._stored_claims[: len(chunk)]

    def mark_invalid(self, key: str) -> None:
        """Mark the entry under ``key`` invalid (a stored reply that fails its check now)."""
        with self._lock, _sqlite_errors(self.path):
            self._conn.execute("UPDATE completions SET valid = 0 WHERE key = ?", (key,))

    def close(self) -> None:
        """Wait for the calls made through :meth:`off_loop`, then close the connection."""
        self._thread.close()
        with contextlib.suppress(sqlite3.Error, OSError):  # (claims left lapse with this process, or their TTL)
            self._release_stored()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "CompletionCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CompletionCache({str(self.path)!r})"


_SQLITE_ERRNO = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_READONLY": errno.EROFS, "SQLITE_READONLY_DIRECTORY": errno.EROFS,
                 "SQLITE_CANTOPEN": errno.EACCES, "SQLITE_IOERR": errno.EIO}


def _os_error(error: sqlite3.OperationalError, path: Path) -> OSError | None:
    """An ``OSError`` (with errno and the cache folder) for a full, read-only or unwritable cache."""
    name = getattr(error, "sqlite_errorname", "") or ""
    code = _SQLITE_ERRNO.get(name) or next((v for k, v in _SQLITE_ERRNO.items() if name.startswith(k)), None)
    if code is None:
        text = str(error).lower()
        code = (errno.ENOSPC if "full" in text else errno.EROFS if "readonly" in text
                else errno.EACCES if "unable to open" in text else None)
    if code is None:
        return None
    return OSError(code, f"Cannot write to the cache {path}: {error} (disk full or read-only?). Free space, or "
                         f"choose another folder with cache_dir= / --cache-dir or ${CACHE_ENV}", str(path.parent))


def _corrupt(error: sqlite3.DatabaseError, path: Path) -> CacheCorrupt | None:
    """A :class:`CacheCorrupt` naming the file and the fix for a damaged or foreign file, else None."""
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error).lower()
    if not (name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text):
        return None
    return CacheCorrupt(f"The cache file {path} is damaged or not a usable SQLite database ({error}): move it away or delete it "
                        "(the run folders and answer files are kept; what they hold is asked again), or choose "
                        f"another cache folder with --cache-dir / cache_dir= or ${CACHE_ENV}")


class _sqlite_errors:
    """Turns SQLite's errors into ones naming the cache file: a damaged file into
    :class:`CacheCorrupt`, a full disk or a read-only folder into an ``OSError``."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if isinstance(error, sqlite3.OperationalError):
            failure = _os_error(error, self.path)
            if failure is not None:
                raise failure from None
        if isinstance(error, sqlite3.DatabaseError):
            failure = _corrupt(error, self.path)
            if failure is not None:
                raise failure from None
        return False


def _row_to_entry(row) -> CachedCompletion:
    text, finish_reason, usage, valid, original, folded, source = row
    usage, in_usage = split_usage(usage)  # a row an older rag-qa-arena wrote into a migrated file
    return CachedCompletion(text=text, finish_reason=finish_reason, usage=usage, valid=bool(valid),
                            original_chars=original if original is not None else in_usage, system_folded=bool(folded),
                            source=source)
