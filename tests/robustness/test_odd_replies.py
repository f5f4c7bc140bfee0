"""Odd replies from a real local server: each fails its own item (asked once more, counted by
kind) and the run goes on; nothing odd reaches the cache or an answer file; a reply body is never
read whole past its limit, and one that breaks off does not make a running server "unreachable"."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metric_arena import RunConfig, judge_pairs
from metric_arena.generate import GenerationConfig, RunOutput, generate_answers
from metric_arena.llm import RetryPolicy
from tests.openai_server import OpenAIServer, Reply
from tests.robustness.helpers import FAKE_KEY, ROOT, query_of, retrieved_rows, subprocess_env
from metric_arena.judge import JudgeInputs

FAST = RetryPolicy(max_retries=1, initial=0.0, multiplier=1.0, jitter=0.0, fail_fast_after=1.0)
RATED = "<thinking>Scripted.</thinking><rating>1</rating>"


def _completion(content, finish_reason="stop") -> str:
    """A reply body, JSON-escaped as a server sends it (a lone surrogate comes out as \\udXXX)."""
    return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": finish_reason,
                                    "message": {"role": "assistant", "content": content}}]})


ODD = {
    "surrogate": Reply(raw_body=_completion("<thinking>half an emoji \ud83d</thinking><rating>1</rating>")),
    "finish-object": Reply(content=RATED, finish_reason={"type": "stop", "why": ["x"]}),
    "filtered": Reply(content="", finish_reason="content_filter"),
    "cut-chunked": Reply(content=RATED, chunked=True, cut_after=60),
    "cut-length": Reply(content=RATED, cut_after=60),
    "huge": Reply(huge_mib=8),
    "not-utf8": Reply(raw_body=b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),
    "array": Reply(raw_body="[1, 2]"),
    "nan": Reply(raw_body='{"choices": [{"message": {"content": "x"}, "finish_reason": NaN}]}'),
}
KINDS = {"surrogate": "bad_unicode", "finish-object": "malformed", "filtered": "content_filter",
         "cut-chunked": "cut_body", "cut-length": "cut_body", "huge": "oversized_body", "not-utf8": "bad_unicode",
         "array": "malformed", "nan": "malformed"}


def _server(first_only: bool):
    """Odd replies by question: on the first arrival only (the re-ask gets a good reply), or always."""

    def reply(body, attempt):
        name = query_of(body).split()[0]
        if name in ODD and (attempt == 1 or not first_only):
            return ODD[name]
        if name == "parts":
            return Reply(message={"role": "assistant", "content": [{"type": "text", "text": "<thinking>a</thinking>"},
                                                                   {"type": "text", "text": "<rating>2</rating>"}]})
        return RATED

    return reply


def _judge(server, tmp_path, names, cache="cache"):
    return judge_pairs(JudgeInputs(predictions=[f"A of {n}" for n in names], references=[f"B of {n}" for n in names],
                                   questions=[f"{n} asks?" for n in names], ids=names), judge="openai:judge",
                       run=RunConfig(base_url=server.base_url, api_key=FAKE_KEY, cache_dir=tmp_path / cache,
                                     retry=FAST, timeout=20), output=RunOutput(progress=False))


def _cached_texts(tmp_path, cache="cache") -> list[str]:
    with sqlite3.connect(tmp_path / cache / "completions.sqlite") as conn:
        return [text for (text,) in conn.execute("SELECT text FROM completions")]


def test_each_odd_reply_is_re_asked_once_and_counted_by_kind(tmp_path):
    names = [*ODD, "parts", "ok"]
    with OpenAIServer(_server(first_only=True)) as server:
        result = _judge(server, tmp_path, names)
        sent = [query_of(b).split()[0] for b in server.requests]
    verdicts = {v["qid"]: v for v in result["verdicts"]}
    assert result["n_failed"] == 0, {q: v["judgments"] for q, v in verdicts.items() if v["failed"]}
    expected = {}
    for name, kind in KINDS.items():
        expected[kind] = expected.get(kind, 0) + 1
        assert sent.count(name) == 2, name  # the odd reply, then the re-ask
        assert verdicts[name]["judgments"][0]["attempts"] == 2, name
    assert {k: v for k, v in result["errors"].items() if k in expected} == expected
    # content sent as a list of text parts is its text, not a Python repr
    assert verdicts["parts"]["judgments"][0]["raw"] == "<thinking>a</thinking><rating>2</rating>"
    assert sent.count("parts") == 1 and sent.count("ok") == 1
    assert not any("{'type'" in text or "\ufffd" in text for text in _cached_texts(tmp_path))


def test_odd_replies_on_every_attempt_fail_their_items_and_the_run_goes_on(tmp_path):
    """The cut bodies come from a server that is running: the run is not stopped as unreachable (the
    fail-fast window is 1 s here), and a re-run does not die on anything the first run stored."""
    names = [*ODD, "ok"]
    for run in range(2):
        with OpenAIServer(_server(first_only=False)) as server:
            result = _judge(server, tmp_path, names)
        verdicts = {v["qid"]: v for v in result["verdicts"]}
        assert {q for q, v in verdicts.items() if v["failed"]} == set(ODD), run
        assert verdicts["ok"]["outcome"] in ("win", "loss")
        for name in ODD:
            assert verdicts[name]["outcome"] is None and verdicts[name]["judgments"][0]["attempts"] == 2, name
        assert {kind: result["errors"].get(kind) for kind in KINDS.values()} == {
            "bad_unicode": 4, "malformed": 6, "content_filter": 2, "cut_body": 4, "oversized_body": 2}
    assert set(_cached_texts(tmp_path)) == {RATED}  # only good replies were stored


def test_a_filtered_generation_is_failed_not_answered(tmp_path):
    rows = retrieved_rows(3)
    for row, name in zip(rows, ("filtered", "parts", "ok")):
        row["question"] = f"{name} asks?"

    def reply(body, attempt):
        name = query_of(body).split()[0]
        if name == "filtered":
            return Reply(content="", finish_reason="content_filter")
        if name == "parts":
            return Reply(message={"role": "assistant", "content": [{"type": "text", "text": "Answer: Paris"},
                                                                   {"type": "text", "text": " it is."}]})
        return "Answer: fine."

    with OpenAIServer(reply) as server:
        res = generate_answers(rows, "openai:g", generation=GenerationConfig(max_tokens=64), output=RunOutput(progress=False),
                               run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "cache",
                                             retry=FAST))
    lines = {line["qid"]: line for line in res["predictions"]}
    assert lines["q0"]["failed"] is True and lines["q0"]["answer"] is None
    assert "content filter" in lines["q0"]["error"]
    assert lines["q1"]["answer"] == "Paris it is." and lines["q2"]["answer"] == "fine."
    assert res["errors"]["content_filter"] == 2 and res["n_failed"] == 1


_CLIENT = """
import json, resource, sys, time
from metric_arena import RunConfig, judge_pairs
from metric_arena.llm import RetryPolicy
url = sys.argv[1]
n = int(sys.argv[2])
start = time.monotonic()
res = judge_pairs([f"A{i}" for i in range(n)], [f"B{i}" for i in range(n)], [f"q{i} asks?" for i in range(n)],
                  ids=[f"q{i}" for i in range(n)], judge="openai:judge", progress=False,
                  run=RunConfig(base_url=url, api_key="k", use_cache=False, max_concurrency=n, timeout=120,
                                retry=RetryPolicy(max_retries=0)))
print(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, res["n_failed"], res["errors"],
                  round(time.monotonic() - start, 1)]))
"""


def peak_rss_mib(url: str, n: int, pythonpath: str | os.PathLike = ROOT) -> tuple[int, int, dict, float]:
    """Peak RSS (MiB) of a fresh process judging ``n`` pairs at once against ``url``, its failed
    count, error kinds and wall time."""
    env = subprocess_env()
    env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run([sys.executable, "-c", _CLIENT, url, str(n)], env=env, capture_output=True, text=True, cwd=pythonpath,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    peak, failed, errors, wall = json.loads(done.stdout.strip().splitlines()[-1])
    return peak, failed, errors, wall


@contextlib.contextmanager
def serve(folder: Path, mib: float):
    """The base URL of a test server in its own process, every reply ``mib`` MiB long (0: normal replies)."""
    url_file = folder / f"url-{mib}"
    argv = [sys.executable, "-m", "tests.openai_server", "--url-file", str(url_file)]
    if mib:
        argv += ["--huge-reply-mib", str(mib)]
    proc = subprocess.Popen(argv, cwd=ROOT, env=subprocess_env())
    try:
        for _ in range(400):
            if url_file.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        yield url_file.read_text().strip()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_memory_stays_bounded_while_huge_bodies_are_read(tmp_path):
    """Four 150 MiB bodies at once (a server in its own process, streaming them): the client's peak
    memory stays within 100 MiB of a run of four normal replies (before: 1,124 MiB more)."""
    with serve(tmp_path, 0) as normal, serve(tmp_path, 150) as huge:
        base, base_failed, _, _ = peak_rss_mib(normal, 4)
        peak, huge_failed, errors, _ = peak_rss_mib(huge, 4)
    assert base_failed == 0 and huge_failed == 4 and errors == {"oversized_body": 8}  # each re-asked once
    assert peak - base < 100, (base, peak)


@pytest.mark.parametrize("chunked", [True, False])
def test_a_server_sending_only_cut_bodies_is_not_reported_unreachable(tmp_path, chunked):
    """Every body breaks off: each pair fails as cut_body (asked once more); the run is not stopped as
    if the server were down, though the fail-fast window (0.5 s) passes."""
    def reply(body, attempt):
        time.sleep(0.3)
        return Reply(content=RATED, chunked=chunked, cut_after=40)

    with OpenAIServer(reply) as server:
        result = judge_pairs(JudgeInputs(predictions=["a", "b", "c"], references=["x", "y", "z"],
                                         questions=["q1 asks?", "q2 asks?", "q3 asks?"], ids=["q1", "q2", "q3"]),
                             judge="openai:judge",
                             run=RunConfig(base_url=server.base_url, api_key=FAKE_KEY, use_cache=False,
                                           retry=RetryPolicy(max_retries=0, fail_fast_after=0.5)),
                             output=RunOutput(progress=False))
    assert result["n_failed"] == 3 and result["errors"] == {"cut_body": 6}


def test_a_huge_error_body_is_not_read_whole(tmp_path):
    """A 500 (and a 401) whose body is 200 MiB: at most 64 KiB of it is read, the error is the usual
    one, and Python's allocations stay small while it arrives."""
    import tracemalloc

    def reply(body, attempt):
        status = 401 if query_of(body).startswith("q2") else 500
        return Reply(status=status, huge_mib=200)

    with OpenAIServer(reply) as server:
        run = RunConfig(base_url=server.base_url, api_key=FAKE_KEY, use_cache=False,
                        retry=RetryPolicy(max_retries=0, fail_fast_after=None))
        tracemalloc.start()
        result = judge_pairs(JudgeInputs(predictions=["a"], references=["x"], questions=["q1 asks?"], ids=["q1"]),
                             judge="openai:judge", run=run, output=RunOutput(progress=False))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        with pytest.raises(Exception, match="HTTP 401"):
            judge_pairs(JudgeInputs(predictions=["a"], references=["x"], questions=["q2 asks?"], ids=["q2"]),
                        judge="openai:judge", run=run, output=RunOutput(progress=False))
    assert result["n_failed"] == 1 and result["errors"] == {"500": 1}
    assert peak < 32 * 2**20, peak  # a body read whole would be 200 MiB
