"""Request files written as the requests come: lines go to the current file of a folder, a new file starting
whenever the next line would pass a per-file limit (requests, bytes), so a writer holds one line at a time;
and a set of the request ids seen so far kept in SQLite on disk, so that removing duplicates holds no more
memory for ten million ids than for ten."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError

__all__ = ["EXPORT_MAX_BYTES", "FileLimits", "SeenIds", "SplitWriter", "check_part", "part_of", "replaced_by"]

#: The largest input file of OpenAI's Batch API: "up to 200 MB" (read as 10^6 bytes: the smaller reading).
EXPORT_MAX_BYTES = 200_000_000
_MAX_REQUESTS = 50_000  # per input file (OpenAI's Batch API); batch._files.MAX_REQUESTS is the same number


@dataclass(frozen=True, kw_only=True)
class FileLimits:
    """How request files are split: at least ``shards`` files per folder (lines dealt in turn, so they are within
    one request of each other), and a new file whenever the next line would pass ``max_requests`` lines or
    ``max_bytes`` bytes (defaults: the OpenAI Batch API's per-file limits, 50,000 requests and 200 MB).

    >>> FileLimits(max_requests=7).max_bytes
    200000000
    """

    shards: int = 1
    max_requests: int = _MAX_REQUESTS
    max_bytes: int = EXPORT_MAX_BYTES

    def __post_init__(self) -> None:
        for name in ("shards", "max_requests", "max_bytes"):
            check_int(name, getattr(self, name), minimum=1)


class SplitWriter:
    """Lines into ``{prefix}NNNNN.jsonl`` files under ``folder``, a new file whenever the next line would pass
    ``max_requests`` lines or ``max_bytes`` bytes; only the open file's handle is held. :meth:`close` returns one
    entry per file: ``name``, ``n_requests``, ``bytes``, ``sha256`` and ``first_custom_id``.

    >>> import tempfile
    >>> from pathlib import Path
    >>> writer = SplitWriter(Path(tempfile.mkdtemp()), prefix="batch-", max_requests=2, max_bytes=100)
    >>> for k in range(3):
    ...     writer.add(f"k{k}", b'{"custom_id": "k%d"}\\n' % k)
    >>> [(f["name"], f["n_requests"]) for f in writer.close()]
    [('batch-00000.jsonl', 2), ('batch-00001.jsonl', 1)]
    """

    def __init__(self, folder: Path, *, prefix: str, max_requests: int, max_bytes: int) -> None:
        self.folder, self.prefix = Path(folder), prefix
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.files: list[dict] = []
        self._current: dict | None = None
        self._handle = None

    def add(self, custom_id: str, line: bytes) -> None:
        """Write one line (its newline included); a line over ``max_bytes`` on its own is refused."""
        if len(line) > self.max_bytes:
            raise RagQaArenaError(f"request {custom_id!r} is {len(line):,} bytes, over the {self.max_bytes:,}-byte "
                                  "file limit on its own: shorten its prompt, raise the limit, or send it online")
        current = self._current
        if current is None or current["n_requests"] + 1 > self.max_requests or \
                current["bytes"] + len(line) > self.max_bytes:
            self._close_file()
            current = self._current = {"name": f"{self.prefix}{len(self.files):05d}.jsonl", "n_requests": 0,
                                       "bytes": 0, "sha256": hashlib.sha256(), "first_custom_id": custom_id}
            self.files.append(current)
            self._handle = open(self.folder / current["name"], "wb")
        self._handle.write(line)
        current["sha256"].update(line)
        current["n_requests"] += 1
        current["bytes"] += len(line)

    def _close_file(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def close(self) -> list[dict]:
        """Close the open file; the entries of every file written (sha256 as hex)."""
        self._close_file()
        for entry in self.files:
            if not isinstance(entry["sha256"], str):
                entry["sha256"] = entry["sha256"].hexdigest()
        return self.files


class SeenIds:
    """A set of request ids in a temporary SQLite file (under ``folder``; removed on :meth:`close`): memory stays
    at SQLite's page cache however many ids are added. :meth:`add` says whether an id is new.

    >>> import tempfile
    >>> seen = SeenIds(tempfile.mkdtemp())
    >>> seen.add("a"), seen.add("b"), seen.add("a")
    (True, True, False)
    >>> seen.close()
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        handle, name = tempfile.mkstemp(prefix=".seen-ids-", suffix=".sqlite", dir=folder)
        os.close(handle)
        self._path = Path(name)
        self._db = sqlite3.connect(name, isolation_level=None)
        self._db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000;"
                               "CREATE TABLE seen (id TEXT PRIMARY KEY) WITHOUT ROWID; BEGIN;")
        self._pending = 0

    def add(self, custom_id: str) -> bool:
        cursor = self._db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (custom_id,))
        self._pending += 1
        if self._pending >= 100_000:  # commit now and then: the journal-less transaction stays small
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")
            self._pending = 0
        return cursor.rowcount == 1

    def close(self) -> None:
        self._db.close()
        self._path.unlink(missing_ok=True)


def check_part(part) -> tuple[int, int]:
    """``(k, n)`` of ``part`` (k counted from 0), ``(0, 1)`` for None; a one-line error for anything else."""
    if part is None:
        return 0, 1
    if not (isinstance(part, tuple) and len(part) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                               for v in part) and 0 <= part[0] < part[1]):
        raise RagQaArenaError(f"part={part!r}: give (k, n) with 0 <= k < n, e.g. (0, 4) for the first of 4 parts")
    return part


_PART = re.compile(r"\.part-(\d{5})-of-(\d{5})\.jsonl?$")


def part_of(name: str) -> tuple[int, int] | None:
    """(k, n) of a part's file name (shard or manifest), None for a whole export's."""
    found = _PART.search(name)
    return (int(found.group(1)), int(found.group(2))) if found else None


def replaced_by(name: str, part: tuple[int, int] | None) -> bool:
    """Whether an export of ``part`` replaces the file ``name`` an earlier export left: a whole export replaces
    everything; a part replaces the whole export's files, its own, and those of another part count."""
    theirs = part_of(name)
    return part is None or theirs is None or theirs[1] != part[1] or theirs[0] == part[0]
