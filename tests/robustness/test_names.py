"""Bad values and names are refused before any request; stray or hostile entries in runs/* are
one-line warnings; shared-cache claims do not outlive their process when its pid is reused;
degenerate samples get no interval (or a wide one) and are separated from no one; and the
friction a new user met: whole system names in tables, next steps that keep runs/* clean, a
closed pipe that is no error. Real local server, real subprocesses and signals, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from metric_arena import RunConfig, judge_pairs
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    ROOT,
    cli,
    prediction_rows,
    read_jsonl,
    retrieved_rows,
    run_cli,
    subprocess_env,
    write_jsonl,
)
from metric_arena.judge import JudgeInputs

RATED = "<thinking>Scripted.</thinking><rating>1</rating>"


def _judge_argv(tmp_path, server, *extra, n: int = 3) -> list:
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(n))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(n, answer="Other"))
    return ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--base-url", server.base_url,
            "--api-key", FAKE_KEY, "--cache-dir", tmp_path / "cache", "--no-progress", *extra]


# --------------------------------------------------------------------------------------------
# Bad values: refused before any request
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flags, said", [
    (["--seed", "-1"], "seed) must be a non-negative integer"),
    (["--seed", str(2**32)], "must be below 2**32"),
    (["--timeout", "nan"], "--timeout must be a positive, finite number of seconds"),
    (["--timeout", "inf"], "--timeout must be a positive, finite number of seconds"),
])
def test_bad_seed_and_timeout_are_refused_before_any_request(tmp_path, capsys, flags, said):
    with OpenAIServer(lambda body, attempt: RATED) as server:
        code, _, err = cli([*_judge_argv(tmp_path, server), "--out", tmp_path / "run", *flags], capsys)
        tour, _, tour_err = cli(["tournament", tmp_path / "sys.jsonl", tmp_path / "other.jsonl", "--judge", "openai:j",
                                 "--base-url", server.base_url, "--api-key", FAKE_KEY, "--out", tmp_path / "t",
                                 "--cache-dir", tmp_path / "cache", *flags], capsys)
        assert server.requests == []
    assert code == 2 and err.count("\n") == 1 and said in err
    assert tour == 2 and said in tour_err
    assert not (tmp_path / "run" / "verdicts.jsonl").exists()


def test_report_refuses_a_seed_numpy_cannot_take(tmp_path, capsys):
    _write_run(tmp_path / "runs" / "x", "x", ["win", "loss"] * 6)
    code, _, err = cli(["report", tmp_path / "runs" / "x", "--out", tmp_path / "lb", "--seed", "-1"], capsys)
    assert code == 2 and "--seed: '-1' must be an integer from 0 to 4294967295" in err and "Traceback" not in err
    assert not (tmp_path / "lb").exists()


# --------------------------------------------------------------------------------------------
# Names: reserved, colliding, not UTF-8
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flags, said", [
    (["--name", "LFRQA"], "'LFRQA' is reserved for LFRQA's reference answers"),
    (["--versus-name", "LFRQA"], "pass --versus-name with another name"),
    (["--name", "twin", "--versus-name", "twin"], "both named 'twin'"),
    (["--versus-name", "sys"], "both named 'sys'"),
])
def test_reserved_and_colliding_names_are_refused_before_anything_is_judged(tmp_path, capsys, flags, said):
    with OpenAIServer(lambda body, attempt: RATED) as server:
        code, _, err = cli([*_judge_argv(tmp_path, server), "--out", tmp_path / "run", *flags], capsys)
        assert server.requests == []
    assert code == 2 and err.count("\n") == 1 and said in err


def test_a_versus_file_named_lfrqa_is_not_passed_off_as_the_reference(tmp_path, capsys):
    with OpenAIServer(lambda body, attempt: RATED) as server:
        argv = _judge_argv(tmp_path, server)
        (tmp_path / "other.jsonl").rename(tmp_path / "LFRQA.jsonl")
        argv[argv.index("--versus") + 1] = tmp_path / "LFRQA.jsonl"
        code, _, err = cli([*argv, "--out", tmp_path / "run"], capsys)
        assert server.requests == []
    assert code == 2 and "would be named 'LFRQA'" in err and "--versus-name" in err


def test_the_python_api_refuses_the_same_names(tmp_path):
    run = RunConfig(base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="reserved for LFRQA"):
        judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"], system="LFRQA"), run=run)
    with pytest.raises(ValueError, match="both named 'B'"):
        judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"], system="B", opponent="B"),
                    run=run)


def test_names_that_are_not_utf8_are_refused_at_once(tmp_path):
    with OpenAIServer(lambda body, attempt: RATED) as server:
        argv = [*map(os.fsencode, map(str, _judge_argv(tmp_path, server)))]
        out = os.fsencode(tmp_path) + b"/run-\xff\xfe"  # bytes in argv, as a shell passes a folder name
        odd = os.fsencode(tmp_path) + b"/sys-\xe9.jsonl"  # a Latin-1 file name: the --versus run's default name
        os.link(tmp_path / "sys.jsonl", odd)
        runs = [
            subprocess.run([sys.executable, "-m", "rag_qa_arena", *argv, "--out", out, "--name", b"caf\xe9"], cwd=ROOT,
                           env=subprocess_env(), capture_output=True, timeout=120),
            subprocess.run([sys.executable, "-m", "rag_qa_arena", *argv, "--out", out, "--predictions", odd],
                           cwd=ROOT, env=subprocess_env(), capture_output=True, timeout=120),
        ]
        # The run folder's own name (a run against LFRQA is named after it), through the Python API.
        with pytest.raises(ValueError, match=r"'run-\\xff\\xfe' is not valid UTF-8.*pass --name NAME"):
            judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"]), out=os.fsdecode(out),
                        run=RunConfig(base_url=server.base_url, api_key=FAKE_KEY, cache_dir=tmp_path / "c"))
        assert server.requests == []
    for result, said in zip(runs, ("'caf\\xe9' is not valid UTF-8", "'sys-\\xe9' is not valid UTF-8")):
        err = result.stderr.decode("utf-8", "replace")
        assert result.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert said in err and "in UTF-8" in err
    assert not os.path.exists(out + b"/verdicts.jsonl")


def test_a_tournament_system_named_like_a_match_folder_is_refused_with_the_right_hint(tmp_path, capsys):
    a = write_jsonl(tmp_path / "a.jsonl", prediction_rows(3))
    b = write_jsonl(tmp_path / "b.jsonl", prediction_rows(3, answer="B"))
    ab = write_jsonl(tmp_path / "a__vs__b.jsonl", prediction_rows(3, answer="AB"))
    code, _, err = cli(["tournament", a, b, ab, "--judge", "openai:j", "--base-url", "http://127.0.0.1:9/v1",
                        "--api-key", FAKE_KEY, "--out", tmp_path / "t"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "'a__vs__b' holds '__vs__'" in err and "--name FILE=NAME" in err and "--overwrite" not in err
    assert not (tmp_path / "t").exists()


# --------------------------------------------------------------------------------------------
# Stray and hostile entries in runs/*
# --------------------------------------------------------------------------------------------
def _write_run(folder, system, outcomes, *, domain="fiqa", summary=None):
    rows = [{"qid": f"q{i}", "domain": domain, "system_a": system, "system_b": "LFRQA", "outcome": o,
             "failed": o is None, "judgments": []} for i, o in enumerate(outcomes)]
    write_jsonl(folder / "verdicts.jsonl", rows)
    if summary is not None:
        (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


def test_hostile_entries_in_runs_are_one_line_warnings_never_a_traceback(tmp_path):
    runs = tmp_path / "runs"
    _write_run(runs / "good", "good", ["win", "tie", "loss"] * 8)
    _write_run(runs / "mathy", "mathy", ["win", "loss"] * 12, domain="$\\frac{a}{$b")  # matplotlib math text
    _write_run(runs / "array", "array", ["win"] * 5, summary=[1, 2, 3])
    _write_run(runs / "typed", "typed", ["win", "loss"] * 6, summary={"system": "typed", "judges": 5, "n": "12"})
    write_jsonl(runs / "intdomain" / "verdicts.jsonl", [{"qid": "q1", "domain": 7, "system_a": "intdomain",
                                                          "system_b": "LFRQA", "outcome": "win"}])
    (runs / "loop").symlink_to(runs / "loop")
    (runs / "dangling").symlink_to(runs / "nowhere")
    (runs / "notes.txt").write_text("stray", encoding="utf-8")
    entries = sorted(runs.iterdir())
    result = run_cli(["report", *entries, "--out", tmp_path / "lb"], COLUMNS="200")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    for name, said in (("array", "expected a JSON object, got list"), ("loop", "a link that leads nowhere"),
                       ("dangling", "a link that leads nowhere"), ("notes.txt", "not a run folder"),
                       ("typed", "fields of the wrong type (judges is int; n is str)"),
                       ("intdomain", "domain 7 is not a string")):
        assert any(name in line and said in line for line in warnings), (name, result.stderr)
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert {e["system"] for e in board} >= {"good", "mathy", "typed", "intdomain"}
    assert (tmp_path / "lb" / "win_rates.png").stat().st_size > 0


# --------------------------------------------------------------------------------------------
# Degenerate statistics
# --------------------------------------------------------------------------------------------
def test_one_judged_pair_or_three_of_fifty_get_no_rating_interval_and_are_never_separated(tmp_path):
    from metric_arena.report import write_report
    from metric_arena.stats import BattleCounts, bootstrap_bradley_terry, intervals_separated

    counts = BattleCounts.from_battles([("one", "LFRQA", "win")] + [("big", "LFRQA", "win")] * 30
                                       + [("big", "LFRQA", "loss")] * 30)
    ratings = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=200)
    assert ratings["one"]["rating_ci"] is None and ratings["big"]["rating_ci"] is not None
    assert not intervals_separated(ratings["one"]["rating_ci"], ratings["big"]["rating_ci"])

    runs = tmp_path / "runs"
    _write_run(runs / "one", "one", ["win"])
    _write_run(runs / "few", "few", ["win"] * 3 + [None] * 47)
    _write_run(runs / "many", "many", ["win", "tie", "loss", "loss"] * 15)
    board = write_report(sorted(runs.iterdir()), tmp_path / "lb", n_boot=200, plots=False)
    by = {e["system"]: e for e in board.entries}
    for name in ("one", "few"):
        assert by[name]["rating_ci"] is None and by[name]["rank"] is None  # not ranked, no interval
        low, high = by[name]["win_rate_ci"]
        assert high - low > 0.3  # Wilson's interval: wide, never [1.0, 1.0]
    assert by["many"]["rating_ci"][1] > by["many"]["rating_ci"][0] and by["many"]["rank"] is not None


def test_the_terminal_leaderboard_says_no_interval(tmp_path):
    runs = tmp_path / "runs"
    _write_run(runs / "one", "one", ["win"])
    _write_run(runs / "many", "many", ["win", "loss"] * 10)
    result = run_cli(["report", runs / "one", runs / "many", "--out", tmp_path / "lb", "--no-plots"])
    assert result.returncode == 0 and "no interval" in result.stdout and "2151-2151" not in result.stdout


# --------------------------------------------------------------------------------------------
# Shared-cache claims and reused pids
# --------------------------------------------------------------------------------------------
_CLAIMER = """
import sys, time
from metric_arena.llm._cache import CompletionCache, claim_owner
cache = CompletionCache(sys.argv[1])
owner = claim_owner()
assert cache.claim("the-key", owner, ttl=3600)
print(owner, flush=True)
time.sleep(600)
"""


def test_a_claim_of_a_killed_process_lapses_even_when_its_pid_lives_on(tmp_path):
    from metric_arena.llm._cache import CompletionCache, claim_owner

    path = tmp_path / "cache.sqlite"
    child = subprocess.Popen([sys.executable, "-c", _CLAIMER, str(path)], cwd=ROOT, env=subprocess_env(),
                             stdout=subprocess.PIPE, text=True)
    owner = child.stdout.readline().strip()
    cache = CompletionCache(path)
    mine = claim_owner()
    try:
        assert cache.claimed("the-key", mine)  # a live owner: wait for it
        os.kill(child.pid, signal.SIGKILL)
        time.sleep(0.3)  # killed, not yet reaped: a zombie that kill(pid, 0) still finds
        assert not cache.claimed("the-key", mine)
    finally:
        child.kill()
        child.wait()
    # The same claim as if the pid had been given to another process (a restarted container where
    # the run is PID 1 again): this test's own pid, alive, but started at another time.
    host, _, start, token = owner.split(":")
    reused = f"{host}:{os.getpid()}:{start}:{token}"
    cache.release("the-key", owner)
    assert cache.claim("the-key", reused, ttl=3600)
    assert not cache.claimed("the-key", mine)
    assert cache.claim("the-key", mine, ttl=3600)  # taken over at once, no wait for the expiry
    cache.close()


# --------------------------------------------------------------------------------------------
# Friction a new user met
# --------------------------------------------------------------------------------------------
LONG = "a-very-long-system-name-that-goes-on-and-on-v2"


def test_terminal_tables_never_cut_a_system_name(tmp_path):
    runs = tmp_path / "runs"
    _write_run(runs / LONG, LONG, ["win", "tie", "loss"] * 5)
    _write_run(runs / "short", "short", ["win", "loss", "loss"] * 5)
    for columns in ("80", "120"):
        result = run_cli(["report", *sorted(runs.iterdir()), "--out", tmp_path / "lb", "--no-plots"], COLUMNS=columns)
        assert result.returncode == 0
        rows = [line for line in result.stdout.splitlines() if "a-very-long" in line]
        assert rows and all(LONG in line for line in rows), result.stdout


def test_next_steps_keep_the_leaderboard_out_of_runs(tmp_path, capsys):
    from rag_qa_arena._cmd_tournament import next_step

    assert next_step("runs/arena") == "rag-qa-arena report runs/arena/* --out runs/arena-leaderboard"
    assert next_step("runs/arena/") == "rag-qa-arena report runs/arena/* --out runs/arena-leaderboard"
    retrieved = write_jsonl(tmp_path / "r.jsonl", retrieved_rows(2))
    with OpenAIServer(lambda body, attempt: RATED) as server:
        code, out, _ = cli(["generate", "--retrieved", retrieved, "--model", "openai:m", "--base-url", server.base_url,
                            "--api-key", FAKE_KEY, "--out", tmp_path / "answers.jsonl", "--no-progress",
                            "--cache-dir", tmp_path / "cache"], capsys)
        assert code == 0 and f"next: rag-qa-arena judge --predictions {tmp_path / 'answers.jsonl'}" in out
        code, out, _ = cli([*_judge_argv(tmp_path, server), "--out", tmp_path / "runs" / "x"], capsys)
    assert code == 0 and f"next: rag-qa-arena report {tmp_path / 'runs'}/* --out {tmp_path / 'runs'}-leaderboard" in out
    assert [r["outcome"] for r in read_jsonl(tmp_path / "runs" / "x" / "verdicts.jsonl")]


def test_piping_into_a_reader_that_leaves_is_no_error(tmp_path):
    runs = tmp_path / "runs"
    for k in range(30):
        _write_run(runs / f"system-{k:02d}", f"system-{k:02d}", ["win", "tie", "loss"] * 4)
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(3))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(3, answer="Other"))
    commands = {  # rich tables, argparse's help, and plain print()
        "report": ["report", *sorted(runs.iterdir()), "--out", tmp_path / "lb", "--no-plots"],
        "judge --help": ["judge", "--help"],
        "compare": ["compare", runs / "system-00", runs / "system-01"],  # plain print()
    }
    if os.environ.get("LFRQA_DATA_DIR"):  # a dry run reads the pinned judge template
        commands["judge --dry-run"] = ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:gpt-4o",
                                       "--dry-run"]
    for name, argv in commands.items():
        for leave_at_once in (True, False):
            child = subprocess.Popen([sys.executable, "-m", "rag_qa_arena", *map(str, argv)], cwd=ROOT,
                                     env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if not leave_at_once:
                child.stdout.readline()  # what `head -1` does: read a line, then leave
            child.stdout.close()
            err = child.stderr.read().decode()
            code = child.wait(timeout=120)
            assert code in (0, 1), (name, code, err)
            assert "Broken pipe" not in err and "Traceback" not in err and "Errno 32" not in err, (name, err)
