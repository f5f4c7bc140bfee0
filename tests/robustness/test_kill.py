"""kill -9 in the middle of a run, then the same command again: it completes, no verdict or
answer is lost or duplicated, and only the items not answered before the kill are requested
again. Real subprocesses (``python -m rag_qa_arena``), a real local server in this process whose
latency makes the kill land mid-run."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    prediction_rows,
    query_of,
    read_jsonl,
    retrieved_rows,
    run_cli,
    start_cli,
    write_jsonl,
)

N = 40
RATED = "<thinking>Scripted.</thinking><rating>2</rating>"


def complete_lines(path: Path) -> list[dict]:
    """The whole lines of a file being appended to (a line cut by the kill is ignored)."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]


class HoldOnceWritten:
    """A server reply that holds every request arriving once ``path`` has ``n`` whole lines, until
    :meth:`release` (which :func:`kill_after` calls after the kill): the kill lands mid-run whatever the
    machine's speed, never after a run that raced to its end."""

    def __init__(self, reply, path: Path, n: int):
        self.reply, self.path, self.n = reply, path, n
        self.released = threading.Event()

    def __call__(self, body, attempt):
        if len(complete_lines(self.path)) >= self.n:
            self.released.wait(300)
        return self.reply(body, attempt)

    def release(self) -> None:
        self.released.set()


def kill_after(proc, path: Path, n_lines: int, hold: HoldOnceWritten | None = None, timeout: float = 300.0) -> None:
    """SIGKILL ``proc`` once ``path`` has ``n_lines`` whole lines (``timeout``: a hang guard, not a speed claim)."""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"the run ended before the kill (exit {proc.returncode}): {proc.stderr.read()}")
            if len(complete_lines(path)) >= n_lines:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=60)
                proc.stdout.close()
                proc.stderr.close()
                assert proc.returncode == -signal.SIGKILL
                return
            time.sleep(0.005)
        proc.kill()
        pytest.fail(f"{path} never reached {n_lines} lines")
    finally:
        if hold is not None:
            hold.release()


def test_judge_killed_mid_run_resumes_without_loss_or_duplicates(tmp_path):
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(N, answer="Mine"))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(N, answer="Theirs"))
    run = tmp_path / "run"
    hold = HoldOnceWritten(lambda body, attempt: RATED, run / "verdicts.jsonl", 8)
    with OpenAIServer(hold, latency=0.05) as server:
        argv = ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:judge", "--base-url",
                server.base_url, "--out", run, "--cache-dir", tmp_path / "cache", "--max-concurrency", "2",
                "--no-progress"]
        kill_after(start_cli(argv, OPENAI_API_KEY=FAKE_KEY), run / "verdicts.jsonl", 8, hold)
        before = {v["qid"]: v for v in complete_lines(run / "verdicts.jsonl")}
        asked_before = Counter(query_of(b).split()[0] for b in server.requests)
        assert 8 <= len(before) < N and not (run / "summary.json").exists()
        server.clear()
        server.latency = 0.0
        result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
        asked_after = Counter(query_of(b).split()[0] for b in server.requests)
    assert result.returncode == 0, result.stderr
    final = read_jsonl(run / "verdicts.jsonl")
    assert [v["qid"] for v in final] == [f"q{i}" for i in range(N)]  # each once, input order
    summary = json.loads((run / "summary.json").read_text())
    assert summary["n"] == N and summary["n_failed"] == 0
    # verdicts written before the kill are kept as they were
    by_qid = {v["qid"]: v for v in final}
    strip = lambda v: {**v, "judgments": [{**j, "cached": None} for j in v["judgments"]]}  # noqa: E731
    for qid, verdict in before.items():
        assert strip(by_qid[qid]) == strip(verdict)
    # only what was not answered before the kill is asked again, and each item at most once more
    assert not set(asked_after) & set(before)
    assert all(count == 1 for count in asked_after.values())
    assert set(asked_after) | set(asked_before) == {f"q{i}" for i in range(N)}
    assert all((asked_before + asked_after)[f"q{i}"] <= 2 for i in range(N))
    assert summary["n_sent"] == len(asked_after) and summary["n_cached"] == N - len(asked_after)


def test_generation_killed_mid_run_resumes_without_loss_or_duplicates(tmp_path):
    retrieved = write_jsonl(tmp_path / "retrieved.jsonl", retrieved_rows(N))
    out = tmp_path / "preds.jsonl"
    hold = HoldOnceWritten(lambda body, attempt: f"Answer: about {query_of(body)}", out, 8)
    with OpenAIServer(hold, latency=0.05) as server:
        argv = ["generate", "--retrieved", retrieved, "--model", "openai:gen", "--base-url", server.base_url,
                "--out", out, "--cache-dir", tmp_path / "cache", "--max-concurrency", "2", "--no-progress"]
        kill_after(start_cli(argv, OPENAI_API_KEY=FAKE_KEY), out, 8, hold)
        before = {line["qid"]: line for line in complete_lines(out)}
        asked_before = Counter(query_of(b).split()[0] for b in server.requests)
        assert 8 <= len(before) < N
        server.clear()
        server.latency = 0.0
        result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
        asked_after = Counter(query_of(b).split()[0] for b in server.requests)
    assert result.returncode == 0, result.stderr
    final = read_jsonl(out)
    assert [line["qid"] for line in final] == [f"q{i}" for i in range(N)]
    assert all(line["answer"] == f"about q{i} asks?" for i, line in enumerate(final))
    for qid, line in before.items():
        assert final[int(qid[1:])] == line
    assert not set(asked_after) & set(before)
    assert all(count == 1 for count in asked_after.values())
    assert all((asked_before + asked_after)[f"q{i}"] <= 2 for i in range(N))
    summary = json.loads((tmp_path / "preds.summary.json").read_text())
    assert summary["n"] == N and summary["n_resumed"] == len(before) and summary["n_sent"] == len(asked_after)
