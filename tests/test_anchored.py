"""Anchored rates (PPI++): the estimator, its interval, the anchor size, on data of known truth."""

from __future__ import annotations

import numpy as np
import pytest

from lfrqa.errors import RagQaArenaError
from metric_arena.stats import MIN_ANCHORS, Intervals, anchor_size, anchored_rate


def _shifted(rng, p=0.5, big_n=3000, n=300):
    truth = (rng.random(big_n) < p).astype(float)
    cheap = np.where(truth == 0, (rng.random(big_n) < 0.2).astype(float), truth)  # +10 points at p = 0.5
    anchors = rng.choice(big_n, size=n, replace=False)
    return truth, cheap, anchors


@pytest.mark.plain  # numpy and the standard library only (the core install has no scipy)
def test_anchored_rate_corrects_a_shifted_judge_and_is_narrower_than_the_reference_alone():
    rng = np.random.default_rng(3)
    hits = raw_hits = 0
    narrower = []
    for _ in range(200):
        truth, cheap, anchors = _shifted(rng)
        r = anchored_rate(truth[anchors], cheap[anchors], cheap)
        hits += r["ci"][0] <= 0.5 <= r["ci"][1]
        raw_hits += r["cheap"]["ci"][0] <= 0.5 <= r["cheap"]["ci"][1]
        ref = r["reference_only"]["ci"]
        narrower.append((r["ci"][1] - r["ci"][0]) / (ref[1] - ref[0]))
        assert r["n"] == 300 and r["N"] == 3000 and 0 <= r["lambda"] <= 1 and r["n_effective"] > 300
    assert hits >= 180  # nominal 95% of 200
    assert raw_hits == 0  # the raw rate is 10 points off
    assert np.mean(narrower) < 0.8


@pytest.mark.plain  # numpy and the standard library only (the core install has no scipy)
def test_power_tuning_off_is_classic_ppi_and_the_estimate_is_exact_on_agreeing_judges():
    truth = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1] * 4, dtype=float)
    cheap_all = np.concatenate([truth, np.ones(60)])
    r = anchored_rate(truth, truth, cheap_all, power_tuning=False)
    assert r["lambda"] == 1.0
    assert r["estimate"] == pytest.approx(cheap_all.mean())  # the anchors see no error to correct
    tuned = anchored_rate(truth, truth, cheap_all)
    assert tuned["lambda"] == pytest.approx(1.0) and tuned["ci"][0] < tuned["estimate"] < tuned["ci"][1]


@pytest.mark.plain  # numpy and the standard library only (the core install has no scipy)
def test_a_judge_that_says_nothing_leaves_the_reference_only_estimate():
    rng = np.random.default_rng(0)
    truth = (rng.random(400) < 0.3).astype(float)
    r = anchored_rate(truth, np.ones(400), np.ones(4000))
    assert r["lambda"] == 0.0
    assert r["estimate"] == pytest.approx(truth.mean())
    assert r["ci"][1] - r["ci"][0] == pytest.approx(r["reference_only"]["ci"][1] - r["reference_only"]["ci"][0], rel=0.05)


@pytest.mark.plain  # numpy and the standard library only (the core install has no scipy)
def test_confidence_comes_from_intervals_and_too_few_anchors_give_no_interval():
    rng = np.random.default_rng(1)
    truth, cheap, anchors = _shifted(rng)
    wide = anchored_rate(truth[anchors], cheap[anchors], cheap, intervals=Intervals(confidence=0.99))
    narrow = anchored_rate(truth[anchors], cheap[anchors], cheap, intervals=Intervals(confidence=0.80))
    assert wide["ci"][1] - wide["ci"][0] > narrow["ci"][1] - narrow["ci"][0]
    few = anchored_rate(truth[: MIN_ANCHORS - 1], cheap[: MIN_ANCHORS - 1], cheap)
    assert few["estimate"] is None and few["ci"] == [None, None] and few["reference_only"]["estimate"] is not None


@pytest.mark.parametrize("args, words", [
    (([1, 0], [1], [1, 0, 1]), "same anchored pairs"),
    (([1, 0, 1], [1, 0, 1], [1, 0]), "subset"),
    (([1, 2], [1, 0], [1, 0, 1]), "0/1 outcomes"),
])
def test_bad_inputs_are_named(args, words):
    with pytest.raises(RagQaArenaError, match=words):
        anchored_rate(*args)


@pytest.mark.plain  # numpy and the standard library only (the core install has no scipy)
def test_anchor_size_from_a_pilot_reaches_the_half_width():
    rng = np.random.default_rng(5)
    truth, cheap, anchors = _shifted(rng, n=100)
    plan = anchor_size(truth[anchors], cheap[anchors], n_total=3000, half_width=0.04)
    assert plan["n_anchored"] < plan["n_reference_only"] <= 700
    widths = []
    for _ in range(50):
        truth, cheap, anchors = _shifted(rng, n=plan["n_anchored"])
        r = anchored_rate(truth[anchors], cheap[anchors], cheap)
        widths.append((r["ci"][1] - r["ci"][0]) / 2)
    assert np.mean(widths) == pytest.approx(0.04, abs=0.006)
    assert anchor_size(truth[anchors], cheap[anchors], n_total=3000, half_width=0.001)["n_anchored"] is None
    with pytest.raises(RagQaArenaError, match="pilot"):
        anchor_size([1, 0], [1, 0], n_total=100, half_width=0.05)


# --- the judge card's anchored figures and reading -------------------------------------------------------------
def _runs(judge: str, outcomes: dict[str, dict[str, str]], tmp_path):
    from metric_arena.report import Run

    runs = []
    for system, per_qid in outcomes.items():
        verdicts = [{"qid": q, "domain": "fiqa", "system_a": system, "system_b": "LFRQA", "outcome": o,
                     "failed": False, "judgments": [{"judge": judge, "raw": f"{judge}:{q}:{o}", "outcome": o}]}
                    for q, o in per_qid.items()]
        runs.append(Run(path=tmp_path / judge / system, system=system, opponent="LFRQA", judges=[judge],
                        summary={"order": "paper"}, verdicts=verdicts))
    return runs


@pytest.mark.parametrize("shift, reading", [(0.0, "can rank systems and give absolute rates"),
                                            (0.15, "can rank systems; absolute rates only when anchored")])
def test_the_card_anchors_the_candidate_and_reads_it(tmp_path, shift, reading):
    from metric_arena.calibrate import calibrate_judges

    rng = np.random.default_rng(11)
    qids = [f"q{i}" for i in range(1500)]
    anchors = set(rng.choice(qids, size=600, replace=False).tolist())
    truth, cheap, rates = {}, {}, {"a": 0.25, "b": 0.45, "c": 0.65}
    for system, p in rates.items():
        t = {q: "win" if rng.random() < p else "loss" for q in qids}
        agree = {q: rng.random() < 0.97 for q in qids}
        c = {q: t[q] if agree[q] else ("loss" if t[q] == "win" else "win") for q in qids}
        c = {q: "win" if o == "loss" and rng.random() < shift / (1 - p) else o for q, o in c.items()}
        truth[system] = {q: o for q, o in t.items() if q in anchors}
        cheap[system] = c
    card = calibrate_judges(reference=_runs("openai:big", truth, tmp_path),
                            candidate=_runs("openai:small", cheap, tmp_path), n_boot=100)
    assert card["reading"]["reading"] == reading
    for system, p in rates.items():
        a = card["anchored"][system]
        assert a["n_anchors"] == 600 and a["n_candidate"] == 1500
        assert a["win_rate"]["ci"][0] - 0.02 <= p <= a["win_rate"]["ci"][1] + 0.02
        assert abs(a["win_rate"]["raw"] - p - shift) < 0.05


def test_the_reading_says_neither_when_the_judges_barely_agree():
    from metric_arena.calibrate import plain_reading

    card = {"kappa_ci": [0.1, 0.3], "rank_correlation": {"n_systems": 3, "spearman": 1.0},
            "shift_ci": {"a": {"win_rate": [-0.01, 0.01]}}}
    assert plain_reading(card)["reading"].startswith("neither")
    card["kappa_ci"] = [0.5, 0.7]
    card["rank_correlation"]["spearman"] = 0.5
    assert plain_reading(card)["reading"].startswith("absolute rates only when anchored")
    card["rank_correlation"] = {"n_systems": 2, "spearman": None}
    assert not plain_reading(card)["can_rank"]


@pytest.mark.plain  # numpy and the standard library only (the core install has no scipy)
def test_power_tuning_narrows_the_interval_of_a_noisy_judge_below_classic_ppi():
    rng = np.random.default_rng(8)
    tuned, classic, lambdas = [], [], []
    for _ in range(100):
        truth = (rng.random(3000) < 0.3).astype(float)
        cheap = np.where(rng.random(3000) < 0.5, truth, (rng.random(3000) < 0.5).astype(float))
        anchors = rng.choice(3000, size=300, replace=False)
        a = anchored_rate(truth[anchors], cheap[anchors], cheap)
        b = anchored_rate(truth[anchors], cheap[anchors], cheap, power_tuning=False)
        tuned.append(a["ci"][1] - a["ci"][0])
        classic.append(b["ci"][1] - b["ci"][0])
        lambdas.append(a["lambda"])
    assert 0.3 < np.mean(lambdas) < 0.8
    assert np.mean(tuned) < 0.97 * np.mean(classic)
