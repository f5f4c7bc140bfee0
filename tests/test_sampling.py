"""Stratified sub-sampling and sequential stopping, checked against hand-computed values."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from metric_arena.stats import IntervalStopper, stratified_sample, wilson_interval

SIZES = {"a": 50, "b": 30, "c": 15, "d": 4, "e": 1}


def _fixture(sizes=SIZES):
    ids, domains = [], []
    for domain, size in sizes.items():
        for i in range(size):
            ids.append(f"{domain}-{i:03d}")
            domains.append(domain)
    return ids, domains


def _counts(sample, ids, domains):
    by_id = dict(zip(ids, domains))
    return Counter(by_id[q] for q in sample)


def test_largest_remainder_with_at_least_one_per_domain():
    ids, domains = _fixture()
    # quotas for n=10: a 5, b 3, c 1.5, d 0.4, e 0.1 -> floors 5,3,1,0,0 + the largest remainder (c) = 5,3,2,0,0;
    # then one each for d (taken from c, 0.5 above its quota) and e (a and b are both at quota: a is larger).
    sample = stratified_sample(ids, domains, 10, seed=0)
    assert _counts(sample, ids, domains) == {"a": 4, "b": 3, "c": 1, "d": 1, "e": 1}
    assert len(set(sample)) == 10


def test_fewer_places_than_domains_is_plain_largest_remainder():
    ids, domains = _fixture()
    # n=3: quotas 1.5, 0.9, 0.45, 0.12, 0.03 -> floors 1,0,0,0,0, remainders b (0.9) then a (0.5).
    sample = stratified_sample(ids, domains, 3, seed=0)
    assert _counts(sample, ids, domains) == {"a": 2, "b": 1}


def test_remainder_ties_go_by_domain_name():
    assert stratified_sample(["y1", "x1"], ["y", "x"], 1, seed=3) == ["x1"]


def test_min_one_takes_from_the_largest_domain_at_quota():
    ids, domains = _fixture()
    sample = stratified_sample(ids, domains, 20, seed=1)
    counts = _counts(sample, ids, domains)
    # quotas 10, 6, 3, 0.8, 0.2 -> 10,6,3,0,0 + remainder d (0.8) = 10,6,3,1,0; e takes one from a, b or c
    # (all at quota; a is the largest)
    assert counts == {"a": 9, "b": 6, "c": 3, "d": 1, "e": 1}


def test_seeded_and_independent_of_input_order():
    ids, domains = _fixture()
    first = stratified_sample(ids, domains, 25, seed=7)
    pairs = list(zip(ids, domains))
    random.Random(0).shuffle(pairs)
    shuffled = stratified_sample([p[0] for p in pairs], [p[1] for p in pairs], 25, seed=7)
    assert shuffled == first
    assert stratified_sample(ids, domains, 25, seed=8) != first
    # Within a domain the first ids by sha256(f"{seed}:{qid}") are the ones kept.
    import hashlib

    rank = sorted((q for q in ids if q.startswith("b-")), key=lambda q: hashlib.sha256(f"7:{q}".encode()).hexdigest())
    assert sorted(q for q in first if q.startswith("b-")) == sorted(rank[: _counts(first, ids, domains)["b"]])


def test_every_prefix_of_the_order_stays_stratified():
    ids, domains = _fixture()
    order = stratified_sample(ids, domains, len(ids) + 5, seed=0)  # n above the total keeps everyone
    assert sorted(order) == sorted(ids)
    by_id = dict(zip(ids, domains))
    taken = Counter()
    for k, qid in enumerate(order, start=1):
        taken[by_id[qid]] += 1
        for domain, size in SIZES.items():
            assert abs(taken[domain] - k * size / 100) < 1.0 + 1e-9, (k, domain)


def test_empty_and_zero():
    assert stratified_sample([], [], 5, seed=0) == []
    assert stratified_sample(["q"], ["d"], 0, seed=0) == []


@pytest.mark.parametrize(
    "args, message",
    [
        ((["q1", "q2"], ["d"], 1, 0), "domains has 1"),
        ((["q1", "q1"], ["d", "d"], 1, 0), "'q1' appears twice"),
        ((["q1"], ["d"], -1, 0), "n must be a non-negative integer .*got -1"),
        ((["q1"], ["d"], 1.5, 0), "n must be a non-negative integer .*got 1.5"),
        ((["q1"], [None], 1, 0), "domain None"),
        (([1], ["d"], 1, 0), "id 1"),
        ((["q1"], ["d"], 1, "0"), "seed must be an integer, got '0'"),
    ],
)
def test_bad_input_is_named(args, message):
    with pytest.raises(ValueError, match=message):
        stratified_sample(*args)


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    lo0, hi0 = wilson_interval(0, 10)
    assert lo0 == 0.0 and round(hi0, 4) == 0.2775
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo90, hi90 = wilson_interval(8, 10, confidence=0.90)
    assert lo < lo90 and hi90 < hi
    with pytest.raises(ValueError, match="successes=11"):
        wilson_interval(11, 10)


def test_stopper_stops_at_hand_computed_n():
    # Alternating win/loss: the Wilson width first drops to 0.2 at n=93 (47/93: 0.1992; at 92: 0.2002).
    stop = IntervalStopper(target_width=0.2, min_n=10)
    n_fed = 0
    for outcome in ["win", "loss"] * 100:
        n_fed += 1
        if stop.update(outcome):
            break
    assert (n_fed, stop.n, stop.wins) == (93, 93, 47)
    assert 0.199 < stop.width <= 0.2
    summary = stop.summary()
    assert summary["stopped_early"] is True
    assert summary["win_tie_rate_wilson"] == pytest.approx(list(wilson_interval(47, 93)))


def test_stopper_waits_for_min_n_and_ignores_failed_pairs():
    # All wins: width z^2 / (n + z^2) is below 0.5 from n=4 on, but min_n=50 holds it back.
    stop = IntervalStopper(target_width=0.5, min_n=50)
    for _ in range(49):
        assert not stop.update("win")
    assert not stop.update(None)  # failed: counted, not judged
    assert (stop.n, stop.n_failed) == (49, 1)
    assert stop.update("win")
    assert stop.summary()["n"] == 51


def test_stopper_metric_choice():
    # 10 wins, 80 ties, 10 losses: win+tie 0.9 (narrow), win 0.1 (also narrow-ish); "both" takes the wider.
    outcomes = ["win"] * 10 + ["tie"] * 80 + ["loss"] * 10
    widths = {}
    for metric in IntervalStopper.METRICS:
        stop = IntervalStopper(target_width=0.01, min_n=1, metric=metric)
        for o in outcomes:
            stop.update(o)
        widths[metric] = stop.width
    lo, hi = wilson_interval(90, 100)
    assert widths["win_tie"] == pytest.approx(hi - lo)
    lo, hi = wilson_interval(10, 100)
    assert widths["win"] == pytest.approx(hi - lo)
    assert widths["both"] == pytest.approx(max(widths["win"], widths["win_tie"]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"target_width": 0}, "target_width=0"),
        ({"target_width": 1.5}, "target_width=1.5"),
        ({"target_width": 0.1, "min_n": 0}, "min_n must be a positive integer, got 0"),
        ({"target_width": 0.1, "confidence": 95}, "confidence=95"),
        ({"target_width": 0.1, "metric": "elo"}, "Unknown metric 'elo'"),
    ],
)
def test_stopper_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        IntervalStopper(**kwargs)


def test_stopper_bad_outcome():
    with pytest.raises(ValueError, match="Unknown outcome 'draw'"):
        IntervalStopper(0.1).update("draw")
