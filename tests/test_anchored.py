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


def test_power_tuning_off_is_classic_ppi_and_the_estimate_is_exact_on_agreeing_judges():
    truth = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1] * 4, dtype=float)
    cheap_all = np.concatenate([truth, np.ones(60)])
    r = anchored_rate(truth, truth, cheap_all, power_tuning=False)
    assert r["lambda"] == 1.0
    assert r["estimate"] == pytest.approx(cheap_all.mean())  # the anchors see no error to correct
    tuned = anchored_rate(truth, truth, cheap_all)
    assert tuned["lambda"] == pytest.approx(1.0) and tuned["ci"][0] < tuned["estimate"] < tuned["ci"][1]


def test_a_judge_that_says_nothing_leaves_the_reference_only_estimate():
    rng = np.random.default_rng(0)
    truth = (rng.random(400) < 0.3).astype(float)
    r = anchored_rate(truth, np.ones(400), np.ones(4000))
    assert r["lambda"] == 0.0
    assert r["estimate"] == pytest.approx(truth.mean())
    assert r["ci"][1] - r["ci"][0] == pytest.approx(r["reference_only"]["ci"][1] - r["reference_only"]["ci"][0], rel=0.05)


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
