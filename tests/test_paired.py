"""Paired comparison of two systems judged against LFRQA on the same queries."""

from __future__ import annotations

import numpy as np
import pytest

from metric_arena.stats import paired_comparison, sign_test


def _outcomes(p_win: np.ndarray, seed: int) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    return {f"q{i}": ("win" if rng.random() < p else "loss") for i, p in enumerate(p_win)}


def test_hand_computed_example():
    a = {"q1": "win", "q2": "win", "q3": "tie", "q4": "loss", "q5": None}
    b = {"q1": "loss", "q2": "win", "q3": "loss", "q4": "loss", "q5": "win", "q6": "win"}
    r = paired_comparison(a, b, names=("sys-a", "sys-b"))
    assert (r["n"], r["n_shared"], r["n_failed"]) == (4, 5, 1)
    assert (r["rate_a"], r["rate_b"], r["difference"]) == (0.5, 0.25, 0.25)
    assert (r["n_a_better"], r["n_b_better"], r["p_value"]) == (1, 0, 1.0)
    assert r["system_a"] == "sys-a" and "sign test" in r["test"]
    r = paired_comparison(a, b, metric="win_tie_rate")
    assert (r["rate_a"], r["rate_b"], r["n_a_better"]) == (0.75, 0.25, 2)


def test_real_difference_is_detected_and_none_is_not():
    n = 1500
    difficulty = np.random.default_rng(0).uniform(0.1, 0.9, size=n)  # shared per-query difficulty
    better = _outcomes(np.clip(difficulty + 0.1, 0, 1), seed=1)
    base = _outcomes(difficulty, seed=2)
    same = _outcomes(difficulty, seed=3)
    r = paired_comparison(better, base, n_boot=500, seed=0)
    assert r["difference_ci"][0] <= 0.1 <= r["difference_ci"][1]
    assert r["difference_ci"][0] > 0 and r["p_value"] < 1e-4
    r = paired_comparison(same, base, n_boot=500, seed=0)
    assert r["difference_ci"][0] < 0 < r["difference_ci"][1] and r["p_value"] > 0.05


def test_identical_systems():
    a = {f"q{i}": o for i, o in enumerate(["win", "tie", "loss"] * 10)}
    r = paired_comparison(a, dict(a))
    assert r["difference"] == 0 and r["difference_ci"] == [0.0, 0.0] and r["p_value"] == 1.0


def test_sign_test_exact_values():
    assert sign_test(9, 1) == pytest.approx(22 / 1024)
    assert sign_test(0, 7) == pytest.approx(2 / 128)
    assert sign_test(0, 0) == 1.0 and sign_test(5, 5) == 1.0
    stats = pytest.importorskip("scipy.stats")
    for k_plus, k_minus in [(50, 30), (5000, 5160), (3, 12)]:
        assert sign_test(k_plus, k_minus) == pytest.approx(stats.binomtest(k_plus, k_plus + k_minus).pvalue, rel=1e-9)


def test_errors_name_the_bad_value():
    with pytest.raises(ValueError, match="Unknown metric 'accuracy'"):
        paired_comparison({}, {}, metric="accuracy")
    with pytest.raises(ValueError, match="Unknown outcome 'draw' for A on qid 'q1'"):
        paired_comparison({"q1": "draw"}, {"q1": "win"})
    empty = paired_comparison({"q1": "win"}, {"q2": "win"})
    assert empty["n"] == 0 and empty["p_value"] == 1.0 and np.isnan(empty["difference"])
