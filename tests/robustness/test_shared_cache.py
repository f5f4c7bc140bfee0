"""Several runs sharing one cache at the same time (real subprocesses) do not corrupt it:
SQLite in WAL mode, one transaction per write, a busy timeout."""

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
    assert N * 2 <= n_first <= N * 3  # judge requests may be sent by both judges when they race
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
