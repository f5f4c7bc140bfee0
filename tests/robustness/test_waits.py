"""Waits and messages that do not mislead: "fail fast" holds against a server that never answers and
against a long Retry-After, a key no header can carry is named before anything is sent, and a --tpm
smaller than one request is refused instead of waiting for hours."""

from __future__ import annotations

import time

import pytest

from metric_arena import JudgeConfig, RateLimiter, RunConfig, judge_pairs
from metric_arena.llm import RetryPolicy, ServerUnreachable
from tests.openai_server import OpenAIServer, Reply
from tests.robustness.helpers import prediction_rows, run_cli, write_jsonl
from metric_arena.judge import JudgeInputs

#: A small window, so that the bound is seconds: the run must end by window + max(window, 5 s).
WINDOW = 1.0
POLICY = RetryPolicy(max_retries=8, initial=0.2, multiplier=1.0, jitter=0.0, fail_fast_after=WINDOW)


def _judge(server, tmp_path, **run):
    return judge_pairs(JudgeInputs(predictions=["a", "b"], references=["r", "s"], questions=["q one?", "q two?"]),
                       judge="openai:j",
                       run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "cache", retry=POLICY,
                                     timeout=120.0, **run))


def test_a_server_that_accepts_and_never_answers_ends_the_run_within_the_promised_bound(tmp_path):
    with OpenAIServer(lambda body, attempt: Reply(content="<rating>1</rating>", delay=60.0)) as server:
        with pytest.raises(ServerUnreachable, match="nothing got through"):
            _judge(server, tmp_path)
    # not the attempt's own 120 s timeout: a run that waited for it would get the reply sent after 60 s and
    # raise nothing


def test_a_long_retry_after_before_any_reply_does_not_hold_the_run_and_is_named(tmp_path):
    """The run ends at its 1 s window, not after the 120 s the server asks for. The bound checked is half
    of that wait (a run that honoured it cannot pass; a run at the window passes on a machine 30x slowed)."""
    with OpenAIServer(lambda body, attempt: Reply(status=429, headers={"Retry-After": "120"})) as server:
        started = time.monotonic()
        with pytest.raises(ServerUnreachable, match=r"answered only 429 \(rate limited\) and asks to wait 120 s"):
            _judge(server, tmp_path)
        elapsed = time.monotonic() - started
    assert elapsed < 60, elapsed


def test_a_slow_first_reply_within_the_grace_still_counts(tmp_path):
    # the reply comes past the 1 s window, well within the grace (window + 5 s)
    with OpenAIServer(lambda body, attempt: Reply(content="<rating>1</rating>", delay=1.5)) as server:
        result = _judge(server, tmp_path)
    assert result["n_failed"] == 0


def test_a_key_with_a_trailing_newline_is_named_and_nothing_is_sent(tmp_path):
    with OpenAIServer() as server:
        done = run_cli(["judge", "--predictions", write_jsonl(tmp_path / "a.jsonl", prediction_rows(2)), "--versus",
                        write_jsonl(tmp_path / "b.jsonl", prediction_rows(2, answer="B")), "--judge", "openai:j",
                        "--base-url", server.base_url, "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache",
                        "--no-progress"], OPENAI_API_KEY="sk-from-a-key-file-1234\r\n")
        sent = len(server.requests)
    assert done.returncode == 2 and sent == 0
    assert "$OPENAI_API_KEY has whitespace or a control character" in done.stderr
    assert "check --base-url" not in done.stderr and "sk-from-a-key-file" not in done.stderr + done.stdout


def test_a_tpm_smaller_than_one_request_is_refused_before_anything_is_sent(tmp_path):
    with OpenAIServer() as server:
        with pytest.raises(ValueError, match=r"tpm=100 \(--tpm\) is smaller than one request \(.* tokens"):
            judge_pairs(JudgeInputs(predictions=["a"], references=["r"], questions=["q?"]),
                        judge=JudgeConfig("openai:j"),
                        run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "cache",
                                      limiter=RateLimiter(rpm=None, tpm=100)))
        assert len(server.requests) == 0
