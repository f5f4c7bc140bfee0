"""Leaderboard from run folders: systems of known strength come out in order, with intervals that
contain the true values; JSON/PNG/HTML outputs; the `report` command."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from metric_arena.report import build_leaderboard, load_run, write_report
from metric_arena.stats import expected_score
from rag_qa_arena.cli import main
from metric_arena.judge import JudgeInputs
from metric_arena.stats import Intervals

DOMAINS = ("fiqa", "lifestyle", "recreation", "science", "technology", "writing")
JUDGE = "openai:gpt-4o"


def make_run(
    root: Path,
    system: str,
    opponent: str = "LFRQA",
    *,
    p_win: float,
    p_tie: float = 0.0,
    n: int = 200,
    seed: int = 0,
    p_failed: float = 0.0,
    judge: str = JUDGE,
    folder: str | None = None,
    summary: bool = True,
    domains=DOMAINS,
) -> Path:
    """A run folder as `rag-qa-arena judge` writes it, with outcomes sampled from known
    probabilities (win p_win, tie p_tie, loss the rest) on qids q0..q{n-1}."""
    rng = random.Random(f"{seed}:{system}:{opponent}")
    run = root / (folder or (system if opponent == "LFRQA" else f"{system}-vs-{opponent}"))
    run.mkdir(parents=True)
    with (run / "verdicts.jsonl").open("w") as handle:
        for i in range(n):
            u = rng.random()
            outcome = "win" if u < p_win else "tie" if u < p_win + p_tie else "loss"
            failed = rng.random() < p_failed
            a_position = rng.choice([1, 2])
            rating = {"tie": 0, "win": a_position, "loss": 3 - a_position}[outcome]
            row = {
                "qid": f"q{i}",
                "domain": domains[i % len(domains)] if domains else None,
                "system_a": system,
                "system_b": opponent,
                "outcome": None if failed else outcome,
                "failed": failed,
                "flipped": None,
                "no_answer_a": i % 50 == 0,
                "judgments": [
                    {
                        "judge": judge,
                        "a_position": a_position,
                        "rating": None if failed else rating,
                        "outcome": None if failed else outcome,
                        "raw": "<thinking>...</thinking>" + ("" if failed else f"<rating>{rating}</rating>"),
                        "attempts": 1,
                        "cached": False,
                    }
                ],
            }
            handle.write(json.dumps(row) + "\n")
    if summary:
        (run / "summary.json").write_text(
            json.dumps({"system": system, "opponent": opponent, "judges": [judge], "order": "random", "seed": 0})
        )
    return run


# True Elo-scale ratings (LFRQA = 1000) and tie rates. With ties counted as half a win, the
# rating a system "should" get is the one whose expected score P(win) + P(tie)/2 it has.
TRUE = {"strong": 1150, "good": 1060, "weak": 930, "poor": 850}
TIE = 0.15


def _probs(r_a: float, r_b: float, tie: float = TIE) -> tuple[float, float]:
    score = expected_score(r_a, r_b)
    return score - tie / 2, tie


@pytest.fixture(scope="module")
def known_runs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    runs = []
    for k, (system, rating) in enumerate(TRUE.items()):
        p_win, p_tie = _probs(rating, 1000)
        runs.append(make_run(root, system, p_win=p_win, p_tie=p_tie, n=2400, seed=k, p_failed=0.01))
    p_win, p_tie = _probs(TRUE["strong"], TRUE["good"])
    runs.append(make_run(root, "strong", "good", p_win=p_win, p_tie=p_tie, n=1200, seed=9))
    return runs


@pytest.fixture(scope="module")
def known_board(known_runs):
    return build_leaderboard(known_runs, n_boot=400, seed=1, confidence=0.99)


def test_known_strengths_order_and_intervals(known_board):
    entries = {e["system"]: e for e in known_board.entries}
    assert [e["system"] for e in known_board.entries] == ["strong", "good", "LFRQA", "weak", "poor"]
    assert entries["LFRQA"]["rating"] == 1000.0 and entries["LFRQA"]["rating_ci"] == [1000.0, 1000.0]
    for system, rating in TRUE.items():
        e = entries[system]
        low, high = e["rating_ci"]
        assert low <= e["rating"] <= high
        assert low <= rating <= high, (system, rating, e["rating_ci"])
        p_win, p_tie = _probs(rating, 1000)
        assert e["win_rate_ci"][0] <= p_win <= e["win_rate_ci"][1], (system, p_win, e["win_rate_ci"])
        assert e["win_tie_rate_ci"][0] <= p_win + p_tie <= e["win_tie_rate_ci"][1]
        assert e["n"] == 2400 and 0 < e["n_failed"] < 60
        assert set(e["per_domain"]) == set(DOMAINS)
        assert sum(d["n"] for d in e["per_domain"].values()) == 2400
    # Intervals are ordered like the true ratings: the strong system's interval sits above the good one's.
    assert entries["strong"]["rating_ci"][0] > entries["good"]["rating_ci"][1]
    assert [e["rank"] for e in known_board.entries] == [1, 2, 3, 4, 5]
    # The strong-vs-good run counts in the battles of both.
    assert entries["strong"]["n_battles"] == entries["strong"]["n_judged"] + 1200
    assert known_board.head_to_head[0]["system_a"] == "strong" and known_board.head_to_head[0]["n"] == 1200


def test_paired_comparisons_of_adjacent_systems(known_board):
    pairs = [(p["system_a"], p["system_b"], p["metric"]) for p in known_board.paired]
    assert pairs[:2] == [("strong", "good", "win_rate"), ("strong", "good", "win_tie_rate")]
    assert ("good", "weak", "win_rate") in pairs  # LFRQA is skipped: it has no run against itself
    first = known_board.paired[0]
    assert first["difference"] > 0 and first["difference_ci"][0] > 0 and first["p_value"] < 0.001


def test_write_report_outputs(known_runs, tmp_path):
    calls = []
    board = write_report(known_runs, tmp_path / "out", n_boot=200, progress=lambda *a: calls.append(a))
    out = tmp_path / "out"
    entries = json.loads((out / "leaderboard.json").read_text())
    assert [e["system"] for e in entries] == [e["system"] for e in board.entries]
    for e in entries:
        for key in ("system", "n", "win_rate", "win_tie_rate", "win_rate_ci", "win_tie_rate_ci", "rating", "rating_ci", "per_domain"):
            assert key in e
        assert isinstance(e["rating"], float) and len(e["rating_ci"]) == 2
        if e["system"] != "LFRQA":
            assert isinstance(e["win_rate"], float) and 0 <= e["win_rate"] <= 1
    lfrqa = next(e for e in entries if e["system"] == "LFRQA")
    assert lfrqa["reference"] is True and lfrqa["win_rate"] is None and lfrqa["n"] == 2400
    report = json.loads((out / "report.json").read_text())
    assert report["judges"] == [JUDGE] and report["n_queries"] == 2400 and report["settings"]["anchor"] == "LFRQA"
    for name in ("ratings.png", "win_rates.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "leaderboard.html").read_text()
    assert html.count("data:image/png;base64,") == 3  # ratings, win rates and the win matrix (a pair run)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page must not fetch anything"
    assert "<script src" not in html and "<link" not in html
    stages = {c[0] for c in calls}
    assert {"Reading runs", "Bootstrap ratings", "Plots"} <= stages
    assert all(done <= total for _, done, total in calls)


def test_html_escapes_names(tmp_path):
    evil = '<script>alert("x")</script>&"'
    runs = [
        make_run(tmp_path, evil, p_win=0.6, n=60, folder="evil", judge="judge<b>"),
        make_run(tmp_path, "ok", p_win=0.3, n=60),
    ]
    write_report(runs, tmp_path / "out", n_boot=50, plots=False, title="T <i>")
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    assert evil not in html and "<script>alert" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;&#34;" in html  # autoescaped by the template
    assert "judge&lt;b&gt;" in html and "<title>T &lt;i&gt;</title>" in html
    assert html.count("<script>") == 1  # only the page's own sorting script
    assert 'content:" \\2195"' in html  # the stylesheet reaches the page unescaped: CSS escapes intact
    entries = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert evil in {e["system"] for e in entries}


def test_crashed_run_is_still_reported(tmp_path):
    run = make_run(tmp_path, "sys", p_win=0.5, n=40, summary=False)
    with (run / "verdicts.jsonl").open("a") as handle:
        handle.write('{"qid": "q40", "domain": "fiqa", "system_a": "sy')  # torn by a crash
    loaded = load_run(run)
    assert loaded.system == "sys" and loaded.opponent == "LFRQA" and len(loaded.verdicts) == 40
    assert loaded.judges == [JUDGE]
    assert any("torn last line" in w for w in loaded.warnings)
    board = build_leaderboard([run], n_boot=50)
    assert {e["system"] for e in board.entries} == {"sys", "LFRQA"}
    assert any("no summary.json" in w for w in board.warnings)


def test_resumed_run_keeps_last_successful_verdict(tmp_path):
    run = make_run(tmp_path, "sys", p_win=0.0, n=3)
    rows = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    with (run / "verdicts.jsonl").open("a") as handle:
        handle.write(json.dumps({**rows[0], "outcome": "win"}) + "\n")
        handle.write(json.dumps({**rows[1], "outcome": None, "failed": True}) + "\n")
    outcomes = load_run(run).outcomes()
    assert outcomes == {"q0": "win", "q1": "loss", "q2": "loss"}


def test_bad_inputs_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="has no verdicts.jsonl"):
        load_run(tmp_path)
    run = make_run(tmp_path, "a", p_win=0.5, n=5)
    lines = (run / "verdicts.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"system_a": "a"', '"system_a": "b"')
    (run / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="mixes several pairs"):
        load_run(run)
    lines[1] = "{not json"
    (run / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"verdicts.jsonl:2: not valid JSON"):
        load_run(run)
    one = make_run(tmp_path, "x", p_win=0.5, n=5)
    two = make_run(tmp_path, "x", p_win=0.5, n=5, folder="x-again")
    with pytest.raises(ValueError, match="both judge 'x' against 'LFRQA'"):
        build_leaderboard([one, two], n_boot=10)
    with pytest.raises(ValueError, match="No run folders"):
        build_leaderboard([])


def test_versus_only_runs_are_centred_and_disconnected_groups_warned(tmp_path):
    runs = [
        make_run(tmp_path, "a", "b", p_win=0.7, n=100),
        make_run(tmp_path, "c", "d", p_win=0.5, n=100),
    ]
    board = build_leaderboard(runs, n_boot=50)
    ratings = {e["system"]: e["rating"] for e in board.entries}
    assert math.isclose(sum(ratings.values()) / 4, 1000.0, abs_tol=1e-6)
    assert ratings["a"] > ratings["b"]
    assert all(e["win_rate"] is None for e in board.entries)
    assert any("not strictly comparable" not in w and "groups never compared" in w for w in board.warnings)
    assert any("centred" in w for w in board.warnings)


def test_mixed_judges_warn(tmp_path):
    runs = [make_run(tmp_path, "a", p_win=0.5, n=20), make_run(tmp_path, "b", p_win=0.5, n=20, judge="openai:gpt-4o-mini")]
    board = build_leaderboard(runs, n_boot=20)
    assert board.judges == ["openai:gpt-4o", "openai:gpt-4o-mini"]
    assert any("different judges" in w for w in board.warnings)


def test_report_command(known_runs, tmp_path, capsys):
    out = tmp_path / "lb"
    human = tmp_path / "human.jsonl"
    human.write_text(
        "\n".join(
            json.dumps({"qid": f"q{i}", "system_a": "strong", "system_b": "LFRQA", "label": 1, "annotator": "w1"})
            for i in range(30)
        )
        + "\n"
    )
    rc = main(["report", *map(str, known_runs), "--out", str(out), "--n-boot", "100", "--human-labels", str(human)])
    assert rc == 0
    captured = capsys.readouterr()
    assert "strong" in captured.out and "LFRQA" in captured.out and "Rating" in captured.out
    assert "Agreement with human labels" in captured.out
    assert (out / "leaderboard.html").is_file() and (out / "ratings.png").is_file()
    report = json.loads((out / "report.json").read_text())
    assert report["agreement"]["n"] == 30 and report["agreement"]["n_unmatched_human"] == 0
    assert report["settings"]["n_boot"] == 100
    assert "Agreement with people" in (out / "leaderboard.html").read_text()


def test_report_folder_among_the_runs_is_skipped(tmp_path):
    runs = tmp_path / "runs"
    make_run(runs, "a", p_win=0.5, n=20)
    write_report(sorted(runs.iterdir()), runs / "leaderboard", n_boot=20, plots=False)
    board = write_report(sorted(runs.iterdir()), runs / "leaderboard", n_boot=20, plots=False)  # runs/* again
    assert {e["system"] for e in board.entries} == {"a", "LFRQA"}


def test_report_command_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path), "--out", str(tmp_path / "o"), "--confidence", "95"])
    assert "between 0 and 1" in capsys.readouterr().err


def test_help_explains_commands(capsys):
    for command, flag in (("report", "--out"), ("push", "--repo")):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        text = capsys.readouterr().out
        assert "examples:" in text and f"rag-qa-arena {command} " in text and flag in text


def test_run_folders_written_by_the_judge_make_a_leaderboard(tmp_path):
    """End to end: the real judge against a local OpenAI-compatible server writes the run folders."""
    from metric_arena import JudgeConfig, RunConfig
    from metric_arena.judge import judge_pairs
    from tests.openai_server import OpenAIServer

    strength = {"ANSWER-STRONG": 1150.0, "ANSWER-REFERENCE": 1000.0, "ANSWER-WEAK": 850.0}

    def scripted_judge(body: dict, attempt: int) -> str:
        text = body["messages"][-1]["content"]
        first, second = [m for _, m in sorted((text.index(m), m) for m in strength if m in text)]
        prefers_first = random.Random(text).random() < expected_score(strength[first], strength[second])
        return f"<thinking>Scripted.</thinking><rating>{1 if prefers_first else 2}</rating>"

    n = 120
    ids = [f"q{i}" for i in range(n)]
    questions = [f"Question number {i}?" for i in range(n)]
    domains = [DOMAINS[i % 3] for i in range(n)]
    answers = {name: [f"{name} {i}" for i in range(n)] for name in ("ANSWER-STRONG", "ANSWER-WEAK", "ANSWER-REFERENCE")}
    shared = dict(ids=ids, domains=domains, questions=questions)
    common = dict(judge=JudgeConfig("openai:judge-model", order="random"), intervals=Intervals(n_boot=50))
    runs = tmp_path / "runs"
    with OpenAIServer(reply=scripted_judge) as server:
        common["run"] = RunConfig(base_url=server.base_url, api_key="sk-test-not-a-real-key-000000",
                                  cache_dir=tmp_path / "cache")
        for system, key in (("strong", "ANSWER-STRONG"), ("weak", "ANSWER-WEAK")):
            judge_pairs(JudgeInputs(predictions=answers[key], references=answers["ANSWER-REFERENCE"], system=system,
                                    **shared), out=runs / system, **common)
        judge_pairs(JudgeInputs(predictions=answers["ANSWER-STRONG"], references=answers["ANSWER-WEAK"],
                                system="strong", opponent="weak", **shared), out=runs / "strong-vs-weak", **common)
    board = write_report(sorted(runs.iterdir()), tmp_path / "out", n_boot=100, plots=False)
    assert [e["system"] for e in board.entries] == ["strong", "LFRQA", "weak"]
    assert board.judges == ["openai:judge-model"] and board.n_queries == n and board.warnings == []
    entries = {e["system"]: e for e in board.entries}
    assert entries["strong"]["win_rate"] > 0.6 > 0.4 > entries["weak"]["win_rate"]
    assert entries["strong"]["n_battles"] == 2 * n and set(entries["strong"]["per_domain"]) == set(DOMAINS[:3])
    assert board.head_to_head[0]["system_b"] == "weak" and board.head_to_head[0]["win_rate"] > 0.7
