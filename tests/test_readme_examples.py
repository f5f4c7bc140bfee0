"""The README's Python examples run as written: each block is read from README.md and executed against
a local OpenAI-compatible judge server (``lfrqa.load`` cut to a few rows so it stays quick)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lfrqa
from tests.openai_server import OpenAIServer

README = Path(__file__).resolve().parents[1] / "README.md"


def python_block(after_heading: str) -> str:
    """The first ```python block under the README heading ``after_heading``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(after_heading)
    match = re.search(r"```python\n(.*?)```", text[start:], re.DOTALL)
    assert match, f"no python block under {after_heading!r}"
    return match.group(1)


@pytest.fixture
def judge_env(monkeypatch, tmp_path, lfrqa_data_dir):
    real_load = lfrqa.load

    def few_rows(domain, split="test", **kwargs):
        return real_load(domain, split=split, data_dir=str(lfrqa_data_dir)).select(range(6))

    monkeypatch.setattr(lfrqa, "load", few_rows)
    monkeypatch.setenv("HOME", str(tmp_path))  # the example's cache_dir="~/.cache/..." lands here
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-example")
        yield server


def test_the_in_python_example_runs(judge_env, tmp_path):
    pytest.importorskip("evaluate")
    code = python_block("### In Python")
    namespace = {"my_answers": [f"answer {i}" for i in range(6)]}
    exec(compile(code, "README.md: In Python", "exec"), namespace)  # noqa: S102 - our own README
    res = namespace["res"]
    assert res["n"] == 6 and res["n_failed"] == 0 and 0 <= res["win_rate"] <= 1
    assert set(res["outcomes"]) == set(namespace["ds"]["qid"])
    assert len(judge_env.requests) == 6  # each pair judged once, through the configured run
    assert (tmp_path / ".cache" / "rag_qa_arena").is_dir()  # RunConfig(cache_dir=...) was used


def test_the_reward_example_builds_a_reward(judge_env):
    pytest.importorskip("trl")
    code = python_block("**As an RL reward.**")
    reward_lines = "\n".join(line for line in code.splitlines() if line.startswith(("reward =", "# ")))
    namespace = {"metric_arena": __import__("metric_arena")}
    exec(compile(reward_lines, "README.md: reward", "exec"), namespace)  # noqa: S102 - our own README
    reward = namespace["reward"]
    rewards = reward(prompts=["q"], completions=["Paris."], question=["Capital of France?"],
                     answer=["Paris is the capital."], qid=["q1"])
    assert rewards in ([1.0], [0.0]) and reward.judge.run.max_concurrency == 64
