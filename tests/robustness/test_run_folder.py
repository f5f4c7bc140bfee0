"""The run folder and the cache hold every verdict: a damaged cache never costs a verdict and says
what to do; a stale summary is noticed by `report`; a re-run with other settings is refused unless
--overwrite, and an overwrite replaces the old verdicts only once the new set is complete; two
processes on one --out cannot both write it; every JSON file written is strict JSON."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import threading
import time

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    cli,
    prediction_rows,
    read_jsonl,
    retrieved_rows,
    run_cli,
    start_cli,
    write_jsonl,
)
from tests.robustness.test_kill import HoldOnceWritten, kill_after

N = 30
RATED = "<thinking>Scripted.</thinking><rating>1</rating>"


def judge_argv(tmp_path, server, *, judge: str = "openai:judge-a", out: str = "run", n: int = N) -> list:
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(n))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(n, answer="Other"))
    return ["judge", "--predictions", preds, "--versus", other, "--judge", judge, "--base-url", server.base_url,
            "--out", tmp_path / out, "--cache-dir", tmp_path / "cache", "--no-progress", "--max-concurrency", "2"]


def strict_loads(text: str):
    """json.loads that refuses NaN and infinities, as every JSON parser but Python's does."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


# --------------------------------------------------------------------------------------------
# A damaged cache
# --------------------------------------------------------------------------------------------
def damage_interior_pages(path, seed: int = 0) -> None:
    """Overwrite every page after the first with random bytes (the header and schema stay intact)."""
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    rng = random.Random(seed)
    data[page:] = bytes(rng.randrange(256) for _ in range(len(data) - page))
    path.write_bytes(bytes(data))


def test_a_damaged_cache_stops_with_one_line_and_loses_no_verdict(tmp_path):
    with OpenAIServer(lambda body, attempt: RATED) as server:
        argv = judge_argv(tmp_path, server)
        assert run_cli(argv, OPENAI_API_KEY=FAKE_KEY).returncode == 0
        verdicts_before = (tmp_path / "run" / "verdicts.jsonl").read_bytes()
        summary_before = (tmp_path / "run" / "summary.json").read_bytes()
        cache_file = tmp_path / "cache" / "completions.sqlite"
        assert not (tmp_path / "cache" / "completions.sqlite-wal").exists()  # checkpointed at close
        damage_interior_pages(cache_file)
        result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert f"The cache file {cache_file} is damaged" in result.stderr and "move it away or delete it" in result.stderr
    # before: verdicts.jsonl was truncated at the start of the re-run, then the run crashed
    assert (tmp_path / "run" / "verdicts.jsonl").read_bytes().startswith(verdicts_before)
    assert (tmp_path / "run" / "summary.json").read_bytes() == summary_before


def test_a_resumed_run_appends_and_keeps_every_earlier_verdict(tmp_path):
    """A re-run never truncates verdicts.jsonl: what it holds stays until the new set is complete
    (a torn last line left by a crash is cut, so new lines start on a line of their own)."""
    with OpenAIServer(lambda body, attempt: RATED) as server:
        argv = judge_argv(tmp_path, server, n=4)
        assert run_cli(argv, OPENAI_API_KEY=FAKE_KEY).returncode == 0
        path = tmp_path / "run" / "verdicts.jsonl"
        with open(path, "ab") as handle:
            handle.write(b'{"qid": "q0", "domain": "fiqa", "sys')  # a crash mid-line
        from metric_arena.judge._records import RunWriter  # the writer alone: open, then stop

        writer = RunWriter(tmp_path / "run", {"system": "sys", "opponent": "other", "judges": ["openai:judge-a"],
                                              "order": "paper", "seed": 0})
        writer.write({"qid": "q9", "domain": "fiqa", "system_a": "sys", "system_b": "other", "outcome": "win",
                      "failed": False, "flipped": None, "no_answer_a": False, "judgments": []})
        writer.close()
    rows = read_jsonl(path)
    assert [r["qid"] for r in rows] == ["q0", "q1", "q2", "q3", "q9"]


# --------------------------------------------------------------------------------------------
# Other settings into an existing folder; a stale summary
# --------------------------------------------------------------------------------------------
def test_a_rerun_with_another_judge_is_refused_and_an_overwrite_swaps_only_when_complete(tmp_path):
    hold = HoldOnceWritten(lambda body, attempt: RATED, tmp_path / "run" / ".verdicts.replacing.jsonl", 5)
    with OpenAIServer(hold, latency=0.05) as server:
        first = judge_argv(tmp_path, server)
        assert run_cli(first, OPENAI_API_KEY=FAKE_KEY).returncode == 0
        old_verdicts = (tmp_path / "run" / "verdicts.jsonl").read_bytes()
        old_summary = (tmp_path / "run" / "summary.json").read_bytes()
        other_judge = judge_argv(tmp_path, server, judge="openai:judge-b")
        refused = run_cli(other_judge, OPENAI_API_KEY=FAKE_KEY)
        assert refused.returncode == 2 and "holds a run with other settings (judges ['openai:judge-a'] there, " \
            "['openai:judge-b'] now)" in refused.stderr and "--overwrite" in refused.stderr
        assert len(server.requests) == N  # nothing was sent for the refused run
        # --overwrite, killed midway: the folder still holds the complete first run
        proc = start_cli(other_judge + ["--overwrite"], OPENAI_API_KEY=FAKE_KEY)
        kill_after(proc, tmp_path / "run" / ".verdicts.replacing.jsonl", 5, hold)
        assert (tmp_path / "run" / "verdicts.jsonl").read_bytes() == old_verdicts
        assert (tmp_path / "run" / "summary.json").read_bytes() == old_summary
        report = run_cli(["report", tmp_path / "run", "--out", tmp_path / "lb", "--no-plots"])
        assert report.returncode == 0 and "did not finish" in " ".join(report.stderr.split())
        assert json.loads((tmp_path / "lb" / "report.json").read_text())["judges"] == ["openai:judge-a"]
        # --overwrite to the end: the new set replaces the old one
        server.latency = 0.0
        assert run_cli(other_judge + ["--overwrite"], OPENAI_API_KEY=FAKE_KEY).returncode == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["judges"] == ["openai:judge-b"] and summary["n"] == N
    assert {j["judge"] for v in read_jsonl(tmp_path / "run" / "verdicts.jsonl") for j in v["judgments"]} == {
        "openai:judge-b"}
    assert not (tmp_path / "run" / ".verdicts.replacing.jsonl").exists()


def test_report_notices_a_stale_summary_and_reports_from_the_verdicts(tmp_path, capsys):
    """A folder as older versions left it: finished with judge A, then re-run into with judge B and
    killed, so summary.json (judge A, n 30) no longer matches verdicts.jsonl (judge B, 7 pairs)."""
    with OpenAIServer(lambda body, attempt: RATED) as server:
        code, _, err = cli(judge_argv(tmp_path, server), capsys)
        assert code == 0, err
        code, _, err = cli(judge_argv(tmp_path, server, judge="openai:judge-b", out="b"), capsys)
        assert code == 0, err
    lines = (tmp_path / "b" / "verdicts.jsonl").read_text().splitlines()[:7]
    (tmp_path / "run" / "verdicts.jsonl").write_text("\n".join(lines) + "\n")  # the old code truncated, then died
    code, stdout, err = cli(["report", tmp_path / "run", "--out", tmp_path / "lb", "--no-plots"], capsys)
    assert code == 0, err
    err = " ".join(err.split())  # the report wraps its warnings
    assert "summary.json does not match verdicts.jsonl (n 30 there, 7 verdicts; judges ['openai:judge-a'] there, " \
           "['openai:judge-b'] in the verdicts)" in err
    report = json.loads((tmp_path / "lb" / "report.json").read_text())
    assert report["judges"] == ["openai:judge-b"] and report["n_queries"] == 7  # before: judge A's
    assert [(h["n"], h["judges"]) for h in report["head_to_head"]] == [(7, ["openai:judge-b"])]


# --------------------------------------------------------------------------------------------
# Two processes on one --out
# --------------------------------------------------------------------------------------------
def held_until(released: threading.Event, reply: str):
    """A server reply: the first request is answered at once (the backend is reached, so no fail-fast window
    runs), every later one is held until ``released`` is set. The first run stays mid-run however slowly the
    second one starts: the order, not the machine's speed, decides the test."""
    arrived = itertools.count()

    def answer(body, attempt):
        if next(arrived) > 0:
            released.wait(300)
        return reply

    return answer


def wait_for(condition, first: subprocess.Popen) -> None:
    """Until ``condition()`` holds while ``first`` runs (a hang guard of minutes, not a speed claim)."""
    deadline = time.monotonic() + 300
    while not condition():
        assert time.monotonic() < deadline and first.poll() is None, first.poll()
        time.sleep(0.02)


def test_a_second_process_on_the_same_out_is_refused_with_exit_2(tmp_path):
    released = threading.Event()
    with OpenAIServer(held_until(released, RATED)) as server:
        argv = judge_argv(tmp_path, server)
        first = start_cli(argv, OPENAI_API_KEY=FAKE_KEY)
        try:
            wait_for(lambda: (tmp_path / "run" / "verdicts.jsonl").exists() and server.requests, first)
            second = run_cli(argv, timeout=600, OPENAI_API_KEY=FAKE_KEY)
            assert first.poll() is None  # the first run was still running (its replies held) all along
        finally:
            released.set()
        stdout, stderr = first.communicate(timeout=600)
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert f"Another judge run is writing {tmp_path / 'run'} right now" in second.stderr
    assert "disk full" not in second.stderr
    assert first.returncode == 0, stderr
    verdicts = read_jsonl(tmp_path / "run" / "verdicts.jsonl")
    assert [v["qid"] for v in verdicts] == [f"q{i}" for i in range(N)]


def test_a_second_generation_on_the_same_out_is_refused_with_exit_2(tmp_path):
    retrieved = write_jsonl(tmp_path / "retrieved.jsonl", retrieved_rows(N))
    released = threading.Event()
    with OpenAIServer(held_until(released, "Answer: fine.")) as server:
        argv = ["generate", "--retrieved", retrieved, "--model", "openai:g", "--base-url", server.base_url, "--out",
                tmp_path / "preds.jsonl", "--cache-dir", tmp_path / "cache", "--no-progress", "--max-concurrency", "2"]
        first = start_cli(argv, OPENAI_API_KEY=FAKE_KEY)
        try:
            wait_for(lambda: server.requests, first)
            second = run_cli(argv, timeout=600, OPENAI_API_KEY=FAKE_KEY)
            assert first.poll() is None  # the first run was still running (its replies held) all along
        finally:
            released.set()
        first.communicate(timeout=600)
    assert second.returncode == 2 and "Another run is writing" in second.stderr and "Traceback" not in second.stderr
    assert first.returncode == 0


# --------------------------------------------------------------------------------------------
# Strict JSON
# --------------------------------------------------------------------------------------------
def test_every_json_file_written_is_strict_json(tmp_path, capsys):
    """A run whose rates are undefined (every pair failed, both orders) writes null, never a bare NaN;
    the same for generation summaries and answer files; older files holding NaN are still read."""
    with OpenAIServer(lambda body, attempt: "no rating at all") as server:
        code, _, _ = cli(judge_argv(tmp_path, server, n=3) + ["--order", "both"], capsys)
        assert code == 3  # every pair failed
        code, _, _ = cli(["generate", "--retrieved", write_jsonl(tmp_path / "r.jsonl", retrieved_rows(2)), "--model",
                          "openai:g", "--base-url", server.base_url, "--out", tmp_path / "preds.jsonl",
                          "--cache-dir", tmp_path / "cache"], capsys)
        assert code == 0
    summary = strict_loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["win_rate"] is None and summary["position_flip_rate"] is None
    for line in (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines():
        strict_loads(line)
    strict_loads((tmp_path / "preds.summary.json").read_text())
    for line in (tmp_path / "preds.jsonl").read_text().splitlines():
        strict_loads(line)
    # an older summary.json with NaN: still read
    (tmp_path / "run" / "summary.json").write_text((tmp_path / "run" / "summary.json").read_text()
                                                   .replace('"win_rate": null', '"win_rate": NaN'))
    code, _, err = cli(["report", tmp_path / "run", "--out", tmp_path / "lb", "--no-plots"], capsys)
    assert code == 0, err
    strict_loads((tmp_path / "lb" / "leaderboard.json").read_text())


def test_retrieval_output_and_metrics_are_strict_json(tmp_path, monkeypatch):
    """A retriever that scores a passage NaN: the retrieved file holds null, not a bare NaN."""
    from retrieval import RetrieveRun, retrieve
    from retrieval._bm25 import BM25Retriever

    collection = tmp_path / "data" / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(f"{i}\tdocument {i} about topic{i % 3}\n" for i in range(20)), encoding="utf-8")
    search = BM25Retriever.search

    def nan_scores(self, queries, k=5):
        return {qid: [(pid, float("nan")) for pid, _ in hits] for qid, hits in search(self, queries, k).items()}

    monkeypatch.setattr(BM25Retriever, "search", nan_scores)
    out = tmp_path / "r.jsonl"
    retrieve("writing", out, retriever="bm25", k=3, corpus_dir=tmp_path / "data", run=RetrieveRun(show_progress=False),
             questions=[{"qid": "1", "question": "topic1", "gold_doc_ids": ["1"]}, {"qid": "2", "question": "x"}])
    lines = [strict_loads(line) for line in out.read_text().splitlines()]
    assert {p["score"] for line in lines for p in line["passages"]} == {None}
    strict_loads(out.with_name("r.metrics.json").read_text())
