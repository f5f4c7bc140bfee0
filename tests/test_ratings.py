"""Bradley–Terry ratings on the Elo scale, fitted on aggregated counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metric_arena.stats import BattleCounts, bootstrap_bradley_terry, expected_score, fit_bradley_terry

TRUE = {"LFRQA": 1000.0, "A": 1180.0, "B": 1050.0, "C": 960.0, "D": 820.0}


def _sampled_counts(n_per_pair: int, seed: int = 0, tie: float = 0.0) -> BattleCounts:
    """Every pair of players meets n_per_pair times; outcomes drawn from the true ratings."""
    rng = np.random.default_rng(seed)
    players = sorted(TRUE)
    wins = np.zeros((len(players), len(players)))
    ties = np.zeros_like(wins)
    for i, a in enumerate(players):
        for j in range(i + 1, len(players)):
            score = expected_score(TRUE[a], TRUE[players[j]])
            won, tied, lost = rng.multinomial(n_per_pair, [score - tie / 2, tie, 1 - score - tie / 2])
            wins[i, j], wins[j, i] = won, lost
            ties[i, j] = ties[j, i] = tied
    return BattleCounts(players, wins, ties)


def test_recovers_known_ratings_with_intervals_containing_them():
    counts = _sampled_counts(3000, seed=3, tie=0.2)
    result = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=300, seed=0, confidence=0.99)
    assert result["LFRQA"]["rating"] == 1000.0 and result["LFRQA"]["rating_ci"] == [1000.0, 1000.0]
    for player, true in TRUE.items():
        low, high = result[player]["rating_ci"]
        assert low <= result[player]["rating"] <= high
        assert low - 1e-9 <= true <= high + 1e-9, (player, true, low, high)
        assert abs(result[player]["rating"] - true) < 15
        assert result[player]["n_battles"] == 4 * 3000
    order = sorted(TRUE, key=TRUE.get, reverse=True)
    assert sorted(result, key=lambda p: result[p]["rating"], reverse=True) == order


def test_matches_the_maximum_likelihood_of_scipy():
    optimize = pytest.importorskip("scipy.optimize")
    counts = _sampled_counts(200, seed=1, tie=0.1)
    scores = counts.scores()
    anchor = counts.players.index("LFRQA")
    free = [i for i in range(len(counts.players)) if i != anchor]

    def negative_log_likelihood(x):
        theta = np.zeros(len(counts.players))
        theta[free] = x
        diff = theta[:, None] - theta[None, :]
        return float((scores * np.logaddexp(0.0, -diff)).sum())

    best = optimize.minimize(negative_log_likelihood, np.zeros(len(free)), method="BFGS", options={"gtol": 1e-10})
    ours = fit_bradley_terry(counts, anchor="LFRQA", ridge=0.0)
    for k, i in enumerate(free):
        expected = 1000 + 400 * best.x[k] / math.log(10)
        assert ours[counts.players[i]] == pytest.approx(expected, abs=0.01)


def test_ties_count_as_half_a_win_like_duplicating_battles():
    battles = [("A", "B", "win")] * 30 + [("A", "B", "tie")] * 40 + [("A", "B", "loss")] * 10
    # The Chatbot Arena notebook's way: every battle twice, a tie a win for A once and for B once.
    duplicated = [b for b in battles if b[2] != "tie"] * 2 + [("A", "B", "win"), ("A", "B", "loss")] * 40
    ours = fit_bradley_terry(BattleCounts.from_battles(battles), anchor="B", ridge=0.0)
    theirs = fit_bradley_terry(BattleCounts.from_battles(duplicated), anchor="B", ridge=0.0)
    assert ours["A"] == pytest.approx(theirs["A"], abs=1e-6)
    # A scored 30 + 40/2 = 50 of 80: 1000 + 400 log10(50/30).
    assert ours["A"] == pytest.approx(1000 + 400 * math.log10(50 / 30), abs=0.01)
    only_ties = fit_bradley_terry(BattleCounts.from_battles([("A", "B", "tie")] * 5), anchor="A")
    assert only_ties == pytest.approx({"A": 1000.0, "B": 1000.0})


def test_scale_base_and_initial():
    counts = BattleCounts.from_battles([("A", "B", "win")] * 90 + [("A", "B", "loss")] * 10)
    default = fit_bradley_terry(counts, anchor="B", ridge=0.0)
    assert default["A"] == pytest.approx(1000 + 400 * math.log10(9), abs=1e-6)
    natural = fit_bradley_terry(counts, anchor="B", scale=1.0, base=math.e, initial=0.0, ridge=0.0)
    assert natural["A"] == pytest.approx(math.log(9), abs=1e-6)
    with pytest.raises(ValueError, match="scale=0"):
        fit_bradley_terry(counts, scale=0)


def test_without_anchor_ratings_are_centred():
    counts = _sampled_counts(100)
    ratings = fit_bradley_terry(counts)
    assert sum(ratings.values()) / len(ratings) == pytest.approx(1000.0)
    anchored = fit_bradley_terry(counts, anchor="LFRQA")
    shift = ratings["A"] - anchored["A"]
    # Same differences between players (up to the tiny ridge, which pulls towards a different player).
    assert all(ratings[p] - anchored[p] == pytest.approx(shift, abs=0.05) for p in ratings)


def test_player_who_never_won_stays_finite_and_last():
    counts = BattleCounts.from_battles(
        [("X", "LFRQA", "loss")] * 6 + [("Y", "LFRQA", "win")] * 3 + [("Y", "LFRQA", "loss")] * 3
    )
    result = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=200, seed=0)
    assert all(math.isfinite(r["rating"]) and (r["rating_ci"] is None or all(map(math.isfinite, r["rating_ci"])))
               for r in result.values())
    assert result["X"]["rating_ci"] is None and result["Y"]["rating_ci"] is None  # 6 battles: no interval
    assert result["X"]["rating"] < result["Y"]["rating"] - 300
    assert result["Y"]["rating"] == pytest.approx(1000.0, abs=0.01)


def test_bootstrap_is_seeded():
    counts = _sampled_counts(50, seed=2)
    one = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=100, seed=7)
    two = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=100, seed=7)
    other = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=100, seed=8)
    assert one == two
    assert one["A"]["rating_ci"] != other["A"]["rating_ci"]
    # Chunking does not change the draws.
    chunked = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=100, seed=7, chunk_size=7)
    assert chunked["A"]["rating_ci"] == pytest.approx(one["A"]["rating_ci"])


def test_more_battles_give_narrower_intervals():
    small = bootstrap_bradley_terry(_sampled_counts(50), anchor="LFRQA", n_boot=200)
    large = bootstrap_bradley_terry(_sampled_counts(2000), anchor="LFRQA", n_boot=200)
    width = lambda r: r["A"]["rating_ci"][1] - r["A"]["rating_ci"][0]  # noqa: E731
    assert width(large) < width(small) / 3


def test_battle_counts_and_errors():
    counts = BattleCounts.from_battles([("A", "B", "win"), ("B", "A", "win"), ("A", "C", "tie")])
    assert counts.players == ["A", "B", "C"]
    assert counts.wins[0, 1] == 1 and counts.wins[1, 0] == 1 and counts.ties[0, 2] == counts.ties[2, 0] == 1
    assert counts.n_battles == 3 and counts.battles_of("A") == 3 and counts.battles_of("C") == 1
    assert counts.components() == [["A", "B", "C"]]
    split = BattleCounts.from_battles([("A", "B", "win"), ("C", "D", "tie")])
    assert split.components() == [["A", "B"], ["C", "D"]]
    with pytest.raises(ValueError, match="Unknown outcome 'draw'"):
        BattleCounts.from_battles([("A", "B", "draw")])
    with pytest.raises(ValueError, match="against itself"):
        BattleCounts.from_battles([("A", "A", "win")])
    with pytest.raises(ValueError, match="Unknown player 'LFRQA'. Available: A, B, C"):
        fit_bradley_terry(counts, anchor="LFRQA")
    with pytest.raises(ValueError, match="symmetric"):
        BattleCounts(["A", "B"], np.zeros((2, 2)), np.array([[0, 1], [0, 0]]))
    with pytest.raises(ValueError, match="n_boot=0"):
        bootstrap_bradley_terry(counts, n_boot=0)


def test_bootstrap_on_aggregated_counts_of_12_players():
    """Its speed (1,000 bootstraps of 12 players) is measured in benchmarks/bradley_terry.py, not here."""
    players = ["LFRQA", *[f"s{k}" for k in range(11)]]
    rng = np.random.default_rng(0)
    wins = rng.integers(100, 3000, size=(12, 12)).astype(float)
    np.fill_diagonal(wins, 0)
    result = bootstrap_bradley_terry(BattleCounts(players, wins, np.zeros((12, 12))), anchor="LFRQA", n_boot=1000)
    assert len(result) == 12


def test_expected_score():
    assert expected_score(1000, 1000) == 0.5
    assert expected_score(1400, 1000) == pytest.approx(10 / 11)
