"""The one sync-over-async helper behind judge_pairs, generate_answers and run_requests."""

from __future__ import annotations

import asyncio
import threading

import pytest

from metric_arena.llm._tasks import run_sync
from metric_arena.judge import JudgeInputs


async def _where() -> tuple[int, bool]:
    await asyncio.sleep(0)
    return threading.get_ident(), True


async def _fail():
    raise KeyError("boom")


def test_plain_code_runs_in_this_thread():
    ident, ok = run_sync(_where())
    assert ok and ident == threading.get_ident()


def test_inside_a_running_loop_it_runs_in_another_thread_and_returns_or_raises():
    async def notebook_cell():
        ident, ok = run_sync(_where())  # a notebook calls the sync API with its loop running
        with pytest.raises(KeyError, match="boom"):
            run_sync(_fail())
        return ident, ok

    ident, ok = asyncio.run(notebook_cell())
    assert ok and ident != threading.get_ident()


def test_judge_pairs_works_from_a_running_loop(tmp_path):
    from metric_arena import RunConfig, judge_pairs
    from tests.openai_server import OpenAIServer

    async def cell():
        return judge_pairs(JudgeInputs(predictions=["An answer."], references=["A reference."],
                                       questions=["a question here"]), judge="openai:j",
                           run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path))

    with OpenAIServer(lambda body, attempt: "<rating>1</rating>") as server:
        result = asyncio.run(cell())
    assert result["n"] == 1 and result["verdicts"][0]["outcome"] == "loss"  # odd word count: reference shown first


def test_a_blocking_call_collects_garbage_less_often_and_puts_the_threshold_back():
    import gc

    from metric_arena.llm._tasks import YOUNG_COLLECTION_AFTER

    async def threshold() -> tuple[int, int, int]:
        await asyncio.sleep(0)
        return gc.get_threshold()

    async def nested() -> tuple[tuple[int, int, int], tuple[int, int, int]]:  # a notebook's loop, a call in it
        return run_sync(threshold()), gc.get_threshold()

    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert run_sync(threshold()) == (YOUNG_COLLECTION_AFTER, 10, 10) and gc.get_threshold() == (700, 10, 10)
        inner, outer = asyncio.run(nested())
        assert inner == (YOUNG_COLLECTION_AFTER, 10, 10) and outer == (700, 10, 10)
        with pytest.raises(KeyError):
            run_sync(_fail())
        assert gc.get_threshold() == (700, 10, 10)  # also after an error
        gc.set_threshold(50_000, 10, 10)  # the caller's own, higher threshold is kept
        assert run_sync(threshold()) == (50_000, 10, 10) and gc.get_threshold() == (50_000, 10, 10)
        gc.set_threshold(0)  # collection off: left off
        assert run_sync(threshold())[0] == 0 and gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*saved)
