"""The cache's schema version and its migration, its columns, and cache I/O off the event loop."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time

import pytest

from metric_arena.llm import ChatRequest, Completion
from metric_arena.llm._cache import SCHEMA_VERSION, CacheCorrupt, CompletionCache, cache_key
from metric_arena.llm._runner import Runner
from metric_arena.llm._types import Backend

# The layout every cache file had before it carried a version (user_version 0).
OLD_SCHEMA = """
CREATE TABLE completions (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT,
    usage TEXT,
    valid INTEGER NOT NULL,
    backend TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL);
"""


def old_cache(path):
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    rows = [("plain", "<rating>1</rating>", "stop", '{"prompt_tokens":5}', 1),
            ("cut", "x" * 10, "length", '{"original_chars":99999,"prompt_tokens":7}', 0),
            ("cut-no-usage", "y" * 10, "stop", '{"original_chars":12345}', 1),
            ("no-usage", "z", None, None, 1)]
    conn.executemany("INSERT INTO completions VALUES (?, ?, ?, ?, ?, 'openai:m', 1.0)", rows)
    conn.commit()
    conn.close()
    return path


def test_an_old_cache_file_is_migrated_and_keeps_its_entries(tmp_path):
    path = old_cache(tmp_path / "completions.sqlite")
    with CompletionCache(path) as cache:
        plain, cut, cut_only, bare = (cache.get(k) for k in ("plain", "cut", "cut-no-usage", "no-usage"))
        assert (plain.text, plain.usage, plain.original_chars, plain.valid) == ("<rating>1</rating>", {"prompt_tokens": 5}, None, True)
        assert (cut.usage, cut.original_chars, cut.valid, cut.finish_reason) == ({"prompt_tokens": 7}, 99999, False, "length")
        assert (cut_only.usage, cut_only.original_chars) == (None, 12345)
        assert (bare.usage, bare.original_chars, bare.system_folded) == (None, None, False)
        assert cache.get_many(["cut", "plain"])["cut"] == cut
        cache.put("new", Completion("w" * 4, original_chars=50_000, system_folded=True), valid=True)
        assert cache.get("new").completion() == Completion("w" * 4, original_chars=50_000, system_folded=True)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    stored = {k: (u, o, f) for k, u, o, f in raw.execute("SELECT key, usage, original_chars, system_folded FROM completions")}
    assert stored["cut"] == ('{"prompt_tokens":7}', 99999, 0)  # moved out of the usage JSON into its column
    assert stored["cut-no-usage"] == (None, 12345, 0)
    assert stored["new"] == (None, 50_000, 1)
    raw.close()
    with CompletionCache(path) as again:  # opening a migrated file changes nothing
        assert again.get("cut") == cut and len(again) == 5


def test_a_row_an_older_version_writes_into_a_migrated_file_is_still_read(tmp_path):
    path = tmp_path / "completions.sqlite"
    CompletionCache(path).close()
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO completions (key, text, finish_reason, usage, valid, backend, created_at) "
                "VALUES ('k', 'cut', 'stop', '{\"original_chars\":777}', 1, 'openai:m', 1.0)")
    raw.commit()
    raw.close()
    with CompletionCache(path) as cache:
        entry = cache.get("k")
    assert (entry.original_chars, entry.usage) == (777, None)


def test_the_full_length_and_the_fold_have_columns_of_their_own(tmp_path):
    path = tmp_path / "completions.sqlite"
    key = cache_key({"backend": "hf", "model": "m"}, ChatRequest([{"role": "user", "content": "hi"}]))
    with CompletionCache(path) as cache:
        cache.put(key, Completion("a" * 8, "stop", {"completion_tokens": 3}, original_chars=40_000, system_folded=True),
                  valid=True)
        entry = cache.get(key)
    assert entry.completion() == Completion("a" * 8, "stop", {"completion_tokens": 3}, original_chars=40_000,
                                            system_folded=True)
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT usage, original_chars, system_folded FROM completions").fetchone() == (
        '{"completion_tokens":3}', 40_000, 1)
    raw.close()


def test_a_file_of_a_newer_layout_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "completions.sqlite"
    CompletionCache(path).close()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.commit()
    raw.close()
    with pytest.raises(CacheCorrupt, match=f"layout version {SCHEMA_VERSION + 1}.*upgrade rag-qa-arena"):
        CompletionCache(path)


class Echo(Backend):
    name, model, spec = "echo", "m", "echo:m"

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model}

    async def complete(self, request: ChatRequest) -> Completion:
        return Completion("<rating>2</rating>", "stop")


def test_a_locked_cache_does_not_block_the_event_loop(tmp_path):
    """Another connection holds the cache's write lock: the runner waits for it on the cache's thread
    while a ticker task on the loop keeps running. The ticker itself releases the lock after 20 ticks,
    so a loop blocked by the cache would never tick and never release (the fallback release after 120 s
    is a hang guard, and the test then fails): order and counts decide, not the machine's speed."""
    path = tmp_path / "completions.sqlite"
    cache = CompletionCache(path)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock: claims and puts wait for it
    released = threading.Event()
    release_once = threading.Lock()
    by_whom = []

    def release(who: str) -> None:
        with release_once:
            if not released.is_set():
                holder.execute("COMMIT")
                by_whom.append(who)
                released.set()

    def fallback():
        if not released.wait(120):
            release("fallback")

    async def main():
        ticks_while_waiting = 0
        call = asyncio.ensure_future(Runner(cache, max_concurrency=4).run_one(
            Echo(), ChatRequest([{"role": "user", "content": "hello"}])))
        while not released.is_set():
            await asyncio.sleep(0.01)
            if not call.done():
                ticks_while_waiting += 1
            if ticks_while_waiting >= 20:
                done_before = call.done()
                release("ticker")
        return await call, ticks_while_waiting, done_before

    threading.Thread(target=fallback, daemon=True).start()
    try:
        result, ticks, done_before = asyncio.run(main())
    finally:
        release("cleanup")
        holder.close()
    assert by_whom == ["ticker"], by_whom  # the loop kept running while the cache waited for the lock
    assert not done_before  # the call was still waiting for the lock when it was released
    assert ticks >= 20
    assert result.valid and result.text == "<rating>2</rating>" and not result.cached
    assert cache.get(cache_key(Echo().identity(), ChatRequest([{"role": "user", "content": "hello"}]))).valid
    cache.close()


def test_an_error_of_a_call_whose_task_was_cancelled_is_not_logged(tmp_path, caplog):
    """A fatal error cancels the other requests; their cache calls still finish on the cache's
    thread, and an error there is not printed as "Future exception was never retrieved"."""
    import gc

    gc.collect()  # what earlier tests left for the collector is not this test's
    caplog.clear()
    cache = CompletionCache(tmp_path)

    def failing():
        time.sleep(0.2)
        raise sqlite3.DatabaseError("database disk image is malformed")

    async def main():
        task = asyncio.create_task(cache.off_loop(failing))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.4)

    asyncio.run(main())
    gc.collect()
    cache.close()
    assert "never retrieved" not in caplog.text


class Gated(Echo):
    """Echo, each reply held until ``gate`` is set."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def complete(self, request: ChatRequest) -> Completion:
        await self.gate.wait()
        return await super().complete(request)


@pytest.mark.parametrize("ttl, claims_of_the_second", [(3600.0, 1), (0.2, 2)])
def test_a_claim_made_before_the_wait_for_a_slot_is_made_again_when_half_its_life_went_by(
        tmp_path, ttl, claims_of_the_second):
    """A fresh request claims its key with its cache read, before it waits for a slot; when the wait took
    over half the claim's life, it claims again before sending (else another process could take the
    lapsed claim and send the same request). Order decides, not speed: the second request waits 0.3 s
    for the one slot, more than half a 0.2 s life and far less than half an hour's."""
    cache = CompletionCache(tmp_path)
    claims: list[str] = []
    claim = cache.claim

    def counted(key, owner, life):
        claims.append(key)
        return claim(key, owner, life)

    cache.claim = counted
    requests = [ChatRequest([{"role": "user", "content": text}]) for text in ("first", "second")]

    async def main():
        runner, backend = Runner(cache, max_concurrency=1), Gated()
        runner._claim_ttl = lambda _backend: ttl
        first = asyncio.ensure_future(runner.run_one(backend, requests[0]))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(runner.run_one(backend, requests[1]))
        await asyncio.sleep(0.3)  # the second one claimed and waits for the slot the first one holds
        backend.gate.set()
        return await first, await second

    results = asyncio.run(main())
    assert all(r.valid for r in results)
    second_key = cache_key(Echo().identity(), requests[1])
    assert claims.count(second_key) == claims_of_the_second, claims
    cache.close()
