"""The adaptive tournament's stopping rule: anytime-valid intervals, a budget never exceeded, and an error
rate under alpha on simulated equal systems (seeded, so the figures are fixed)."""

from __future__ import annotations

import numpy as np
import pytest

from lfrqa.errors import RagQaArenaError
from metric_arena.stats import BattleCounts, SequentialRanking, confidence_sequence, wilson_interval


def test_the_confidence_sequence_is_wider_than_one_look_and_shrinks():
    one_look = wilson_interval(60, 100)
    low, high = confidence_sequence(60, 0, 100, level=0.05)
    assert low < one_look[0] and high > one_look[1]  # the price of looking at every n
    widths = [np.subtract(*confidence_sequence(n // 2, 0, n, level=0.05)[::-1]) for n in (50, 200, 800, 3200)]
    assert widths == sorted(widths, reverse=True) and widths[-1] < 0.1
    assert confidence_sequence(0, 0, 0) == (0.0, 1.0)
    assert confidence_sequence(10, 10, 20, level=0.05) == pytest.approx(confidence_sequence(15, 0, 20, level=0.05))
    with pytest.raises(RagQaArenaError, match="level=1.5"):
        confidence_sequence(1, 0, 2, level=1.5)
    with pytest.raises(RagQaArenaError, match="wins=5"):
        confidence_sequence(5, 0, 2)


def test_equal_systems_are_rarely_declared_separated_at_any_look():
    """500 simulated runs, two equal systems, a look after every 10 battles up to 1,000: the share of runs
    whose interval ever excludes 1/2 stays under alpha (one look at a 95% interval errs 5%, many looks far more)."""
    rng = np.random.default_rng(0)
    ever, peeked = 0, 0
    for _ in range(500):
        wins = np.cumsum(rng.random(1000) < 0.5)
        ns = np.arange(10, 1001, 10)
        intervals = [confidence_sequence(int(wins[n - 1]), 0, int(n), level=0.05) for n in ns]
        ever += any(low > 0.5 or high < 0.5 for low, high in intervals)
        peeked += any(low > 0.5 or high < 0.5 for low, high in (wilson_interval(int(wins[n - 1]), int(n)) for n in ns))
    assert ever / 500 <= 0.05 and peeked / 500 > 0.15, (ever, peeked)


def test_a_round_never_spends_past_the_budget_nor_the_questions():
    rule = SequentialRanking(["a", "b", "c", "d"], alpha=0.05)
    records = {(x, y): (0.0, 0.0, 0.0) for i, x in enumerate(rule.systems) for y in rule.systems[i + 1:]}
    for budget in (1, 2, 3, 7, 100):
        plan = rule.plan(records, ["a", "b", "c", "d"], n_max=20, round_size=50, budget_left=budget)
        assert sum(plan.grown.values()) == min(budget, 50, 3 * 20) and all(n <= 20 for n in plan.grown.values())
    assert rule.plan(records, ["a", "b", "c", "d"], n_max=20, round_size=50, budget_left=0).stopped == "budget"
    full = rule.plan(records, ["a", "b", "c", "d"], n_max=20, round_size=50, budget_left=100,
                     taken=dict.fromkeys(records, 20))
    assert full.stopped == "questions exhausted" and not full.grown


def test_separated_neighbours_stop_and_a_wrong_way_pair_is_reordered():
    rule = SequentialRanking(["a", "b", "c"], alpha=0.05)
    records = {("a", "b"): (0.0, 0.0, 300.0), ("a", "c"): (300.0, 0.0, 0.0), ("b", "c"): (300.0, 0.0, 0.0)}
    plan = rule.plan(records, ["a", "b", "c"], n_max=1000, round_size=10, budget_left=10)
    assert plan.ranking == ["b", "a", "c"] and plan.stopped == "separated" and not plan.grown
    assert [(n["upper"], n["lower"], n["separated"]) for n in plan.neighbours] == [("b", "a", True), ("a", "c", True)]
    counts = BattleCounts.from_battles([("a", "LFRQA", "win")] * 5 + [("b", "LFRQA", "loss")] * 5
                                       + [("c", "LFRQA", "tie")] * 5 + [("a", "b", "win"), ("c", "b", "tie")],
                                       ["LFRQA", "a", "b", "c"])
    ranking, seen = rule.look(counts, anchor="LFRQA")
    assert ranking == ["a", "c", "b"] and seen[("a", "b")] == (1.0, 0.0, 0.0) and seen[("b", "c")] == (0.0, 1.0, 0.0)
    with pytest.raises(RagQaArenaError, match="alpha=0"):
        SequentialRanking(["a", "b"], alpha=0)
