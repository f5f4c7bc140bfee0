"""Server faults during judge and generation runs, against a real local server: each fault gets
its treatment (retry, re-ask, or a failed item), the run completes, and every fault is counted
in the summary. Authentication and unknown-model errors stop the run at once."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time

import pytest

from metric_arena import RunConfig, judge_pairs
from metric_arena.generate import GenerationConfig, generate_answers, summary_path
from metric_arena.llm import Completion, RetryPolicy
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
from metric_arena.judge import JudgeInputs

FAST = RetryPolicy(max_retries=2, initial=0.0, multiplier=1.0, jitter=0.0)
RATED = "<thinking>Scripted.</thinking><rating>1</rating>"


def first_attempt_fault(faults: dict, ok: str, *, run_over: threading.Event | None = None):
    """A server reply: the fault of the question on the first arrival of a body, then ``ok``. A fault
    ``"hang"`` holds its first attempt until ``run_over`` is set (the test sets it once the run ended),
    so that the client's timeout alone ends that attempt, however slow the machine."""

    def reply(body, attempt):
        fault = faults.get(query_of(body).split()[0])
        if fault == "hang":
            if attempt == 1:
                run_over.wait(300)
                return Reply(status=-1)
            return ok
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
    "slow": "hang",  # its first attempt is never answered: only the client's --timeout ends it
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
    run_over = threading.Event()
    # --timeout 5: the hanging attempt ends at it; every other reply is local and takes milliseconds, so even a
    # machine slowed a thousandfold counts exactly one timeout
    with OpenAIServer(first_attempt_fault(JUDGE_FAULTS, RATED, run_over=run_over)) as server:
        try:
            result = run_cli(["judge", "--predictions", write_jsonl(tmp_path / "a.jsonl", preds),
                              "--versus", write_jsonl(tmp_path / "b.jsonl", refs), "--judge", "openai:judge",
                              "--base-url", server.base_url, "--out", tmp_path / "run", "--cache-dir",
                              tmp_path / "cache", "--timeout", "5", "--no-progress"], timeout=600,
                             OPENAI_API_KEY=FAKE_KEY)
        finally:
            run_over.set()
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
    "slow": "hang",
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
    run_over = threading.Event()
    with OpenAIServer(first_attempt_fault(GENERATION_FAULTS, "Answer: fine.", run_over=run_over)) as server:
        try:
            code, stdout, err = cli(["generate", "--retrieved", write_jsonl(tmp_path / "r.jsonl", rows), "--model",
                                     "openai:gen", "--base-url", server.base_url, "--out", out, "--cache-dir",
                                     tmp_path / "cache", "--timeout", "5", "--no-progress"], capsys)
        finally:
            run_over.set()
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
        run = RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path, retry=FAST)
        res = generate_answers(rows, "openai:gen", run=run)
        judged = judge_pairs(JudgeInputs(predictions=["x"] * 4, references=["y"] * 4,
                                         questions=[f"{n} asks?" for n in faults], ids=list(faults)),
                             judge="openai:j", run=run)
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


# --------------------------------------------------------------------------------------------
# Fail fast: a server that cannot be reached, or answers nothing usable, ends the run early, exit 3
# --------------------------------------------------------------------------------------------
NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens there


def command_argv(tmp_path, command: str, n: int) -> list:
    if command == "judge":
        preds = write_jsonl(tmp_path / "a.jsonl", prediction_rows(n))
        other = write_jsonl(tmp_path / "b.jsonl", prediction_rows(n, answer="B"))
        return ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--out", tmp_path / "run",
                "--cache-dir", tmp_path / "c", "--no-progress"]
    retrieved = write_jsonl(tmp_path / "retrieved.jsonl", retrieved_rows(n))
    return ["generate", "--retrieved", retrieved, "--model", "openai:m", "--out", tmp_path / "preds.jsonl",
            "--cache-dir", tmp_path / "c", "--no-progress"]


def short_window(monkeypatch, seconds: float) -> None:
    """The commands' own retry policy, with a shorter fail-fast window (20 s by default)."""
    import functools

    import metric_arena.llm._runner as runner

    monkeypatch.setattr(runner, "RetryPolicy", functools.partial(RetryPolicy, fail_fast_after=seconds))


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_an_unreachable_server_stops_the_run_early_with_exit_3(tmp_path, capsys, monkeypatch, command):
    short_window(monkeypatch, 2.0)
    code, stdout, err = cli(command_argv(tmp_path, command, 50) + ["--base-url", NOWHERE, "--api-key", FAKE_KEY],
                            capsys)
    assert code == 3, err
    assert err.count("\n") == 1 and "Traceback" not in err and FAKE_KEY not in err
    assert NOWHERE in err and "--base-url" in err and "nothing got through to openai:" in err
    # what failed, counted; stopped before the items' retries were spent (the default policy alone tried
    # each item 1 + 8 times, for minutes: 2 pairs took 208 s)
    attempts = int(re.search(r"connection x(\d+)", err).group(1))
    assert attempts < 50 * (1 + RetryPolicy().max_retries), attempts


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_a_server_that_only_answers_503_stops_the_run_early(tmp_path, capsys, monkeypatch, command):
    short_window(monkeypatch, 2.0)
    with OpenAIServer(lambda body, attempt: Reply(status=503)) as server:
        code, stdout, err = cli(command_argv(tmp_path, command, 20) + ["--base-url", server.base_url], capsys)
        n_requests = len(server.requests)
    assert code == 3, err
    assert "server error (HTTP 503)" in err and "Scripted error 503" in err  # the server's own answer
    assert "--base-url" in err and err.count("\n") == 1
    assert n_requests < 20 * 4  # well before every item's retries are spent


@pytest.mark.slow  # ~20 s: the real default window, in a real subprocess
def test_the_default_window_ends_an_unreachable_run_within_tens_of_seconds(tmp_path):
    started = time.monotonic()
    result = run_cli(command_argv(tmp_path, "judge", 50) + ["--base-url", NOWHERE], OPENAI_API_KEY=FAKE_KEY)
    elapsed = time.monotonic() - started
    assert result.returncode == 3, result.stderr
    assert 15 < elapsed < 40, elapsed  # before: 50 pairs retried for 220-250 s, then exit 0
    assert "--base-url" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_a_run_in_which_every_item_failed_exits_3_and_says_so(tmp_path, capsys, monkeypatch, command):
    monkeypatch.setattr("metric_arena.llm._runner.RetryPolicy", lambda: FAST)  # spent before the window ends
    code, stdout, err = cli(command_argv(tmp_path, command, 2) + ["--base-url", NOWHERE, "--api-key", FAKE_KEY],
                            capsys)
    assert code == 3 and "failed 2" in stdout and "connection: 6" in stdout  # 2 items x (1 try + 2 retries)
    assert f"no request got through to {NOWHERE} (connection errors or timeouts only: connection: 6): check " \
           "--base-url" in err
    assert err.count("\n") == 1 and FAKE_KEY not in err
    # a server that answers, but never with anything usable (judge: no rating; generate: no choices)
    bad = Reply(content="I refuse to rate.") if command == "judge" else Reply.empty_choices()
    with OpenAIServer(lambda body, attempt: bad) as server:
        code, stdout, err = cli(command_argv(tmp_path / "2", command, 2) + ["--base-url", server.base_url], capsys)
    items = "pairs" if command == "judge" else "questions"
    assert code == 3 and f"every one of the 2 {items} failed (errors " in err, err


def test_after_the_first_reply_failures_are_retried_not_fatal(tmp_path, capsys, monkeypatch):
    """Once something got through, a server that then fails (here for longer than the window) is
    retried with the normal policy, and the items it fails are failed items, not a fatal error."""
    monkeypatch.setattr("metric_arena.llm._runner.RetryPolicy",
                        lambda: RetryPolicy(max_retries=3, initial=0.4, multiplier=1.0, jitter=0.0, fail_fast_after=0.5))
    reply = first_attempt_fault({"q1": lambda attempt: Reply(status=-1)}, RATED)  # q1 never answered
    with OpenAIServer(reply) as server:
        argv = command_argv(tmp_path, "judge", 2) + ["--base-url", server.base_url, "--max-concurrency", "1"]
        code, stdout, err = cli(argv, capsys)
    assert code == 0 and "failed 1" in stdout and "connection: 4" in stdout, err
    assert err == ""


# --------------------------------------------------------------------------------------------
# Bounded waits, cached rows re-checked, oversized replies
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["judge", "generate"])
def test_timeout_bounds_a_whole_attempt_even_when_bytes_keep_coming(tmp_path, command):
    """A server that sends its body one byte every 0.1 s (~60 s in all) never leaves a gap as long
    as the timeout, yet each attempt ends at --timeout."""
    once = RetryPolicy(max_retries=1, initial=0.0, jitter=0.0)
    with OpenAIServer(lambda body, attempt: Reply(trickle=0.1)) as server:
        run = RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path, retry=once, timeout=1.0)
        if command == "judge":
            res = judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"]), judge="openai:j",
                              run=run)
        else:
            res = generate_answers(retrieved_rows(1), "openai:g", run=run)
    # two attempts, each ended by the timeout (before: the first alone took the whole minute and its reply
    # counted, so this would read n_failed 0 and no errors)
    assert res["n_failed"] == 1 and res["errors"] == {"timeout": 2}
    failure = res["verdicts"][0]["judgments"][0]["error"] if command == "judge" else res["predictions"][0]["error"]
    assert "no complete reply within the 1 s timeout" in failure


def test_a_cached_row_marked_valid_without_a_rating_is_asked_again(tmp_path):
    """A row stored as valid that holds no rating (an older validator, a hand edit, another tool)
    is checked again when read: it is asked once more instead of failing its pair forever."""
    from metric_arena.llm import CompletionCache, cache_key, make_backend
    from metric_arena.judge import judge_request

    with OpenAIServer(lambda body, attempt: RATED) as server:
        request = judge_request("q", "a", "b", 2)
        identity = make_backend("openai:j", base_url=server.base_url, api_key="k").identity()
        with CompletionCache(tmp_path) as cache:
            cache.put(cache_key(identity, request), Completion("no rating here"), valid=True)
        run = RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path)
        first = judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"]), judge="openai:j",
                            run=run)
        again = judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"]), judge="openai:j",
                            run=run)
        n_requests = len(server.requests)
    assert first["n_failed"] == 0 and first["verdicts"][0]["outcome"] == "loss"  # rated 1, the prediction is 2nd
    assert first["errors"] == {"invalid_cached": 1} and first["n_sent"] == 1
    assert again["n_sent"] == 0 and again["n_failed"] == 0 and again["errors"] == {}  # the re-ask is cached now
    assert n_requests == 1


def test_oversized_replies_are_cut_and_flagged(tmp_path):
    """Six 2 MB replies to 256-token requests used to make a 12 MB verdicts.jsonl. (A reply body under
    the body limit, 1 MiB and more, is read and its text cut; a longer one is never read whole: see
    test_odd_replies.)"""
    from metric_arena.llm._runner import max_reply_chars

    huge = "<thinking>" + "blah " * 150_000 + "</thinking><rating>1</rating>"  # 750 KB, rating at the end
    preds = prediction_rows(6)
    with OpenAIServer(lambda body, attempt: huge) as server:
        result = run_cli(["judge", "--predictions", write_jsonl(tmp_path / "a.jsonl", preds), "--versus",
                          write_jsonl(tmp_path / "b.jsonl", prediction_rows(6, answer="B")), "--judge", "openai:j",
                          "--base-url", server.base_url, "--out", tmp_path / "run", "--cache-dir", tmp_path / "cache",
                          "--no-progress"], OPENAI_API_KEY=FAKE_KEY)
    assert result.returncode == 0, result.stderr  # read whole before the cut: the rating at the end counts
    size = (tmp_path / "run" / "verdicts.jsonl").stat().st_size
    assert size < 6 * (max_reply_chars(256) + 2000)  # 6 pairs, each reply cut to 8,192 characters
    verdicts = read_jsonl(tmp_path / "run" / "verdicts.jsonl")
    judgments = [j for v in verdicts for j in v["judgments"]]
    assert all(j["oversized"] == len(huge) and len(j["raw"]) == max_reply_chars(256) for j in judgments)
    assert all(j["rating"] == 1 and j["attempts"] == 1 for j in judgments)  # never re-asked
    assert all(j["raw"].startswith("<thinking>blah") and j["raw"].endswith("</thinking><rating>1</rating>")
               for j in judgments)  # its beginning and its end are kept
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["errors"]["oversized"] == 6 and summary["n_failed"] == 0
    with sqlite3.connect(tmp_path / "cache" / "completions.sqlite") as conn:
        assert max(len(t) for (t,) in conn.execute("SELECT text FROM completions")) == max_reply_chars(256)
    # a generated answer is cut the same way, its line flagged
    with OpenAIServer(lambda body, attempt: "Answer: " + "x" * 50_000) as server:
        res = generate_answers(retrieved_rows(1), "openai:g", generation=GenerationConfig(max_tokens=256),
                               run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "cache"))
    line = res["predictions"][0]
    assert line["oversized"] == 50_008 and len(line["raw"]) == max_reply_chars(256) and not line["failed"]


def test_a_slow_first_reply_is_waited_for_while_the_others_fail(tmp_path):
    """An attempt in flight since before the window ended may still succeed: a server whose first
    reply comes only after it answered the others' every attempt 503 (the last one after the 1 s window)
    is not declared unreachable at 1 s. The reply waits for those 9 answers, not for a clock."""
    refused = []
    all_refused = threading.Event()

    def reply(body, attempt):
        if query_of(body).startswith("q0 "):
            all_refused.wait(300)
            return Reply(content=RATED)
        refused.append(body)
        if len(refused) >= 9:
            all_refused.set()
        return Reply(status=503)

    policy = RetryPolicy(max_retries=2, initial=0.5, multiplier=1.0, jitter=0.0, fail_fast_after=1.0)
    with OpenAIServer(reply) as server:
        res = judge_pairs(JudgeInputs(predictions=["a"] * 4, references=["b"] * 4,
                                      questions=[f"q{i} asks?" for i in range(4)]), judge="openai:j",
                          run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path, retry=policy,
                                        max_concurrency=4))
    assert [v["failed"] for v in res["verdicts"]] == [False, True, True, True]
    assert res["errors"]["503"] == 9
