"""Several runs sharing one cache at the same time (real subprocesses) do not corrupt it:
SQLite in WAL mode, one transaction per write, a busy timeout. They share work in flight: a
request another run is sending is waited for, not paid twice. Two servers on one host (other
ports) never share answers."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    cli,
    prediction_rows,
    query_of,
    read_jsonl,
    retrieved_rows,
    start_cli,
    write_jsonl,
)
from metric_arena.judge import JudgeInputs

N = 40


def reply(body, attempt):
    question = query_of(body)
    if len(body["messages"]) > 1:  # a judge request (system turn, 3 examples, the pair)
        return f"<thinking>{question}</thinking><rating>{1 + int(question.split()[0][1:]) % 2}</rating>"
    return f"Answer: about {question}"


@pytest.mark.slow  # ~6 s: three Python processes start at once on two cores
def test_two_judges_and_a_generator_share_one_cache_at_once(tmp_path, capsys):
    cache = tmp_path / "cache"
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(N, answer="Mine"))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(N, answer="Theirs"))
    retrieved = write_jsonl(tmp_path / "retrieved.jsonl", retrieved_rows(N))
    with OpenAIServer(reply, latency=0.002) as server:
        def judge(out):
            return ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:judge", "--base-url",
                    server.base_url, "--out", out, "--cache-dir", cache, "--max-concurrency", "16", "--no-progress"]

        generate = ["generate", "--retrieved", retrieved, "--model", "openai:gen", "--base-url", server.base_url,
                    "--out", tmp_path / "preds.jsonl", "--cache-dir", cache, "--max-concurrency", "16",
                    "--no-progress"]
        procs = [start_cli(judge(tmp_path / "run1"), OPENAI_API_KEY=FAKE_KEY),
                 start_cli(judge(tmp_path / "run2"), OPENAI_API_KEY=FAKE_KEY),
                 start_cli(generate, OPENAI_API_KEY=FAKE_KEY)]
        results = [(proc.wait(timeout=120), *proc.communicate()) for proc in procs]
        for code, stdout, stderr in results:
            assert code == 0, stderr
            assert "locked" not in stderr and "Traceback" not in stderr
        n_first = len(server.requests)
        server.clear()
        code, _, err = cli(judge(tmp_path / "run3"), capsys)  # in this process: a third reader
        assert code == 0, err
        assert server.requests == []  # everything is in the shared cache
    assert n_first == N * 2  # each judgment paid once: the second judge waits for the first's answers
    with sqlite3.connect(cache / "completions.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT valid, COUNT(*) FROM completions GROUP BY valid").fetchall()
    assert rows == [(1, 2 * N)]  # N judgments + N answers, one entry each
    runs = [read_jsonl(tmp_path / name / "verdicts.jsonl") for name in ("run1", "run2", "run3")]
    outcomes = [[v["outcome"] for v in run] for run in runs]
    assert outcomes[0] == outcomes[1] == outcomes[2] and len(outcomes[0]) == N and None not in outcomes[0]
    for name in ("run1", "run2", "run3"):
        assert json.loads((tmp_path / name / "summary.json").read_text())["n_failed"] == 0
    answers = read_jsonl(tmp_path / "preds.jsonl")
    assert [a["answer"] for a in answers] == [f"about q{i} asks?" for i in range(N)]


_HAMMER = """
import sys
from metric_arena.llm import ChatRequest, Completion
from metric_arena.llm import CompletionCache, cache_key

worker, n = sys.argv[1], int(sys.argv[2])
cache = CompletionCache(sys.argv[3])
for i in range(n):
    shared = cache_key({"backend": "t"}, ChatRequest([{"role": "user", "content": f"shared {i}"}]))
    own = cache_key({"backend": "t"}, ChatRequest([{"role": "user", "content": f"{worker} {i}"}]))
    cache.put(shared, Completion(f"shared {i}"), valid=i % 3 != 0)  # both processes write these keys
    cache.put(own, Completion(f"{worker} {i}"), valid=True)
    assert cache.get(own).text == f"{worker} {i}"
    entry = cache.get(shared)
    assert entry is not None and entry.text == f"shared {i}"
cache.close()
print("done")
"""


def test_two_processes_writing_one_cache_keep_it_consistent(tmp_path):
    import subprocess
    import sys

    from tests.robustness.helpers import ROOT, subprocess_env

    n = 400
    procs = [subprocess.Popen([sys.executable, "-c", _HAMMER, name, str(n), str(tmp_path)], cwd=ROOT,
                              env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0 and stdout.strip() == "done", stderr
    with sqlite3.connect(tmp_path / "completions.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == 3 * n
        own = conn.execute("SELECT COUNT(*) FROM completions WHERE text LIKE 'a %' OR text LIKE 'b %'").fetchone()[0]
    assert own == 2 * n


def test_two_runs_started_together_pay_once_for_each_request(tmp_path):
    """Two judge runs on one cache at the same moment (two threads, each its own runner, like two
    processes): before, each paid for every pair (1,000 requests for 500 pairs)."""
    import threading

    from metric_arena import RunConfig, judge_pairs

    n = 120
    preds, refs = [f"Mine {i}" for i in range(n)], [f"Theirs {i}" for i in range(n)]
    questions = [f"q{i} asks?" for i in range(n)]
    results = {}
    with OpenAIServer(reply, latency=0.02) as server:
        def run(name):
            results[name] = judge_pairs(JudgeInputs(predictions=preds, references=refs, questions=questions),
                                        judge="openai:judge", run=RunConfig(base_url=server.base_url, api_key="k",
                                                      cache_dir=tmp_path / "cache", max_concurrency=8),
                                        out=tmp_path / name)
        threads = [threading.Thread(target=run, args=(name,)) for name in ("run1", "run2")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        n_requests = len(server.requests)
    assert n_requests == n  # each request paid once
    assert results["run1"]["n_sent"] + results["run2"]["n_sent"] == n
    assert results["run1"]["n_shared"] + results["run2"]["n_shared"] > 0
    outcomes = [[v["outcome"] for v in results[name]["verdicts"]] for name in ("run1", "run2")]
    assert outcomes[0] == outcomes[1] and None not in outcomes[0]


def test_two_servers_on_one_host_never_share_answers(tmp_path):
    """The cache key holds scheme, host, port and path: before, it held the host only, so a second
    server on 127.0.0.1 got the first one's answers from the cache."""
    from metric_arena import RunConfig, judge_pairs

    inputs = JudgeInputs(predictions=["a"], references=["b"], questions=["two words"])
    with OpenAIServer(lambda body, attempt: "<rating>1</rating>") as first, \
            OpenAIServer(lambda body, attempt: "<rating>2</rating>") as second:
        on_first = RunConfig(base_url=first.base_url, api_key="k", cache_dir=tmp_path)
        on_second = RunConfig(base_url=second.base_url, api_key="k", cache_dir=tmp_path)
        one = judge_pairs(inputs, judge="openai:j", run=on_first)
        two = judge_pairs(inputs, judge="openai:j", run=on_second)
        again = judge_pairs(inputs, judge="openai:j", run=on_first)
        assert len(second.requests) == 1 and len(first.requests) == 1
    assert [r["verdicts"][0]["outcome"] for r in (one, two, again)] == ["win", "loss", "win"]
    assert two["n_sent"] == 1 and again["n_cached"] == 1
