"""Length control that is honest about what the data can say: finite fits when a system is always
longer or shorter than the reference, the support check (``lc_note``), intervals that widen instead of
collapsing, a warning that says what the data shows, and the newcomer's case end to end (the judge CLI
against the local server, then ``report``)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re

import numpy as np
import pytest

from lfrqa.errors import RagQaArenaError
from metric_arena.stats import LengthControl, length_controlled_rates
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer

_ANSWER = re.compile(r"<answer ([12])>\n(.*?)\n</answer \1>", re.S)
_QUALITY = re.compile(r"^Q(-?\d+\.\d+)\b")


def _blind_outcomes(rng, n, p_win=0.35, p_tie=0.3):
    return list(rng.choice(["win", "tie", "loss"], n, p=[p_win, p_tie, 1 - p_win - p_tie]))


def _width(ci):
    return ci[1] - ci[0]


@pytest.mark.parametrize("f", [0.2, -0.2])
def test_a_system_always_longer_or_shorter_gets_finite_coefficients_and_no_lc_rate(f):
    rng = np.random.default_rng(0)
    outcomes = _blind_outcomes(rng, 120)
    res = length_controlled_rates(outcomes, [f] * 120, domains=list(rng.choice(["a", "b", "c"], 120)), n_boot=300)
    assert res["lc_win_rate"] is None and res["lc_win_tie_rate"] is None
    assert res["lc_win_rate_ci"] is None and res["lc_win_tie_rate_ci"] is None
    assert res["n_near_equal_length"] == 0
    assert res["lc_note"].startswith("not identifiable: only 0 of 120 judged questions lie near equal length")
    assert res["warning"] is None and res["length_coef_significant"] is False
    for key in ("length_coef_win", "length_coef_win_tie"):
        low, high = res[f"{key}_ci"]
        assert abs(res[key]) < 1.0 and low < 0 < high and high - low > 8  # the slope stays at its prior N(0, 3^2)
    json.dumps(res, allow_nan=False)


def test_without_the_support_check_the_interval_widens_and_holds_the_raw_rate():
    rng = np.random.default_rng(1)
    outcomes = _blind_outcomes(rng, 120)
    unchecked = LengthControl(min_near=0)
    far = length_controlled_rates(outcomes, [0.2] * 120, n_boot=300, control=unchecked)
    near = length_controlled_rates(outcomes, rng.uniform(-0.2, 0.2, 120), n_boot=300, control=unchecked)
    for key, raw in (("lc_win_rate", "win_rate"), ("lc_win_tie_rate", "win_tie_rate")):
        low, high = far[f"{key}_ci"]
        assert 0 < low < far[raw] < high < 1 and abs(far[key] - far[raw]) < 0.03
        assert _width(far[f"{key}_ci"]) > 1.3 * _width(near[f"{key}_ci"])
    assert _width(far["lc_win_rate_ci"]) > 0.25


def test_a_steeper_prior_on_the_slope_widens_only_what_the_data_cannot_tell():
    rng = np.random.default_rng(2)
    outcomes = _blind_outcomes(rng, 150)
    f_far = np.full(150, 0.25)
    f_spread = rng.uniform(-0.4, 0.4, 150)
    widths = {}
    for sd in (1.0, 6.0):
        control = LengthControl(slope_prior_sd=sd, min_near=0)
        widths[sd] = [_width(length_controlled_rates(outcomes, f, n_boot=300, control=control)["lc_win_rate_ci"])
                      for f in (f_far, f_spread)]
    assert widths[6.0][0] > 2 * widths[1.0][0]  # no data near f = 0: the prior decides the width
    assert widths[6.0][1] == pytest.approx(widths[1.0][1], rel=0.35)  # data near f = 0: it barely matters


def test_the_support_check_counts_questions_within_08_to_125_times_the_reference():
    ratio = np.array([1.25] * 9 + [1.26] * 5 + [2.0] * 30)
    f = (ratio - 1) / (ratio + 1)
    outcomes = ["win", "loss"] * 22
    res = length_controlled_rates(outcomes, f, n_boot=50)
    assert res["n_near_equal_length"] == 9 and res["lc_win_rate"] is None
    assert "only 9 of 44" in res["lc_note"] and "10 needed" in res["lc_note"]
    shorter_f = f.copy()
    shorter_f[:10] = (0.8 - 1) / (0.8 + 1)  # 0.8x counts as near, as 1.25x does
    shorter = length_controlled_rates(outcomes, shorter_f, n_boot=50)
    assert shorter["n_near_equal_length"] == 10 and shorter["lc_win_rate"] is not None and shorter["lc_note"] is None
    looser = length_controlled_rates(outcomes, f, n_boot=50, control=LengthControl(near=0.15, min_near=14))
    assert looser["n_near_equal_length"] == 14 and looser["lc_win_rate"] is not None


def test_a_handful_of_outcomes_never_gives_a_certainty():
    res = length_controlled_rates(["win"] * 12, np.linspace(-0.1, 0.1, 12), n_boot=300)
    low, high = res["lc_win_rate_ci"]
    assert res["lc_win_rate"] < 1 and low < 0.8 and high - low > 0.15
    losses = length_controlled_rates(["loss"] * 3 + ["tie"] * 9, np.linspace(-0.1, 0.1, 12), n_boot=300)
    assert losses["lc_win_rate"] > 0 and losses["lc_win_rate_ci"][1] > 0.2


def test_a_judge_that_rewards_length_is_named_only_when_the_slope_is_significant():
    rng = np.random.default_rng(3)
    n = 60
    f = np.concatenate([rng.uniform(-0.1, 0.1, 12), rng.uniform(0.25, 0.4, 48)])
    outcomes = np.where(rng.random(n) < np.where(np.abs(f) < 0.11, 0.25, 0.5), "win", "loss")
    weak = length_controlled_rates(list(outcomes), f, n_boot=300)
    assert weak["length_coef_significant"] is False and weak["length_coef_win_ci"][0] < 0
    assert weak["warning"].startswith(f"its win rate moves by {(weak['lc_win_rate'] - weak['win_rate']) * 100:+.1f} "
                                      "points")
    assert "when lengths are equalised; the length coefficient's interval holds 0" in weak["warning"]
    assert "favour" not in weak["warning"]

    f = rng.uniform(-0.2, 0.6, 600)
    outcomes = np.where(rng.random(600) < 1 / (1 + np.exp(-(3.0 * f - 0.3))), "win", "loss")
    strong = length_controlled_rates(list(outcomes), f, n_boot=300)
    assert strong["length_coef_significant"] is True and strong["length_coef_win_ci"][0] > 1
    assert "when lengths are equalised; the judge's verdicts favour the longer answer (length coefficient" \
        in strong["warning"]


def test_length_control_options_are_checked():
    with pytest.raises(RagQaArenaError, match=r"LengthControl\(slope_prior_sd=0\): give a positive number"):
        LengthControl(slope_prior_sd=0)
    with pytest.raises(RagQaArenaError, match="near must lie in"):
        LengthControl(near=1.5)


def _blind_judge(body, attempt):
    """A judge that ignores length: quality written as a first word ``Q<value>`` (LFRQA's answers: 0)
    plus logistic noise drawn from a hash of the request; a tie within 0.4."""
    text = body["messages"][-1]["content"]
    answers = dict(_ANSWER.findall(text))
    quality = [float(m.group(1)) if (m := _QUALITY.match(answers[k])) else 0.0 for k in "12"]
    u = random.Random(hashlib.sha256(text.encode()).hexdigest()).random()
    score = quality[0] - quality[1] + math.log(u / (1 - u))
    return f"<rating>{1 if score > 0.4 else 2 if score < -0.4 else 0}</rating>"


@pytest.fixture(scope="module")
def newcomer_board(tmp_path_factory, lfrqa_data_dir):
    """The newcomer's case: three systems judged by a length-blind judge through the judge CLI against
    the local server, one of them 1.5x LFRQA's length on every question; then ``report``."""
    import lfrqa

    root = tmp_path_factory.mktemp("newcomer")
    ds = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    rows = [ds[i] for i in range(120)]
    rng = np.random.default_rng(7)
    systems = {"verbose": (0.3, lambda words: round(1.5 * words)),
               "concise": (0.3, lambda words: round(words * math.exp(rng.normal(0, 0.3)))),
               "weak": (-1.0, lambda words: round(words * math.exp(rng.normal(0, 0.3))))}
    runs = []
    with OpenAIServer(_blind_judge) as server:
        for name, (quality, length) in systems.items():
            preds = root / f"{name}.jsonl"
            lines = []
            for r in rows:
                words = max(2, length(len(r["answer"].split())))
                lines.append({"qid": r["qid"], "answer": f"Q{quality + rng.normal(0, 0.5):.3f} "
                              + " ".join(["word"] * (words - 1))})
            preds.write_text("".join(json.dumps(line) + "\n" for line in lines))
            runs.append(root / "runs" / name)
            assert main(["judge", "--predictions", str(preds), "--judge", "openai:blind", "--order", "random",
                         "--out", str(runs[-1]), "--base-url", server.base_url, "--api-key", "sk-local-test",
                         "--cache-dir", str(root / "cache"), "--data-dir", str(lfrqa_data_dir),
                         "--no-progress"]) == 0
    return root, runs


def test_the_newcomers_case_reports_not_identifiable_never_a_zero_width_interval(newcomer_board, capsys):
    root, runs = newcomer_board
    capsys.readouterr()
    assert main(["report", *map(str, runs), "--out", str(root / "lb"), "--n-boot", "300", "--no-plots"]) == 0
    printed = capsys.readouterr()
    text = (root / "lb" / "leaderboard.json").read_text()
    entries = {e["system"]: e for e in json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))}
    verbose = entries["verbose"]
    assert verbose["n"] == 120 and verbose["avg_words"] > 1.4 * entries["concise"]["avg_words"]
    assert verbose["lc_win_rate"] is None and verbose["lc_win_tie_rate"] is None
    assert verbose["lc_win_rate_ci"] is None and verbose["lc_win_tie_rate_ci"] is None
    assert verbose["lc_note"].startswith("not identifiable: only 0 of 120 judged questions lie near equal length")
    assert verbose["length_coef_significant"] is False and abs(verbose["length_coef_win"]) < 2
    for name in ("concise", "weak"):
        e = entries[name]
        assert e["lc_note"] is None and e["n_near_equal_length"] >= 10
        for key, raw in (("lc_win_rate", "win_rate"), ("lc_win_tie_rate", "win_tie_rate")):
            low, high = e[f"{key}_ci"]
            assert 0 < low <= e[key] <= high < 1 and high - low > 0.1 and low <= e[raw] <= high
    assert "verbose: length-controlled rates not identifiable: only 0 of 120" in printed.err + printed.out
    assert "favour the longer" not in printed.err + printed.out
    assert re.search(r"verbose[^\n]*not id\.[^\n]*not id\.", printed.out)  # the terminal's length table
    assert "depend on length" not in printed.err + printed.out
    html = (root / "lb" / "leaderboard.html").read_text()
    assert 'title="not identifiable: only 0 of 120' in html and ">not identifiable<" in html


@pytest.mark.parametrize("n", [60, 180])
@pytest.mark.parametrize("spread", [0.0, 0.15])
def test_a_blind_judge_and_a_system_15x_as_long_never_get_a_collapsed_lc_interval(n, spread):
    """The newcomer's case on many seeds, through the report's own length figures on verdicts: 1.5x
    LFRQA's length on every question (exactly, or spread by a log-sd of 0.15, when some questions
    fall within 1.25x): not identifiable with a reason, or a wide interval that holds the raw rate."""
    from metric_arena.style import length_report

    for seed in range(6):
        rng = np.random.default_rng(seed)
        ref = np.maximum(2, np.round(np.exp(rng.normal(4.1, 0.77, n)))).astype(int)
        words = np.maximum(2, np.round(ref * 1.5 * np.exp(rng.normal(0, spread, n)))).astype(int)
        verdicts = [{"qid": f"q{k}", "domain": ["fiqa", "science"][k % 2], "outcome": o, "no_answer_a": False,
                     "style_a": {"words": int(w), "tokens": int(w)}, "style_b": {"words": int(r), "tokens": int(r)}}
                    for k, (o, w, r) in enumerate(zip(_blind_outcomes(rng, n), words, ref))]
        block = length_report(verdicts, n_boot=200, seed=seed)
        for key, raw in (("lc_win_rate", "win_rate"), ("lc_win_tie_rate", "win_tie_rate")):
            if block[key] is None:
                assert block["lc_note"].startswith("not identifiable: only") and block[f"{key}_ci"] is None
                assert block["n_near_equal_length"] < 10
                continue
            low, high = block[f"{key}_ci"]
            assert 0.0 < low <= block[raw] <= high < 1.0 and high - low > 0.15, (seed, key, low, high)
            assert 0.0 < block[key] < 1.0
        assert spread or block["lc_win_rate"] is None
