"""The verdict viewer and the pictures of the report page, on a real adaptive tournament of three systems
(local OpenAI-compatible server, LFRQA's real questions and answers): the page, filtered in headless
Chromium to one system's losses, shows exactly those verdicts with both answers and the judge's reply;
the adaptive tournament's unseparated pairs reach the terminal, report.json and the page; the win matrix
and the length-ratio curves are right on known counts."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import lfrqa
from metric_arena.report import ViewerOptions, write_report
from metric_arena.report.views import length_ratio_curves, verdict_view, viewer_json, win_matrix
from metric_arena.report import load_run
from metric_arena.stats import wilson_interval
from rag_qa_arena._cmd_tournament import unseparated_lines
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import run_cli
from tests.test_end_to_end import arena_server_reply
from tests.test_html_chromium import CHROMIUM, _chromium
from tests.test_report import make_run

SYSTEMS = ("strong", "medium", "weak")


@pytest.fixture(scope="module")
def arena(lfrqa_data_dir, tmp_path_factory):
    """An adaptive tournament stopped by its budget, and its report with the three prediction files."""
    root = tmp_path_factory.mktemp("arena")
    rows = lfrqa.load("all", data_dir=str(lfrqa_data_dir))
    picked = [i for i, d in enumerate(rows["domain"]) if d == "fiqa"][:8] + \
             [i for i, d in enumerate(rows["domain"]) if d == "writing"][:8]
    files = {}
    for system in SYSTEMS:
        path = root / f"{system}.jsonl"
        path.write_text("".join(json.dumps({"qid": rows[i]["qid"], "answer": f"ANSWER[{system}] answer {rows[i]['qid']}"})
                                + "\n" for i in picked))
        files[system] = path
    with OpenAIServer(arena_server_reply) as server:
        tour = run_cli(["tournament", *map(str, files.values()), "--judge", "openai:judge", "--base-url",
                        server.base_url, "--api-key", "sk-local", "--cache-dir", str(root / "cache"), "--no-progress",
                        "--out", str(root / "runs"), "--adaptive", "--max-judgments", "12", "--round-size", "4"],
                       timeout=600)
    assert tour.returncode == 0, tour.stderr[-3000:]
    runs = sorted(str(p) for p in (root / "runs").glob("*/"))
    report = run_cli(["report", *runs, "--out", str(root / "lb"), "--n-boot", "50", "--data-dir", str(lfrqa_data_dir),
                      "--predictions", *(f"{s}={files[s]}" for s in SYSTEMS)], timeout=600)
    assert report.returncode == 0, report.stderr[-3000:]
    answers = {qid: (q, a) for qid, q, a in zip(rows["qid"], rows["question"], rows["answer"])}
    return {"root": root, "tournament": tour, "report": report, "runs": runs, "lfrqa": answers}


@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_adaptive_unseparated_pairs_reach_the_terminal_report_json_and_the_page(arena):
    recorded = json.loads((arena["root"] / "runs" / "tournament.json").read_text())
    assert recorded["stopped"] == "budget"
    unseparated = [n for n in recorded["neighbours"] if not n["separated"]]
    assert unseparated  # 12 judgments cannot separate three systems
    out = arena["tournament"].stdout
    assert f"not separated: {len(unseparated)} of {len(recorded['neighbours'])} neighbouring pairs" in out
    for row in unseparated:
        low, high = row["interval"]
        assert f"{row['upper']} vs {row['lower']}: score {row['win_rate']:.2f} [{low:.2f}, {high:.2f}]" in out
    printed = " ".join(arena["report"].stdout.split())  # report's terminal table (its title wraps)
    assert f"Adaptive tournament (stopped: budget): {len(unseparated)} of" in printed
    view = json.loads((arena["root"] / "lb" / "report.json").read_text())["elo_study"]["adaptive"]
    assert view["stopped"] == "budget" and view["unseparated"] == unseparated
    html = (arena["root"] / "lb" / "leaderboard.html").read_text()
    table = re.search(r'<table id="adaptive-pairs".*?</table>', html, re.S).group(0)
    for row in unseparated:
        assert f"[{row['interval'][0]:.2f}, {row['interval'][1]:.2f}]" in table
    assert table.count(">no</td>") == len(unseparated)


def test_unseparated_lines_say_when_every_pair_is_separated():
    rows = [{"upper": "a", "lower": "b", "n": 9, "win_rate": 0.9, "interval": [0.6, 0.99], "separated": True}]
    assert unseparated_lines(rows) == ["separated: all 1 neighbouring pairs"]
    assert unseparated_lines(None) == []
    rows.append({"upper": "b", "lower": "c", "n": 4, "win_rate": 0.5, "interval": [0.1, 0.9], "separated": False})
    assert unseparated_lines(rows)[1] == "  b vs c: score 0.50 [0.10, 0.90] on 4 battles"


def _expected_losses(runs: list[str], system: str) -> set[tuple[str, str]]:
    """(qid, opponent) of every verdict ``system`` lost, from either side of a run."""
    lost = set()
    for run in runs:
        for line in (Path(run) / "verdicts.jsonl").read_text().splitlines():
            v = json.loads(line)
            if v["system_a"] == system and v["outcome"] == "loss":
                lost.add((v["qid"], v["system_b"]))
            elif v["system_b"] == system and v["outcome"] == "win":
                lost.add((v["qid"], v["system_a"]))
    return lost


def _replies(runs: list[str]) -> dict[tuple[str, str, str], list[str]]:
    found = {}
    for run in runs:
        for line in (Path(run) / "verdicts.jsonl").read_text().splitlines():
            v = json.loads(line)
            raws = [j["raw"] for j in v["judgments"]]
            found[(v["qid"], v["system_a"], v["system_b"])] = found[(v["qid"], v["system_b"], v["system_a"])] = raws
    return found


def _body(article: str, cls: str) -> str | None:
    m = re.search(rf'<div class="vtext {cls}"><div class="vlabel">[^<]*</div><div class="vbody">(.*?)</div>', article, re.S)
    return None if m is None else m.group(1)


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install -y chromium)")
@pytest.mark.parametrize("system", ["medium", "weak"])
@pytest.mark.slow  # several CLI runs or a tournament: CI's slow pass runs it
def test_chromium_filters_one_systems_losses_with_both_answers_and_the_reply(arena, system, tmp_path):
    page = arena["root"] / "lb" / "leaderboard.html"
    shown = _chromium(tmp_path / "p", "--dump-dom", page.as_uri() + f"#vsystem={system}&voutcome=loss&vper=500")
    assert shown.returncode == 0, shown.stderr[-2000:]
    dom = shown.stdout
    assert 'data-viewer="ready"' in dom
    articles = re.findall(r'<article class="verdict".*?</article>', dom, re.S)
    expected = _expected_losses(arena["runs"], system)
    assert expected and f'data-matches="{len(expected)}"' in dom
    seen = set()
    replies = _replies(arena["runs"])
    for article in articles:
        attrs = dict(re.findall(r'data-(qid|system|opponent|outcome)="([^"]*)"', article.split(">", 1)[0]))
        assert attrs["system"] == system and attrs["outcome"] == "loss"
        qid, opponent = attrs["qid"], attrs["opponent"]
        seen.add((qid, opponent))
        assert _body(article, "vanswer-me") == f"ANSWER[{system}] answer {qid}"
        question, reference_answer = arena["lfrqa"][qid]
        assert _unescape(_body(article, "vquestion")) == question
        other = reference_answer if opponent == "LFRQA" else f"ANSWER[{opponent}] answer {qid}"
        assert _unescape(_body(article, "vanswer-other")) == other
        got = [_unescape(r) for r in re.findall(r'<div class="vtext vreply"[^>]*><div class="vlabel">[^<]*</div>'
                                                r'<div class="vbody">(.*?)</div>', article, re.S)]
        assert got == replies[(qid, system, opponent)] and all("<rating>" in r for r in got)
        assert re.search(r"shown first: (" + re.escape(system) + "|" + re.escape(opponent) + ")<", article)
    assert seen == expected and len(articles) == len(expected)


def test_the_data_block_cannot_be_closed_by_a_text_and_texts_are_bounded(tmp_path):
    run = make_run(tmp_path, "alpha", p_win=0.5, p_tie=0.1, n=30, seed=1)
    hostile = "</script><script>alert(1)</script><!-- & " + "x" * 3000
    (tmp_path / "alpha.jsonl").write_text("".join(json.dumps({"qid": f"q{i}", "answer": hostile + str(i)}) + "\n"
                                                  for i in range(30)))
    options = ViewerOptions(predictions={"alpha": tmp_path / "alpha.jsonl"}, max_text_chars=1000, max_total_chars=20_000)
    view = verdict_view([load_run(run)], reference="LFRQA", options=options)
    assert max(len(t) for t in view["texts"]) <= 1000 and sum(map(len, view["texts"])) <= 20_000
    assert view["cut"] and all(n > 1000 for n in view["cut"].values())
    assert any("LFRQA's answers and the questions not loaded" in n for n in view["notes"])
    text = viewer_json(view)
    assert "<" not in text and ">" not in text and "&" not in text and json.loads(text) == view
    write_report([run], tmp_path / "out", n_boot=20, plots=False, viewer=options)
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    block = re.search(r'<script type="application/json" id="verdict-data">(.*?)</script>', html, re.S).group(1)
    assert len(json.loads(block)["rows"]) == 30 and "alert(1)" in block and "<script>alert" not in html
    assert html.count("<script") == 2  # the data block and the page's own script: no text opened another


def test_missing_answers_are_named_and_viewer_can_be_left_out(tmp_path):
    runs = [make_run(tmp_path, "alpha", p_win=0.5, n=20, seed=1), make_run(tmp_path, "alpha", "beta", p_win=0.5, n=10,
                                                                            seed=2)]
    view = verdict_view([load_run(r) for r in runs], reference="LFRQA", options=ViewerOptions())
    assert "alpha's answers not shown: pass --predictions alpha=FILE (the answers it was judged on)" in view["notes"]
    assert any(n.startswith("beta's answers not shown") for n in view["notes"])
    assert len(view["rows"]) == 30 and all(r[8] == -1 and r[9] == -1 for r in view["rows"])
    assert all(r[10][0][3] >= 0 for r in view["rows"])  # the judge's reply is always there
    write_report(runs, tmp_path / "out", n_boot=20, plots=False, viewer=ViewerOptions(enabled=False))
    assert 'id="verdicts"' not in (tmp_path / "out" / "leaderboard.html").read_text()


def test_win_matrix_counts_both_sides_of_every_run(tmp_path):
    runs = [load_run(make_run(tmp_path, "a", p_win=0.7, p_tie=0.1, n=50, seed=1)),
            load_run(make_run(tmp_path, "a", "b", p_win=0.6, p_tie=0.2, n=40, seed=2))]
    matrix = win_matrix(runs, order=["b", "a"])
    assert matrix["systems"] == ["b", "a", "LFRQA"]
    outcomes = [v["outcome"] for v in runs[1].verdicts]
    ab, ba = matrix["cells"]["a"]["b"], matrix["cells"]["b"]["a"]
    assert (ab["wins"], ab["ties"], ab["losses"]) == (outcomes.count("win"), outcomes.count("tie"), outcomes.count("loss"))
    assert (ba["wins"], ba["losses"], ba["ties"]) == (ab["losses"], ab["wins"], ab["ties"]) and ab["n"] == 40
    assert ab["win_rate_ci"] == list(wilson_interval(ab["wins"], 40))
    assert "b" not in matrix["cells"].get("LFRQA", {})  # never met


def _styled_run(root: Path, points: list[tuple[int, int, str]]) -> Path:
    run = root / "sys"
    run.mkdir()
    with (run / "verdicts.jsonl").open("w") as out:
        for k, (words_a, words_b, outcome) in enumerate(points):
            style = {"tokens": 0, "headers": 0, "list_items": 0, "bold": 0, "citations": 0}
            out.write(json.dumps({"qid": f"q{k}", "domain": "fiqa", "system_a": "sys", "system_b": "LFRQA",
                                  "outcome": outcome, "failed": False, "flipped": None, "no_answer_a": False,
                                  "judgments": [{"judge": "j", "a_position": 1, "rating": 1, "outcome": outcome,
                                                 "raw": "r", "attempts": 1, "cached": False}],
                                  "style_a": {"words": words_a, **style}, "style_b": {"words": words_b, **style}}) + "\n")
    return run


def test_length_ratio_curve_bins_and_intervals_on_known_counts(tmp_path):
    # ratio 0.4 (bin 0-0.5): 1 win of 4; ratio 1.1 (1-1.25): 3 wins, 1 tie of 5; ratio 3 (2+): 4 of 4 wins
    points = [(40, 100, o) for o in ("win", "loss", "loss", "tie")] + \
             [(110, 100, o) for o in ("win", "win", "win", "tie", "loss")] + [(300, 100, "win")] * 4
    run = _styled_run(tmp_path, points)
    curve = length_ratio_curves([load_run(run)], reference="LFRQA")["sys"]
    bins = {tuple(b["range"]): b for b in curve["bins"]}
    assert curve["n"] == 13 and sum(b["n"] for b in curve["bins"]) == 13
    low = bins[(0.0, 0.5)]
    assert (low["n"], low["win_rate"], low["win_tie_rate"]) == (4, 0.25, 0.5) and math.isclose(low["ratio"], 0.4)
    assert low["win_rate_ci"] == list(wilson_interval(1, 4))
    assert bins[(1.0, 1.25)]["win_rate"] == 0.6 and bins[(1.0, 1.25)]["win_tie_rate"] == 0.8
    assert bins[(2.0, None)]["win_rate"] == 1.0 and bins[(0.8, 1.0)]["n"] == 0 and bins[(0.8, 1.0)]["win_rate"] is None
    board = write_report([run], tmp_path / "out", n_boot=20)
    assert board.length["win_rate_by_length_ratio"]["sys"] == curve
    saved = json.loads((tmp_path / "out" / "report.json").read_text())["length"]["win_rate_by_length_ratio"]
    assert saved["sys"]["bins"][0]["win_rate_ci"] == low["win_rate_ci"]
    png = (tmp_path / "out" / "length_ratio.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    assert 'id="length-ratio"' in html and "Win rate against length" in html


def test_win_matrix_in_the_page_and_as_png(tmp_path):
    runs = [make_run(tmp_path, s, p_win=p, p_tie=0.1, n=40, seed=k) for k, (s, p) in enumerate([("a", .6), ("b", .4)])]
    runs.append(make_run(tmp_path, "a", "b", p_win=0.6, n=30, seed=5))
    board = write_report(runs, tmp_path / "out", n_boot=20)
    assert (tmp_path / "out" / "win_matrix.png").read_bytes()[:4] == b"\x89PNG"
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    table = re.search(r'<table id="win-matrix-table".*?</table>', html, re.S).group(0)
    cell = board.elo_study["win_matrix"]["cells"]["a"]["b"]
    assert f'{cell["wins"]}/{cell["ties"]}/{cell["losses"]}' in table
    assert json.loads((tmp_path / "out" / "report.json").read_text())["elo_study"]["win_matrix"]["cells"]["a"]["b"] == cell


def test_report_cli_says_what_the_viewer_lacks(tmp_path, capsys):
    from tests.robustness.helpers import cli

    run = make_run(tmp_path, "alpha", p_win=0.5, n=20, seed=1)  # qids q0..q19: not LFRQA's
    code, _, err = cli(["report", str(run), "--out", str(tmp_path / "a"), "--n-boot", "20", "--no-plots"], capsys)
    assert code == 0, err
    html = (tmp_path / "a" / "leaderboard.html").read_text()
    assert "alpha vs LFRQA: 20 verdict(s) whose qid is not one of LFRQA&#39;s test questions" in html
    assert "alpha&#39;s answers not shown: pass --predictions alpha=FILE" in html
    (tmp_path / "alpha.jsonl").write_text("".join(json.dumps({"qid": f"q{i}", "answer": "long " * 40}) + "\n"
                                                  for i in range(20)))
    code, _, err = cli(["report", str(run), "--out", str(tmp_path / "b"), "--n-boot", "20", "--no-plots", "--no-texts",
                        "--viewer-chars", "100", "--predictions", f"alpha={tmp_path / 'alpha.jsonl'}"], capsys)
    assert code == 0, err
    html = (tmp_path / "b" / "leaderboard.html").read_text()
    assert "LFRQA&#39;s answers and the questions not loaded (--no-texts" in html
    assert "the page holds at most 100 characters of text" in html
    view = json.loads(re.search(r'id="verdict-data">(.*?)</script>', html, re.S).group(1))
    assert sum(map(len, view["texts"])) <= 100 and len(view["rows"]) == 20


def test_each_judge_of_an_ensemble_and_a_failed_pairs_error_are_kept(tmp_path):
    run = _styled_run(tmp_path, [(100, 100, "win"), (50, 100, None)])
    rows = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    rows[0]["judgments"].append({**rows[0]["judgments"][0], "judge": "other:judge", "a_position": 2, "raw": "second"})
    rows[1].update(failed=True, error="the judge timed out", judgments=[])
    (run / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    view = verdict_view([load_run(run)], reference="LFRQA", options=ViewerOptions())
    first, failed = view["rows"]
    assert [(view["judges"][j[0]], j[1], view["texts"][j[3]]) for j in first[10]] == [("j", 1, "r"),
                                                                                       ("other:judge", 2, "second")]
    assert failed[4] == -1 and view["texts"][failed[11]] == "the judge timed out" and first[11] == -1


def test_lengths_back_filled_in_memory_reach_the_viewer(tmp_path):
    run = load_run(make_run(tmp_path, "alpha", p_win=0.5, n=5, seed=1), lean=True)  # no lengths, no replies
    for verdict in run.verdicts:
        verdict["style_a"], verdict["style_b"] = {"words": 30}, {"words": 20}  # as backfill_styles gives them
    view = verdict_view([run], reference="LFRQA", options=ViewerOptions())
    assert [(r[5], r[6]) for r in view["rows"]] == [(30, 20)] * 5
    assert all(view["texts"][r[10][0][3]].startswith("<thinking>") for r in view["rows"])  # replies read again
