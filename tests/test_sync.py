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
