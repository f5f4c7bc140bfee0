"""Server faults during judge and generation runs, against a real local server: each fault gets
its treatment (retry, re-ask, or a failed item), the run completes, and every fault is counted
in the summary. Authentication and unknown-model errors stop the run at once."""

from __future__ import annotations

import json
import sqlite3

import pytest

from metric_arena import judge_pairs
from metric_arena.generate import generate_answers, summary_path
from metric_arena.llm import RetryPolicy
from tests.openai_server import OpenAIServer, Reply
from tests.robustness.helpers import (
    FAKE_KEY,
    cli,
    prediction_rows,
    query_of,
    read_jsonl,
    retrieved_rows,
    run_cli,
    write_jsonl,
)

FAST = RetryPolicy(max_retries=2, initial=0.0, multiplier=1.0, jitter=0.0)
RATED = "<thinking>Scripted.</thinking><rating>1</rating>"


def first_attempt_fault(faults: dict, ok: str):
    """A server reply: the fault of the question on the first arrival of a body, then ``ok``."""

    def reply(body, attempt):
        fault = faults.get(query_of(body).split()[0])
        if callable(fault):
            return fault(attempt)
        if fault is not None and attempt == 1:
            return fault
        return ok

    return reply


JUDGE_FAULTS = {
    "limit-after": Reply(status=429, headers={"Retry-After": "0"}),
    "limit-plain": Reply(status=429),
    "server": Reply(status=500),
    "gateway": Reply(status=502),
    "unavailable": Reply(status=503),
    "slow": Reply(delay=1.2),  # over the 0.4 s timeout
    "drop": Reply(status=-1),
    "malformed": Reply.malformed(),
    "empty": Reply.empty_choices(),
    "cut-unrated": lambda attempt: Reply(content="<thinking>I keep think", finish_reason="length"),
    "cut-rated": lambda attempt: Reply(content="<thinking>x</thinking><rating>1</rating>", finish_reason="length"),
    "ok": None,
}


def test_judge_cli_survives_every_fault_and_counts_it(tmp_path):
    names = list(JUDGE_FAULTS)
    preds = [{"qid": name, "question": f"{name} is the question here", "domain": "fiqa", "answer": "A"}
             for name in names]
    refs = [{"qid": name, "answer": "B"} for name in names]
    with OpenAIServer(first_attempt_fault(JUDGE_FAULTS, RATED)) as server:
        result = run_cli(["judge", "--predictions", write_jsonl(tmp_path / "a.jsonl", preds),
                          "--versus", write_jsonl(tmp_path / "b.jsonl", refs), "--judge", "openai:judge",
                          "--base-url", server.base_url, "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache",
                          "--timeout", "0.4", "--no-progress"], OPENAI_API_KEY=FAKE_KEY)
        sent = [query_of(b).split()[0] for b in server.requests]
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["errors"] == {"429": 2, "500": 1, "502": 1, "503": 1, "timeout": 1, "connection": 1,
                                 "malformed": 1, "empty_choices": 1, "truncated": 3, "invalid_reply": 2}
    verdicts = {v["qid"]: v for v in read_jsonl(tmp_path / "run" / "verdicts.jsonl")}
    assert summary["n"] == len(names) and summary["n_failed"] == 1
    # a truncated reply without a rating: asked once more, then the pair fails (never a tie)
    unrated = verdicts["cut-unrated"]
    assert unrated["failed"] and unrated["outcome"] is None and unrated["judgments"][0]["attempts"] == 2
    assert unrated["judgments"][0]["raw"] == "<thinking>I keep think"
    # a truncated reply that still holds a valid rating counts
    assert verdicts["cut-rated"]["outcome"] in ("win", "loss") and verdicts["cut-rated"]["judgments"][0]["attempts"] == 1
    for name in names:
        if name not in ("cut-unrated", "ok", "cut-rated"):
            assert verdicts[name]["failed"] is False, name
            assert sent.count(name) == 2, name  # the fault, then one successful retry or re-ask
    assert sent.count("ok") == 1 and sent.count("cut-unrated") == 2
    assert "429: 2" in result.stdout and "truncated: 3" in result.stdout  # the printed summary too


GENERATION_FAULTS = {
    "limit-after": Reply(status=429, headers={"Retry-After": "0"}),
    "limit-plain": Reply(status=429),
    "server": Reply(status=500),
    "slow": Reply(delay=1.2),
    "drop": Reply(status=-1),
    "malformed": Reply.malformed(),
    "empty": Reply.empty_choices(),
    "cut": lambda attempt: Reply(content="<thinking>I was thinking abo", finish_reason="length"),
    "ok": None,
}


def test_generate_cli_survives_every_fault_and_counts_it(tmp_path, capsys):
    rows = retrieved_rows(len(GENERATION_FAULTS))
    for row, name in zip(rows, GENERATION_FAULTS):
        row["question"] = f"{name} asks?"
    out = tmp_path / "preds.jsonl"
    with OpenAIServer(first_attempt_fault(GENERATION_FAULTS, "Answer: fine.")) as server:
        code, stdout, err = cli(["generate", "--retrieved", write_jsonl(tmp_path / "r.jsonl", rows), "--model",
                                 "openai:gen", "--base-url", server.base_url, "--out", out, "--cache-dir",
                                 tmp_path / "cache", "--timeout", "0.4", "--no-progress"], capsys)
    assert code == 0, err
    summary = json.loads(summary_path(out).read_text())
    assert summary["errors"] == {"429": 2, "500": 1, "timeout": 1, "connection": 1, "malformed": 1,
                                 "empty_choices": 1, "truncated": 1}
    assert summary["n_failed"] == 0 and summary["n_truncated"] == 1
    lines = {line["question"].split()[0]: line for line in read_jsonl(out)}
    cut = lines["cut"]
    assert cut["finish_reason"] == "length" and cut["raw"] == "<thinking>I was thinking abo" and not cut["failed"]
    assert all(line["answer"] == "fine." for name, line in lines.items() if name != "cut")
    assert "truncated 1" in stdout and "errors" in stdout


def test_exhausted_retries_and_rejected_requests_fail_items_not_the_run(tmp_path):
    faults = {"down": lambda attempt: Reply(status=503), "broken": lambda attempt: Reply.malformed(),
              "too-long": lambda attempt: Reply(status=400), "fine": None}
    rows = retrieved_rows(4)
    for row, name in zip(rows, faults):
        row["question"] = f"{name} asks?"
    with OpenAIServer(first_attempt_fault(faults, RATED)) as server:  # a rating: fine for both runs
        res = generate_answers(rows, "openai:gen", base_url=server.base_url, api_key="k", cache_dir=tmp_path, retry=FAST)
        judged = judge_pairs(["x"] * 4, ["y"] * 4, [f"{n} asks?" for n in faults], ids=list(faults), judge="openai:j",
                             base_url=server.base_url, api_key="k", cache_dir=tmp_path, retry=FAST)
    by_name = dict(zip(faults, res["predictions"]))
    assert [by_name[n]["failed"] for n in faults] == [True, True, True, False]
    assert "503" in by_name["down"]["error"] and "malformed" in by_name["broken"]["error"]
    assert "400" in by_name["too-long"]["error"]
    assert res["n_failed"] == 3 and res["errors"]["503"] == 3 and res["errors"]["malformed"] == 2
    assert res["errors"]["400"] == 1
    assert [v["failed"] for v in judged["verdicts"]] == [True, True, True, False]
    assert judged["n_failed"] == 3 and judged["errors"]["400"] == 1


# --------------------------------------------------------------------------------------------
# Fatal errors: stop at once, say why, cache nothing
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("status, words", [(401, ["authentication failed", "OPENAI_API_KEY"]),
                                           (403, ["permission denied"]),
                                           (404, ["not found", "model name"])])
def test_fatal_errors_stop_the_judge_at_once(tmp_path, capsys, monkeypatch, status, words):
    preds = prediction_rows(300)
    with OpenAIServer(lambda body, attempt: Reply(status=status)) as server:
        argv = ["judge", "--predictions", write_jsonl(tmp_path / "a.jsonl", preds), "--versus",
                write_jsonl(tmp_path / "b.jsonl", preds), "--judge", "openai:judge-x", "--base-url",
                server.base_url, "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache",
                "--max-concurrency", "4", "--no-progress"]
        if status == 401:  # a real subprocess once; in this process otherwise (faster)
            result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)
            code, stdout, stderr = result.returncode, result.stdout, result.stderr
        else:
            monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
            code, stdout, stderr = cli(argv, capsys)
        n_requests = len(server.requests)
        base_url = server.base_url
    assert code == 3
    assert n_requests <= 4  # stopped at once: the other ~296 pairs were never sent
    assert "Traceback" not in stderr and base_url in stderr and "'judge-x'" in stderr
    for word in words:
        assert word in stderr
    assert FAKE_KEY not in stderr + stdout
    assert read_jsonl(tmp_path / "run" / "verdicts.jsonl") == [] and not (tmp_path / "run" / "summary.json").exists()
    with sqlite3.connect(tmp_path / "cache" / "completions.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == 0


@pytest.mark.parametrize("status", [401, 404])
def test_fatal_errors_stop_generation_at_once(tmp_path, capsys, status):
    rows = retrieved_rows(200)
    out = tmp_path / "preds.jsonl"
    with OpenAIServer(lambda body, attempt: Reply(status=status)) as server:
        code, stdout, err = cli(["generate", "--retrieved", write_jsonl(tmp_path / "r.jsonl", rows), "--model",
                                 "openai:gen-x", "--base-url", server.base_url, "--api-key", FAKE_KEY, "--out", out,
                                 "--cache-dir", tmp_path / "cache", "--max-concurrency", "4"], capsys)
        assert len(server.requests) <= 4
    assert code == 3 and "'gen-x'" in err and "re-run the same command" in err
    assert FAKE_KEY not in err + stdout
    assert read_jsonl(out) == [] and not summary_path(out).exists()
    with sqlite3.connect(tmp_path / "cache" / "completions.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == 0


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_an_unreachable_server_ends_with_a_hint_to_check_the_url(tmp_path, capsys, monkeypatch, command):
    import metric_arena.llm._runner as runner

    monkeypatch.setattr(runner, "RetryPolicy", lambda: FAST)  # the commands' default policy retries for minutes
    nowhere = "http://127.0.0.1:9/v1"  # nothing listens there
    if command == "judge":
        preds = write_jsonl(tmp_path / "a.jsonl", prediction_rows(2))
        other = write_jsonl(tmp_path / "b.jsonl", prediction_rows(2, answer="B"))
        argv = ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--out", tmp_path / "run"]
    else:
        retrieved = write_jsonl(tmp_path / "retrieved.jsonl", retrieved_rows(2))
        argv = ["generate", "--retrieved", retrieved, "--model", "openai:m", "--out", tmp_path / "preds.jsonl"]
    code, stdout, err = cli(argv + ["--base-url", nowhere, "--api-key", FAKE_KEY, "--cache-dir", tmp_path / "c",
                                    "--no-progress"], capsys)
    assert code == 0 and "failed 2" in stdout and "connection: 6" in stdout  # 2 items x (1 try + 2 retries)
    assert f"no request got through to {nowhere} (connection errors or timeouts only): check --base-url" in err
    assert err.count("\n") == 1 and FAKE_KEY not in err


def test_no_unreachable_hint_when_something_got_through(tmp_path, capsys, monkeypatch):
    import metric_arena.llm._runner as runner

    monkeypatch.setattr(runner, "RetryPolicy", lambda: FAST)
    preds = write_jsonl(tmp_path / "a.jsonl", prediction_rows(2))
    other = write_jsonl(tmp_path / "b.jsonl", prediction_rows(2, answer="B"))
    reply = first_attempt_fault({"q1": lambda attempt: Reply(status=-1)}, RATED)  # q1 never answered
    with OpenAIServer(reply) as server:
        code, stdout, err = cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--out",
                                 tmp_path / "run", "--base-url", server.base_url, "--api-key", FAKE_KEY,
                                 "--cache-dir", tmp_path / "c", "--no-progress"], capsys)
    assert code == 0 and "failed 1" in stdout and "no request got through" not in err
