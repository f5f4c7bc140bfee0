"""One judge loop: judge_pairs, the reward, the callback's judge and the Inspect scorer all judge a request
through ``metric_arena.judge.judge_one``, so the re-ask rule written once (``REASKS``) rules all four."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from metric_arena import JudgeConfig, RunConfig
from metric_arena.judge import REASKS, JudgeInputs, judge_pairs
from metric_arena.llm import RetryPolicy
from tests.openai_server import OpenAIServer

FAST_RETRY = RetryPolicy(max_retries=0, initial=0.0, multiplier=1.0, jitter=0.0)
NO_RATING = "I cannot decide."


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(lambda body, attempt: NO_RATING) as running:
        yield running


def _run(server, tmp_path) -> RunConfig:
    return RunConfig(base_url=server.base_url, api_key="sk-local", retry=FAST_RETRY, use_cache=False,
                     cache_dir=tmp_path / "cache")


def _sent(server, action) -> int:
    before = len(server.requests)
    action()
    return len(server.requests) - before


def _four_paths(server, tmp_path):
    """How many requests one unrateable pair costs along each path."""
    from metric_arena.train import ArenaCallback, reward_function
    from rag_qa_arena.inspect_tasks import _scorer

    judge, run = JudgeConfig("openai:judge", order="paper"), _run(server, tmp_path)
    pair = (["An answer."], ["The reference."], ["two words"])
    inputs = JudgeInputs(predictions=pair[0], references=pair[1], questions=pair[2], ids=["q0"])
    counts = {"judge_pairs": _sent(server, lambda: judge_pairs(inputs, judge=judge, run=run))}
    reward = reward_function(judge=judge, run=run)
    counts["reward"] = _sent(server, lambda: reward(["p"], ["An answer."], question=["two words"],
                                                    answer=["The reference."], qid=["q0"]))
    callback = ArenaCallback(judge=judge, run=run)
    counts["callback"] = _sent(server, lambda: callback.judge(*pair, ids=["q0"]))

    asked = []

    class Grader:  # an Inspect model that answers as the server does
        async def generate(self, messages, config):
            asked.append(messages)
            return SimpleNamespace(completion=NO_RATING)

    state = SimpleNamespace(metadata={"question": "two words"}, input_text="two words", sample_id="q0",
                            output=SimpleNamespace(completion="An answer."))
    original = _scorer.grader_model
    _scorer.grader_model = lambda judge: Grader()
    try:
        score = _scorer.arena_judge(judge="unused")
        result = asyncio.run(score(state, SimpleNamespace(text="The reference.")))
        counts["inspect"] = len(asked)
        assert result.answer == "failed" and result.metadata["attempts"] == len(asked)
    finally:
        _scorer.grader_model = original
    return counts


def test_the_re_ask_rule_written_once_rules_all_four_paths(server, tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai")
    pytest.importorskip("transformers")
    assert _four_paths(server, tmp_path) == dict.fromkeys(("judge_pairs", "reward", "callback", "inspect"), 2)
    monkeypatch.setitem(REASKS, "strict", 3)
    assert _four_paths(server, tmp_path) == dict.fromkeys(("judge_pairs", "reward", "callback", "inspect"), 4)
