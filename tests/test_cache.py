"""The SQLite completion cache: keys, validity rules, WAL, two processes at once, no secrets."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time

import pytest

from metric_arena import RunConfig, judge_pairs
from metric_arena.llm import ChatRequest, Completion
from metric_arena.llm import CompletionCache, cache_key
from metric_arena.llm._cache import default_cache_dir
from tests.openai_server import OpenAIServer
from metric_arena.judge import JudgeInputs

IDENTITY = {"backend": "openai", "model": "gpt-4o", "url": "https://api.openai.com:443/v1"}
REQUEST = ChatRequest([{"role": "system", "content": "judge"}, {"role": "user", "content": "pair"}])


def test_key_depends_on_everything_that_changes_the_answer():
    base = cache_key(IDENTITY, REQUEST)
    assert len(base) == 64 and base == cache_key(dict(IDENTITY), ChatRequest(list(REQUEST.messages)))
    variants = [
        cache_key({**IDENTITY, "model": "gpt-4o-mini"}, REQUEST),
        cache_key({**IDENTITY, "url": "http://localhost:80/v1"}, REQUEST),
        cache_key({**IDENTITY, "url": "https://api.openai.com:8443/v1"}, REQUEST),
        cache_key({**IDENTITY, "backend": "hf"}, REQUEST),
        cache_key(IDENTITY, ChatRequest(REQUEST.messages, max_tokens=128)),
        cache_key(IDENTITY, ChatRequest(REQUEST.messages, temperature=0.7)),
        cache_key(IDENTITY, ChatRequest(REQUEST.messages, top_p=0.9)),
        cache_key(IDENTITY, ChatRequest([REQUEST.messages[0], {"role": "user", "content": "pair "}])),
        cache_key(IDENTITY, REQUEST, attempt=1),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_put_get_and_validity_rules(tmp_path):
    cache = CompletionCache(tmp_path)
    key = cache_key(IDENTITY, REQUEST)
    assert cache.get(key) is None and key not in cache
    cache.put(key, Completion("garbage", "stop"), valid=False, backend="openai:gpt-4o")
    assert cache.get(key).valid is False and key not in cache  # an invalid reply is no answer
    cache.put(key, Completion("<rating>1</rating>", "stop", {"prompt_tokens": 5}), valid=True)
    entry = cache.get(key)
    assert entry.valid and entry.text == "<rating>1</rating>" and entry.usage == {"prompt_tokens": 5}
    cache.put(key, Completion("later garbage"), valid=False)
    assert cache.get(key).text == "<rating>1</rating>"  # a valid answer is never replaced by an invalid one
    assert len(cache) == 1 and cache.count(valid=True) == 1
    assert cache.get_many([key, "missing", key]) == {key: entry}
    cache.close()
    reopened = CompletionCache(tmp_path / "completions.sqlite")
    assert reopened.get(key) == entry
    reopened.close()


def test_wal_mode(tmp_path):
    CompletionCache(tmp_path).close()
    with sqlite3.connect(tmp_path / "completions.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_default_cache_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_QA_ARENA_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("RAG_QA_ARENA_CACHE")
    assert default_cache_dir().parts[-2:] == (".cache", "rag_qa_arena")


def test_corrupt_cache_file_gives_a_clear_error(tmp_path):
    (tmp_path / "completions.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ValueError, match="not a usable SQLite database"):
        CompletionCache(tmp_path)


def _writer(path: str, offset: int, n: int) -> None:
    cache = CompletionCache(path)
    for i in range(offset, offset + n):
        request = ChatRequest([{"role": "user", "content": f"pair {i}"}])
        cache.put(cache_key(IDENTITY, request), Completion(f"<rating>{i % 3}</rating>"), valid=True)
        cache.get(cache_key(IDENTITY, ChatRequest([{"role": "user", "content": f"pair {i - 1}"}])))
    cache.close()


def test_two_processes_share_one_cache(tmp_path):
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_writer, args=(str(tmp_path), k * 300, 300)) for k in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(240)  # spawned interpreters start slowly on a loaded 2-core machine
        assert process.exitcode == 0
    cache = CompletionCache(tmp_path)
    assert len(cache) == 600 and cache.count(valid=True) == 600
    with sqlite3.connect(tmp_path / "completions.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cache.close()


def test_api_key_never_reaches_the_cache(tmp_path):
    key = "sk-live-VERYSECRETKEY42"
    with OpenAIServer() as server:
        judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"]), judge="openai:m",
                    run=RunConfig(base_url=server.base_url, api_key=key, cache_dir=tmp_path))
    with sqlite3.connect(tmp_path / "completions.sqlite") as conn:
        conn.execute("PRAGMA wal_checkpoint(FULL)")
        dump = "\n".join(conn.iterdump())
    assert "openai:m" in dump and key not in dump
    for path in tmp_path.iterdir():
        assert key.encode() not in path.read_bytes()


def _claims(cache: CompletionCache) -> list[str]:
    with sqlite3.connect(cache.path) as conn:
        return sorted(key for (key,) in conn.execute("SELECT key FROM claims"))


def test_a_stored_answer_drops_its_claim_at_once_when_invalid_and_once_the_calls_are_drained_when_valid(tmp_path):
    import asyncio

    cache = CompletionCache(tmp_path)
    keys = [cache_key(IDENTITY, ChatRequest([{"role": "user", "content": f"pair {i}"}])) for i in range(3)]
    for key in keys:
        assert cache.claim(key, "me", 60.0)
    cache.store(keys[0], Completion("no rating"), valid=False, owner="me")
    assert _claims(cache) == sorted(keys[1:])  # invalid: a run waiting for it takes it now

    async def store_valid() -> None:
        await asyncio.gather(*(cache.off_loop(cache.store, key, Completion("<rating>1</rating>"), valid=True,
                                              owner="me") for key in keys[1:]))

    asyncio.run(store_valid())
    ends = time.monotonic() + 10  # (a hang guard: the thread drops them once idle, at once)
    while _claims(cache) and time.monotonic() < ends:
        time.sleep(0.01)
    assert _claims(cache) == []
    assert cache.get(keys[1]).valid and not cache.get(keys[0]).valid
    assert cache.claim(keys[2], "me", 60.0)
    cache.store(keys[2], Completion("<rating>2</rating>"), valid=True, owner="me")  # not through the thread
    cache.close()  # drops what is left
    assert _claims(CompletionCache(tmp_path)) == []


def test_claims_on_answered_keys_are_dropped_when_too_many_are_kept_however_busy_the_thread(tmp_path):
    from metric_arena.llm._cache import STORED_CLAIMS_KEPT

    cache = CompletionCache(tmp_path)
    keys = [cache_key(IDENTITY, ChatRequest([{"role": "user", "content": f"pair {i}"}]))
            for i in range(STORED_CLAIMS_KEPT + 1)]
    for key in keys:
        assert cache.claim(key, "me", 60.0)
    for key in keys[:-1]:
        cache.store(key, Completion("<rating>1</rating>"), valid=True, owner="me")
    assert len(_claims(cache)) == 1
    cache.close()


def test_calls_made_while_the_thread_is_busy_are_written_in_one_transaction_each_outcome_to_its_caller(tmp_path):
    import asyncio

    cache = CompletionCache(tmp_path / "c")
    statements: list[str] = []
    cache._conn.set_trace_callback(statements.append)
    answer = Completion("<rating>1</rating>", finish_reason="stop")

    async def run() -> list:
        stores = [cache.off_loop(cache.store, f"k{i}", answer, valid=True, owner="me") for i in range(40)]
        stores.insert(20, cache.off_loop(lambda: 1 / 0))  # one call's error is its own
        return await asyncio.gather(*stores, return_exceptions=True)

    outcomes = asyncio.run(run())
    assert [type(o) for o in outcomes] == [type(None)] * 20 + [ZeroDivisionError] + [type(None)] * 20
    commits = sum(s == "COMMIT" for s in statements)
    assert 1 <= commits <= 5 and len(cache) == 40, commits  # 40 answers, a few commits (not 40)
    cache.close()


def test_an_error_that_undoes_the_transaction_fails_the_calls_written_before_it(tmp_path):
    import asyncio

    cache = CompletionCache(tmp_path / "c")
    answer = Completion("<rating>1</rating>", finish_reason="stop")

    def undone():  # what a full disk does to the transaction the calls share
        cache._conn.execute("ROLLBACK")
        raise sqlite3.OperationalError("database or disk is full")

    async def run() -> list:
        first = asyncio.ensure_future(cache.off_loop(time.sleep, 0.2))  # the thread is busy: the next ones queue up
        await asyncio.sleep(0.05)
        calls = [cache.off_loop(cache.put, "a", answer, valid=True), cache.off_loop(undone),
                 cache.off_loop(cache.put, "b", answer, valid=True)]
        return [await first, *await asyncio.gather(*calls, return_exceptions=True)]

    outcomes = asyncio.run(run())
    assert outcomes[0] is None and isinstance(outcomes[1], sqlite3.OperationalError)  # "a" went with the rollback
    assert isinstance(outcomes[2], sqlite3.OperationalError) and outcomes[3] is None
    assert cache.get("a") is None and cache.get("b") is not None  # what is reported stored is stored
    cache.close()


def test_the_claims_of_answers_stored_together_are_dropped_in_their_commit(tmp_path):
    import asyncio

    cache = CompletionCache(tmp_path / "c")
    keys = [f"k{i}" for i in range(20)]
    for key in keys:
        assert cache.claim(key, "me", 60.0)
    statements: list[str] = []
    cache._conn.set_trace_callback(statements.append)
    answer = Completion("<rating>1</rating>", finish_reason="stop")

    async def run() -> None:
        await asyncio.gather(*(cache.off_loop(cache.store, key, answer, valid=True, owner="me") for key in keys))

    asyncio.run(run())
    assert _claims(cache) == []
    first_commit = statements.index("COMMIT")
    assert any(s.startswith("DELETE FROM claims") for s in statements[:first_commit])  # before the commit, in it
    cache.close()
