"""Known values that catch one-line statistics bugs: the bootstrap of ``summarize`` (seeded), win+tie
rates with failed pairs under both parses, and the stopping rule's ``alpha``."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.llm import RetryPolicy
from metric_arena.stats import SequentialRanking, summarize
from tests.openai_server import OpenAIServer, Reply
from metric_arena.judge import JudgeInputs

NO_RETRY = RetryPolicy(max_retries=0, initial=0.0, fail_fast_after=None)


# --------------------------------------------------------------------------------------------
# summarize: seeded bootstrap intervals of known value
# --------------------------------------------------------------------------------------------
def test_summarize_bootstrap_intervals_have_their_known_seeded_values():
    """60 judged pairs (30 wins, 12 ties, 18 losses) and 5 failed ones, in two domains, seed 0, 1,000 rounds:
    each round draws the number of wins among the n judged pairs (Binomial(n, rate) / n); failed pairs
    are in no rate and no resample."""
    outcomes = ["win"] * 30 + ["tie"] * 12 + ["loss"] * 18 + [None] * 5
    domains = (["fiqa", "science"] * 33)[:len(outcomes)]
    s = summarize(outcomes, domains, seed=0)
    assert (s["n"], s["n_failed"], s["n_judged"]) == (65, 5, 60)
    assert (s["win_rate"], s["win_tie_rate"]) == (0.5, 0.7)
    assert s["win_rate_ci"] == pytest.approx([22 / 60, 38 / 60], abs=1e-12)
    assert s["win_tie_rate_ci"] == pytest.approx([35 / 60, 49 / 60], abs=1e-12)
    for domain in ("fiqa", "science"):
        block = s["per_domain"][domain]
        assert block["n_judged"] == 30 and (block["win_rate"], block["win_tie_rate"]) == (0.5, 0.7)
        assert block["win_rate_ci"] == pytest.approx([10 / 30, 20 / 30], abs=1e-12)
        assert block["win_tie_rate_ci"] == pytest.approx([16 / 30, 26 / 30], abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_ten_pairs_half_won_give_the_binomial_quantiles_at_any_seed(seed):
    """5 wins in 10 judged pairs (and 2 failed): the 2.5% and 97.5% quantiles of Binomial(10, 0.5) / 10 are
    0.2 and 0.8 with a wide margin (P(X <= 1) = 0.011, P(X <= 2) = 0.055, P(X <= 7) = 0.945,
    P(X <= 8) = 0.989), so 1,000 rounds find them whatever the seed."""
    s = summarize(["win"] * 5 + ["loss"] * 5 + [None, None], seed=seed)
    assert s["win_rate_ci"] == pytest.approx([0.2, 0.8], abs=1e-12)
    assert s["win_tie_rate_ci"] == pytest.approx([0.2, 0.8], abs=1e-12)


# --------------------------------------------------------------------------------------------
# win+tie with failed pairs, under both parses
# --------------------------------------------------------------------------------------------
def test_win_tie_rate_leaves_failed_pairs_out_strictly_and_counts_them_as_ties_under_the_reference():
    outcomes = ["win"] * 4 + ["tie"] * 2 + ["loss"] * 4 + [None] * 6
    strict = summarize(outcomes)
    assert strict["n"] == 16 and strict["n_failed"] == 6
    assert strict["win_rate"] == pytest.approx(4 / 10) and strict["win_tie_rate"] == pytest.approx(6 / 10)
    as_tie = [o is None for o in outcomes]
    reference = summarize(["tie" if o is None else o for o in outcomes], failed_as_tie=as_tie)
    assert reference["n_failed"] == 6 and reference["n_failed_as_tie"] == 6
    assert reference["win_rate"] == pytest.approx(4 / 16) and reference["win_tie_rate"] == pytest.approx(12 / 16)


def _fails_every_third(body, attempt):
    k = int(re.search(r"question number (\d+)", body["messages"][-1]["content"]).group(1))
    if k % 3 == 0:
        return Reply(status=400)
    return f"<rating>{(1, 2, 0, 1, 1)[k % 5]}</rating>"


@pytest.mark.parametrize("parse", ["strict", "reference"])
def test_judge_pairs_rates_with_failed_pairs_under_both_parses(tmp_path, parse):
    n = 15
    questions = [f"question number {k}" for k in range(n)]
    with OpenAIServer(_fails_every_third) as server:
        result = judge_pairs(JudgeInputs(predictions=[f"a{k}" for k in range(n)],
                                         references=[f"r{k}" for k in range(n)], questions=questions,
                                         ids=[f"q{k}" for k in range(n)], system="sys"),
                             judge=JudgeConfig("openai:j", parse=parse),
                             run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "c",
                                           retry=NO_RETRY), out=tmp_path / "run")
    outcomes = [v["outcome"] for v in result["verdicts"]]
    failed = [v["failed"] for v in result["verdicts"]]
    assert sum(failed) == 5 and result["n_failed"] == 5  # q0, q3, q6, q9, q12
    wins, ties = outcomes.count("win"), outcomes.count("tie")
    if parse == "strict":
        assert outcomes.count(None) == 5 and wins + ties + outcomes.count("loss") == 10
        denominator = 10  # failed pairs are in no rate
    else:
        assert None not in outcomes and all(outcomes[k] == "tie" for k in range(0, n, 3))
        denominator = 15  # the authors' counting: a failed pair is a tie, in every rate
    assert result["win_rate"] == pytest.approx(wins / denominator)
    assert result["win_tie_rate"] == pytest.approx((wins + ties) / denominator)
    from metric_arena.report import build_leaderboard

    [entry] = [e for e in build_leaderboard([tmp_path / "run"], n_boot=20).entries if e["system"] == "sys"]
    assert entry["win_tie_rate"] == pytest.approx((wins + ties) / denominator)


# --------------------------------------------------------------------------------------------
# SequentialRanking: alpha decides when two systems are separated
# --------------------------------------------------------------------------------------------
def _looks_until_separated(alpha: float, results: np.ndarray, round_size: int = 10) -> int | None:
    """The number of battles after which ``SequentialRanking(alpha)`` declares a separated at the first look
    (None if never), feeding the same battles ``results`` (1 a win, 0.5 a tie, 0 a loss) round by round."""
    rule = SequentialRanking(["a", "b"], alpha=alpha)
    for n in range(round_size, len(results) + 1, round_size):
        seen = results[:n]
        record = (float((seen == 1).sum()), float((seen == 0.5).sum()), float((seen == 0).sum()))
        step = rule.plan({("a", "b"): record}, ["a", "b"], n_max=len(results), round_size=round_size,
                         budget_left=math.inf)
        if step.stopped == "separated":
            assert step.ranking == ["a", "b"]
            return n
    return None


def test_a_stricter_alpha_separates_later_on_the_same_battles():
    rng = np.random.default_rng(3)
    results = rng.choice([1.0, 0.5, 0.0], size=3000, p=[0.62, 0.08, 0.30])  # a beats b: p = 0.66
    loose = _looks_until_separated(0.2, results)
    strict = _looks_until_separated(0.001, results)
    assert loose is not None and strict is not None
    assert strict > loose, (loose, strict)
    # the same record: the stricter level's interval is wider
    wide = SequentialRanking(["a", "b"], alpha=0.001).interval((62.0, 8.0, 30.0))
    narrow = SequentialRanking(["a", "b"], alpha=0.2).interval((62.0, 8.0, 30.0))
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_a_stricter_alpha_never_separates_where_a_looser_one_does_not():
    rng = np.random.default_rng(8)
    results = rng.choice([1.0, 0.5, 0.0], size=400, p=[0.52, 0.1, 0.38])  # a small edge, few battles
    loose = _looks_until_separated(0.5, results)
    strict = _looks_until_separated(1e-4, results)
    assert loose is not None and strict is None, (loose, strict)
