"""`compare --fail-if-worse` never passes what it cannot judge: each recipe of the red team (issue 34) on run
folders the real `judge` CLI wrote against the local OpenAI-compatible server, then the real `compare` CLI
as a subprocess: exit 2, one line naming the reason code, and the same code in `--json`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer
from rag_qa_arena.cli import main
from tests.robustness.helpers import FAKE_KEY, ROOT, prediction_rows, read_jsonl, subprocess_env, write_jsonl

N = 60
GATE = ("--fail-if-worse", "--min-delta", "0.02")


def rating(body: dict, attempt: int) -> str:
    """A judge that prefers STRONG answers to MID ones and MID ones to WEAK ones; a FAIL answer gets no rating."""
    user = body["messages"][-1]["content"]
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    second = re.search(r"<answer 2>\n(.*?)\n</answer 2>", user, re.S).group(1)
    if "FAIL" in first + second:
        return "<thinking>I cannot tell.</thinking>"
    rank = {"STRONG": 2, "MID": 1, "WEAK": 0}
    r1, r2 = (next(v for k, v in rank.items() if k in text) for text in (first, second))
    return f"<thinking>Compared.</thinking><rating>{0 if r1 == r2 else 1 if r1 > r2 else 2}</rating>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """BASE (strong, strict, paper order) and the red team's NEW runs, each written by `rag-qa-arena judge`."""
    root = tmp_path_factory.mktemp("gate")
    other = write_jsonl(root / "other.jsonl", prediction_rows(N, answer="MID answer"))
    files = {
        "base": prediction_rows(N, answer="STRONG answer"),
        "lost": prediction_rows(N, answer="WEAK answer"),
        "won": prediction_rows(N, answer="STRONG answer, again"),
        "failed": prediction_rows(N, answer="FAIL answer"),
        "few": prediction_rows(3, answer="WEAK answer"),
    }
    extra = {"reference_parse": ["--parse", "reference"], "both_orders": ["--order", "both"]}
    files.update({name: files["base"] for name in extra})
    out: dict[str, Path] = {}
    with OpenAIServer(rating) as server:
        for name, rows in files.items():
            system = "lost" if name == "won" else name  # the same system, judged again with better answers
            preds = write_jsonl(root / "predictions" / name / f"{system}.jsonl", rows)
            out[name] = root / "runs" / name
            code = main([str(a) for a in ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:judge",
                                "--base-url", server.base_url, "--api-key", FAKE_KEY, "--out", out[name],
                                "--cache-dir", root / "cache", "--no-progress", *extra.get(name, [])]])
            assert code == (3 if name == "failed" else 0), name
    # every qid twice, lost and then won (the two real runs' verdicts one after the other)
    out["twice"] = root / "runs" / "twice"
    shutil.copytree(out["lost"], out["twice"])
    (out["twice"] / "verdicts.jsonl").write_bytes((out["lost"] / "verdicts.jsonl").read_bytes()
                                                  + (out["won"] / "verdicts.jsonl").read_bytes())
    # an empty verdicts.jsonl beside a copy of BASE's summary
    out["empty"] = root / "runs" / "empty"
    out["empty"].mkdir()
    (out["empty"] / "verdicts.jsonl").write_text("")
    shutil.copy(out["base"] / "summary.json", out["empty"] / "summary.json")
    return out


def compare(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_qa_arena", "compare", *map(str, argv)], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True, timeout=120)


def assert_refused(done: subprocess.CompletedProcess, reason: str, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"compare refused ({reason})" in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)


def test_the_runs_are_what_the_recipes_say(runs):
    base = read_jsonl(runs["base"] / "verdicts.jsonl")
    assert len(base) == N and {v["outcome"] for v in base} == {"win"}
    assert {v["outcome"] for v in read_jsonl(runs["lost"] / "verdicts.jsonl")} == {"loss"}
    assert {v["outcome"] for v in read_jsonl(runs["failed"] / "verdicts.jsonl")} == {None}
    assert len(read_jsonl(runs["few"] / "verdicts.jsonl")) == 3
    assert json.loads((runs["reference_parse"] / "summary.json").read_text())["parse"] == "reference"
    assert json.loads((runs["both_orders"] / "summary.json").read_text())["order"] == "both"


def test_a_clearly_worse_run_still_fails_the_gate_and_a_copy_passes(runs, tmp_path):
    done = compare(runs["base"], runs["lost"], *GATE)
    assert done.returncode == 1 and "new is significantly worse" in done.stdout, done.stderr
    copy = tmp_path / "copy"
    shutil.copytree(runs["base"], copy)
    done = compare(runs["base"], copy, *GATE)
    assert done.returncode == 0 and "not significantly worse" in done.stdout, done.stderr


@pytest.mark.parametrize("recipe, argv, reason, words", [
    ("every NEW pair failed", ("base", "failed"), "no_judged_pairs", ("NEW", "none of its 60 pairs was judged")),
    ("every BASE pair failed", ("failed", "base"), "no_judged_pairs", ("BASE",)),
    ("NEW holds every qid twice", ("base", "twice"), "repeated_qids", ("60 qid(s) appear more than once",)),
    ("BASE holds every qid twice", ("twice", "base"), "repeated_qids", ("BASE",)),
    ("NEW parsed as the reference parses", ("base", "reference_parse"), "setting_changed",
     ("parse strict in BASE, reference in NEW", "--allow-setting-change")),
    ("NEW judged in both orders", ("base", "both_orders"), "setting_changed", ("order paper in BASE, both in NEW",)),
    ("NEW on 3 of BASE's 60 questions", ("base", "few"), "too_few_shared", ("only 3 question(s)", "--min-shared")),
    ("the same folder twice", ("base", "base"), "same_run", ("the same run folder",)),
    ("an empty verdicts.jsonl", ("base", "empty"), "empty_run", ("verdicts.jsonl is empty",)),
])
def test_the_gate_refuses_each_recipe_and_names_why(runs, recipe, argv, reason, words):
    done = compare(*(runs[name] for name in argv), *GATE)
    assert_refused(done, reason, *words)
    assert "different judges" not in done.stderr
    done = compare(*(runs[name] for name in argv), *GATE, "--json")
    assert done.returncode == 2
    refused = json.loads(done.stdout)
    assert refused["status"] == "refused" and refused["reason"] == reason and refused["exit_code"] == 2
    assert words[0] in refused["message"]


def test_the_same_folder_through_another_path_is_the_same_run(runs):
    assert_refused(compare(runs["base"], runs["base"].parent / ".." / "runs" / "base", *GATE), "same_run")


def test_a_setting_change_is_compared_when_allowed_and_said_in_json(runs):
    done = compare(runs["base"], runs["both_orders"], *GATE, "--allow-setting-change", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "not_worse" and result["new"]["order"] == "both" and result["base"]["order"] == "paper"
    assert any("order paper in BASE, both in NEW" in line for line in result["warnings"])
    assert "compared anyway" in done.stderr


def test_min_shared_takes_a_count_and_a_share(runs):
    # 3 shared questions, all lost: compared once the minimum allows it (and too few to be significant)
    done = compare(runs["base"], runs["few"], *GATE, "--min-shared", "3", "--min-shared", "0.05", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["n_shared_judged"] == 3 and result["min_shared"] == {"count": 3, "share": 0.05}
    assert_refused(compare(runs["base"], runs["few"], *GATE, "--min-shared", "3"), "too_few_shared", "50%")
    assert_refused(compare(runs["base"], runs["few"], *GATE, "--min-shared", "0.01"), "too_few_shared", "at least 10")
    assert compare(runs["base"], runs["few"], *GATE, "--min-shared", "0").returncode == 0
    done = compare(runs["base"], runs["few"], "--min-shared", "lots")
    assert done.returncode == 2 and "not a count" in done.stderr
    done = compare(runs["base"], runs["few"], "--min-shared", "4", "--min-shared", "5")
    assert done.returncode == 2 and "at most one count" in done.stderr
