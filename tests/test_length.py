"""Length and style: counts in every verdict and battle, back-fill of older runs, the descriptive views,
length-controlled rates and style-controlled ratings against a judge with a designed length bias (the
real local server reads both answers' lengths from the request)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re

import numpy as np
import pytest

from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.llm import get_encoding
from metric_arena.prompts import clean_response
from metric_arena.report import backfill_styles, battle_rows, build_leaderboard, load_run
from metric_arena.stats import length_controlled_rates, length_views, style_controlled_bradley_terry
from metric_arena.style import answer_style
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer
from metric_arena.judge import JudgeInputs
from metric_arena.judge import RunOutput
from metric_arena.stats import Intervals

_ANSWER = re.compile(r"<answer ([12])>\n(.*?)\n</answer \1>", re.S)
_QUALITY = re.compile(r"^Q(-?\d+\.\d+)\b")


def test_answer_style_counts_words_tokens_markdown_and_citations():
    text = "# Title\n## Part\n- **one** item [1]\n* two [2, 3]\n3. three __bold__\nplain [a] text [12]"
    style = answer_style(text)
    encoding, _ = get_encoding("gpt-4o")
    assert style == {"words": len(text.split()), "tokens": len(encoding.encode(text)), "headers": 2,
                     "list_items": 3, "bold": 2, "citations": 3}
    assert answer_style(None) == dict.fromkeys(style, 0)


def length_biased(bias: float):
    """A judge preferring the longer answer: quality difference + bias * (L1 - L2) / (L1 + L2) + noise."""
    def reply(body, attempt):
        text = body["messages"][-1]["content"]
        answers = dict(_ANSWER.findall(text))
        quality = [float(m.group(1)) if (m := _QUALITY.match(answers[k])) else 0.0 for k in "12"]
        words = [len(answers[k].split()) for k in "12"]
        u = random.Random(hashlib.sha256(text.encode()).hexdigest()).random()
        score = quality[0] - quality[1] + bias * (words[0] - words[1]) / sum(words) + math.log(u / (1 - u))
        return f"<rating>{1 if score > 0.4 else 2 if score < -0.4 else 0}</rating>"
    return reply


def answers(rng, n, ratio, quality):
    return [f"Q{quality + rng.normal(0, 0.3):.3f} " + " ".join(["word"] * max(2, round(w * ratio * math.exp(rng.normal(0, .5)))))
            for w in n]


@pytest.fixture(scope="module")
def biased_runs(tmp_path_factory):
    """Three systems judged against a reference and against each other by a length-biased judge."""
    root = tmp_path_factory.mktemp("length")
    rng = np.random.default_rng(0)
    n = 400
    ref_words = rng.integers(5, 120, n)
    refs = [" ".join(["ref"] * int(w)) for w in ref_words]
    systems = {"concise": answers(rng, ref_words, 1.0, 0.3), "verbose": answers(rng, ref_words, 2.0, 0.3),
               "better": answers(rng, ref_words, 1.0, 1.3)}
    ids = [f"q{i}" for i in range(n)]
    shared = dict(questions=["question?"] * n, ids=ids, domains=["fiqa", "science"] * (n // 2))
    common = dict(judge=JudgeConfig("openai:biased", order="random"), output=RunOutput(progress=False),
                  intervals=Intervals(n_boot=20))
    with OpenAIServer(length_biased(3.0)) as server:
        common["run"] = RunConfig(base_url=server.base_url, api_key="k", max_concurrency=16)
        folders = []
        for name, texts in systems.items():
            folders.append(root / name)
            judge_pairs(JudgeInputs(predictions=texts, references=refs, system=name, **shared), out=folders[-1],
                        **common)
        folders.append(root / "concise__vs__verbose")
        judge_pairs(JudgeInputs(predictions=systems["concise"], references=systems["verbose"], system="concise",
                                opponent="verbose", **shared), out=folders[-1], **common)
    return folders, systems, refs


def test_verdicts_and_battles_carry_both_answers_lengths(biased_runs):
    folders, systems, refs = biased_runs
    verdicts = load_run(folders[0]).verdicts
    for v in verdicts:
        k = int(v["qid"][1:])
        assert v["style_a"] == answer_style(clean_response(systems["concise"][k]))
        assert v["style_b"]["words"] == len(refs[k].split())
    rows = battle_rows([folders[3]])
    assert len(rows) == len(verdicts)
    for row in rows:  # model_a is the answer shown first; its lengths are the _a columns
        k = int(row["qid"][1:])
        assert row["words_a"] == len(systems[row["model_a"]][k].split())
        assert row["words_b"] == len(systems[row["model_b"]][k].split())
        assert row["tokens_a"] > 0 and row["list_items_a"] == 0


def test_length_controlled_rates_take_back_the_verbose_gain(biased_runs):
    folders, _, _ = biased_runs
    board = build_leaderboard(folders, n_boot=100)
    e = {entry["system"]: entry for entry in board.entries}
    c, v, b = e["concise"], e["verbose"], e["better"]
    for entry in (c, v, b):
        for key in ("lc_win_rate", "lc_win_tie_rate"):
            assert entry[f"{key}_ci"][0] <= entry[key] <= entry[f"{key}_ci"][1]
        assert set(entry["length"]["by_length_ratio"]) == {"shorter", "similar", "longer"}
    raw_gap = v["win_rate"] - c["win_rate"]
    assert raw_gap >= 0.10
    assert abs(v["lc_win_rate"] - c["lc_win_rate"]) < 0.6 * raw_gap
    assert b["lc_win_rate"] - c["lc_win_rate"] >= 0.10
    assert v["avg_words"] > 1.6 * c["avg_words"] and v["p_longer_wins"] > 0.6 and v["length_coef_win"] > 1
    assert e["LFRQA"]["avg_words"] == pytest.approx(board.length["reference_avg_words"])
    [moved] = [w for w in board.warnings if w.startswith("verbose: its win rate moves by")]
    assert "when lengths are equalised; the judge's verdicts favour the longer answer" in moved
    assert v["length_coef_significant"] and v["lc_note"] is None
    assert abs(v["style_controlled_rating"] - c["style_controlled_rating"]) < abs(v["rating"] - c["rating"])
    assert board.length["style_coefficients"]["length"] > 0


def test_adding_a_system_never_moves_another_systems_lc_rate(biased_runs):
    folders, _, _ = biased_runs
    alone = {e["system"]: e for e in build_leaderboard(folders[:1], n_boot=30).entries}
    together = {e["system"]: e for e in build_leaderboard(folders, n_boot=30).entries}
    assert alone["concise"]["lc_win_rate"] == together["concise"]["lc_win_rate"]
    assert alone["concise"]["lc_win_rate_ci"] == together["concise"]["lc_win_rate_ci"]


def test_report_back_fills_older_runs_from_prediction_files_and_lfrqa(tmp_path, lfrqa_data_dir, capsys):
    import lfrqa

    ds = lfrqa.load("science", data_dir=lfrqa_data_dir)
    rows = [ds[i] for i in range(6)]
    run = tmp_path / "runs" / "old"
    run.mkdir(parents=True)
    verdicts = [{"qid": r["qid"], "domain": "science", "system_a": "old", "system_b": "LFRQA",
                 "outcome": ["win", "loss", "tie"][i % 3], "no_answer_a": False, "judgments": []}
                for i, r in enumerate(rows)]
    (run / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    preds = tmp_path / "old.jsonl"
    preds.write_text("".join(json.dumps({"qid": r["qid"], "answer": "Answer: short " * (i + 1)}) + "\n"
                             for i, r in enumerate(rows)))

    loaded = load_run(run)
    [note] = backfill_styles([loaded], data_dir=lfrqa_data_dir)
    assert "cannot be back-filled: pass --predictions old=FILE" in note
    assert "style_a" not in loaded.verdicts[0]

    backfill_styles([loaded], predictions={"old": preds}, data_dir=lfrqa_data_dir)
    for i, (v, r) in enumerate(zip(loaded.verdicts, rows)):
        assert v["style_a"]["words"] == i + 1  # the cleaned answer: "Answer: " is dropped, as the judge saw it
        assert v["style_b"]["words"] == len(r["answer"].split())

    out = tmp_path / "lb"
    assert main(["report", str(run), "--out", str(out), "--n-boot", "20", "--no-plots", "--data-dir",
                 str(lfrqa_data_dir), "--predictions", f"old={preds}", "--battles", str(tmp_path / "b.jsonl")]) == 0
    printed = capsys.readouterr()
    assert "Length: LFRQA answers" in printed.out and "old: answer lengths back-filled for 6 of 6" in printed.err
    entries = {e["system"]: e for e in json.loads((out / "leaderboard.json").read_text())}
    assert entries["old"]["avg_words"] == 3.5
    assert entries["LFRQA"]["avg_words"] == pytest.approx(np.mean([len(r["answer"].split()) for r in rows]))
    assert {"lc_win_rate", "lc_win_rate_ci", "lc_win_tie_rate", "lc_win_tie_rate_ci", "p_longer_wins",
            "style_controlled_rating", "style_controlled_rating_ci"} <= set(entries["old"])
    battles = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert all(b["words_a"] is not None for b in battles)
    assert "Length-controlled" in (out / "leaderboard.html").read_text()


def test_the_no_answer_indicator_keeps_short_refusals_from_reading_as_length_bias():
    rng = np.random.default_rng(1)
    n = 800
    refusal = rng.random(n) < 0.25
    f = np.where(refusal, -0.8, rng.uniform(-0.3, 0.3, n))  # refusals are short ...
    p = np.where(refusal, 0.02, 0.5)  # ... and lose; otherwise the judge ignores length
    outcomes = np.where(rng.random(n) < p, "win", "loss")
    with_flag = length_controlled_rates(list(outcomes), f, no_answer=list(refusal), n_boot=50)
    without = length_controlled_rates(list(outcomes), f, n_boot=50)
    assert abs(with_flag["length_coef_win"]) < 1.0 < without["length_coef_win"]
    assert with_flag["lc_win_rate"] == pytest.approx(outcomes.tolist().count("win") / n, abs=0.03)


def test_lc_rate_recovers_the_truth_of_a_known_model():
    rng = np.random.default_rng(2)
    n = 2000
    domains = rng.choice(["a", "b"], n)
    f = rng.uniform(-0.6, 0.6, n)
    base = np.where(domains == "a", -0.5, 0.5)
    outcomes = np.where(rng.random(n) < 1 / (1 + np.exp(-(base + 2.5 * f))), "win", "loss")
    truth = np.mean(1 / (1 + np.exp(-base)))
    res = length_controlled_rates(list(outcomes), f, domains=list(domains), n_boot=200)
    assert res["lc_win_rate_ci"][0] <= truth <= res["lc_win_rate_ci"][1]
    assert res["length_coef_win"] == pytest.approx(2.5, abs=0.4)


def test_length_views_bins_and_longer_wins():
    view = length_views(["win", "loss", "tie", "win", None], [10, 10, 10, 30, 99], [20, 5, 10, 20, 1])
    assert view["avg_words"] == 15 and view["reference_avg_words"] == 13.75
    # decisive with lengths differing: q0 the shorter system won, q1 the shorter reference won, q3 the longer won
    assert view["p_longer_wins"] == pytest.approx(1 / 3)
    assert view["by_length_ratio"]["shorter"]["n"] == 1 and view["by_length_ratio"]["longer"]["n"] == 2
    assert view["by_length_ratio"]["similar"]["win_tie_rate"] == 1.0


def test_style_control_rejects_mismatched_feature_names():
    with pytest.raises(Exception, match="feature_names has 1"):
        style_controlled_bradley_terry([("a", "b", "win")], np.zeros((1, 2)), feature_names=["length"])


def test_length_aware_reward_takes_out_the_judges_length_advantage(tmp_path):
    from metric_arena.train import reward_function

    rng = np.random.default_rng(3)
    n = 150
    ref_words = rng.integers(10, 80, n)
    refs = [" ".join(["ref"] * int(w)) for w in ref_words]
    concise, verbose = answers(rng, ref_words, 1.0, 0.3), answers(rng, ref_words, 2.0, 0.3)
    cols = dict(question=[f"question {i}?" for i in range(n)] * 2, answer=refs * 2, qid=[f"q{i}" for i in range(n)] * 2)
    gaps = {}
    with OpenAIServer(length_biased(3.0)) as server:
        for control in (None, "regress"):
            reward = reward_function(judge=JudgeConfig("openai:biased"), length_control=control,
                                     run=RunConfig(base_url=server.base_url, api_key="k", max_concurrency=16,
                                                   cache_dir=str(tmp_path / "cache")))
            scores = reward(prompts=["p"] * 2 * n, completions=concise + verbose, **cols)
            gaps[control] = np.mean(scores[n:]) - np.mean(scores[:n])
            if control:
                assert reward.length_slope > 0.3
    assert gaps[None] > 0.10
    assert abs(gaps["regress"]) < 0.5 * gaps[None]
    with pytest.raises(Exception, match="length_control='trim' is not known. Available: None"):
        reward_function(judge="openai:x", length_control="trim")


def test_style_control_without_style_differences_is_the_plain_bradley_terry_fit():
    from metric_arena.stats import BattleCounts, fit_bradley_terry

    rng = random.Random(4)
    battles = [(a, b, rng.choice(["win", "win", "tie", "loss"])) for a, b in [("A", "LFRQA"), ("B", "LFRQA"),
                                                                              ("A", "B")] * 60]
    plain = fit_bradley_terry(BattleCounts.from_battles(battles), anchor="LFRQA")
    styled = style_controlled_bradley_terry(battles, np.zeros((len(battles), 1)), feature_names=["length"],
                                            anchor="LFRQA", n_boot=20)
    for player, rating in plain.items():
        assert styled["ratings"][player]["rating"] == pytest.approx(rating, abs=0.01)
        low, high = styled["ratings"][player]["rating_ci"]
        assert low <= styled["ratings"][player]["rating"] <= high


def test_a_tournament_report_holds_style_controlled_ratings(tmp_path, lfrqa_data_dir):
    import lfrqa
    from metric_arena.judge import tournament
    from metric_arena.report import write_report

    ds = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    rows = [ds[i] for i in range(40)]
    rng = np.random.default_rng(5)
    ref_words = [len(r["answer"].split()) for r in rows]
    files = {}
    for name, ratio in (("concise", 1.0), ("verbose", 2.5)):
        texts = answers(rng, ref_words, ratio, 0.3)
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps({"qid": r["qid"], "answer": t}) + "\n" for r, t in zip(rows, texts)))
    with OpenAIServer(length_biased(3.0)) as server:
        tournament(list(files.values()), out=tmp_path / "runs", judge=JudgeConfig("openai:biased", order="random"),
                   run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "cache"), sample=40,
                   n_boot=20, data_dir=lfrqa_data_dir)
    board = write_report(sorted((tmp_path / "runs").glob("*/")), tmp_path / "lb", n_boot=100, plots=False)
    entries = {e["system"]: e for e in json.loads((tmp_path / "lb" / "leaderboard.json").read_text())}
    for name in ("concise", "verbose", "LFRQA"):
        assert entries[name]["style_controlled_rating"] is not None and entries[name]["avg_words"] > 0
        low, high = entries[name]["style_controlled_rating_ci"]
        assert low <= entries[name]["style_controlled_rating"] <= high
    assert entries["LFRQA"]["style_controlled_rating"] == 1000
    assert board.length["n_battles_with_lengths"] == 40 * 3
    assert set(board.length["style_coefficients"]) == {"length"}  # no answer has markdown: the same in every battle
    assert board.length["style_features_dropped"] == ["markdown"] and "dropped" in board.length["style_features_note"]
