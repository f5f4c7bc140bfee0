"""`rag-qa-arena compare BASE NEW`: the CI gate on the paired test, with its exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from metric_arena.report import compare_runs, load_run
from metric_arena.stats import paired_comparison
from rag_qa_arena.cli import main
from tests.test_report import make_run

pytestmark = pytest.mark.plain


def _strict_json(text: str) -> dict:
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def runs(tmp_path) -> dict[str, Path]:
    return {
        "base": make_run(tmp_path, "v1", p_win=0.6, p_tie=0.1, n=300, folder="base"),
        "same": make_run(tmp_path, "v1", p_win=0.6, p_tie=0.1, n=300, folder="same"),  # the same verdicts
        "worse": make_run(tmp_path, "v2", p_win=0.3, p_tie=0.1, n=300, folder="worse", p_failed=0.05),
    }


def test_a_clearly_worse_run_fails_the_gate_and_a_similar_one_passes(runs, capsys):
    assert main(["compare", str(runs["base"]), str(runs["worse"]), "--fail-if-worse"]) == 1
    out = capsys.readouterr().out
    assert "300 shared questions" in out and "new is significantly worse on win_rate" in out
    assert main(["compare", str(runs["base"]), str(runs["worse"])]) == 0  # reports, does not gate
    capsys.readouterr()
    assert main(["compare", str(runs["base"]), str(runs["same"]), "--fail-if-worse"]) == 0
    assert "not significantly worse" in capsys.readouterr().out
    # a drop of ~30 points is not "worse by more than 0.5"
    assert main(["compare", str(runs["base"]), str(runs["worse"]), "--fail-if-worse", "--min-delta", "0.5"]) == 0


def test_json_is_strict_and_holds_the_paired_test(runs, capsys):
    assert main(["compare", str(runs["base"]), str(runs["worse"]), "--json"]) == 0
    result = _strict_json(capsys.readouterr().out)
    expected = paired_comparison(load_run(runs["worse"]).outcomes(), load_run(runs["base"]).outcomes(),
                                 metric="win_tie_rate", names=("v2", "v1"))
    got = result["metrics"]["win_tie_rate"]
    assert got["difference"] == pytest.approx(expected["difference"]) and got["difference"] < 0
    assert got["p_value"] == pytest.approx(expected["p_value"]) and got["difference_ci"] == expected["difference_ci"]
    assert got["n_failed"] == expected["n_failed"] > 0
    assert result["worse"] is True and set(result["worse_on"]) == {"win_rate", "win_tie_rate"}


def test_bad_input_exits_2_with_one_line(runs, tmp_path):
    other_judge = make_run(tmp_path, "v3", p_win=0.6, n=50, folder="other", judge="openai:gpt-4o-mini")
    lonely = make_run(tmp_path, "v4", p_win=0.6, n=5, folder="lonely")
    lines = (lonely / "verdicts.jsonl").read_text().replace('"qid": "q', '"qid": "x').splitlines()
    (lonely / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    cases = [
        ([str(runs["base"]), str(other_judge)], "different judges"),
        ([str(runs["base"]), str(lonely)], "share no question"),
        ([str(runs["base"]), str(tmp_path / "missing")], "does not exist"),
        ([str(runs["base"]), str(runs["same"]), "--min-delta", "-1"], "--min-delta must be"),
    ]
    for argv, message in cases:
        done = subprocess.run([sys.executable, "-m", "rag_qa_arena", "compare", *argv, "--fail-if-worse"],
                              capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, (argv, done.stderr)
    assert main(["compare", str(runs["base"]), str(other_judge), "--allow-judge-change", "--min-shared", "0.1"]) == 0


def test_compare_runs_gates_on_the_whole_interval_below_minus_delta(runs):
    result = compare_runs(runs["base"], runs["worse"], min_delta=0.0)
    high = result["metrics"]["win_rate"]["difference_ci"][1]
    assert result["worse"] and high < 0
    assert not compare_runs(runs["base"], runs["worse"], min_delta=-high + 0.001)["metrics"]["win_rate"][
        "significantly_worse"]
