"""Paired comparison of two systems judged against the same reference on the same queries.

Both systems were judged against LFRQA; on each shared query each system scores 1 if it won
(or, for ``metric="win_tie_rate"``, won or tied) and 0 otherwise. The per-query difference is
then -1, 0 or +1, and:

* ``difference`` is the difference of the two rates on the shared queries (A minus B);
* ``difference_ci`` is a seeded paired bootstrap interval: queries are resampled with
  replacement, each keeping both systems' results (a multinomial draw of the counts of -1/0/+1);
* ``p_value`` is the two-sided exact sign test on the queries where the systems differ
  (equivalently, the exact McNemar test): under "no difference" each such query is equally
  likely to favour A or B.

Queries the judge failed on for either system are left out (they count in ``n_failed``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from lfrqa.errors import RagQaArenaError
from metric_arena.stats._rates import percentile_interval
from metric_arena.stats._settings import OUTCOMES, Intervals

METRICS = ("win_rate", "win_tie_rate")


def paired_comparison(
    outcomes_a: Mapping[str, str | None],
    outcomes_b: Mapping[str, str | None],
    *,
    metric: str = "win_rate",
    names: tuple[str, str] = ("A", "B"),
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Compare two systems' outcomes against the reference, keyed by ``qid``.

    >>> a = {"q1": "win", "q2": "win", "q3": "tie", "q4": "loss"}
    >>> b = {"q1": "loss", "q2": "win", "q3": "loss", "q4": "loss", "q5": "win"}
    >>> r = paired_comparison(a, b)
    >>> (r["n"], r["rate_a"], r["rate_b"], r["difference"], r["n_a_better"], r["n_b_better"], r["p_value"])
    (4, 0.5, 0.25, 0.25, 1, 0, 1.0)
    """
    if metric not in METRICS:
        raise RagQaArenaError(f"Unknown metric {metric!r}. Available: {', '.join(METRICS)}")
    if not 0.0 < confidence < 1.0:
        raise RagQaArenaError(f"confidence={confidence} must be between 0 and 1, e.g. 0.95")
    good = {"win"} if metric == "win_rate" else {"win", "tie"}
    shared = sorted(set(outcomes_a) & set(outcomes_b))
    judged = [q for q in shared if outcomes_a[q] is not None and outcomes_b[q] is not None]
    for q in judged:
        for name, outcomes in zip(names, (outcomes_a, outcomes_b)):
            if outcomes[q] not in OUTCOMES:
                raise RagQaArenaError(f"Unknown outcome {outcomes[q]!r} for {name} on qid {q!r}. Allowed: win, tie, loss, None")
    score_a = np.array([outcomes_a[q] in good for q in judged], dtype=float)
    score_b = np.array([outcomes_b[q] in good for q in judged], dtype=float)
    diff = score_a - score_b
    n = len(judged)
    a_better = int((diff > 0).sum())
    b_better = int((diff < 0).sum())
    result = {
        "system_a": names[0],
        "system_b": names[1],
        "metric": metric,
        "n": n,
        "n_shared": len(shared),
        "n_failed": len(shared) - n,
        "rate_a": float(score_a.mean()) if n else float("nan"),
        "rate_b": float(score_b.mean()) if n else float("nan"),
        "difference": float(diff.mean()) if n else float("nan"),
        "difference_ci": [float("nan"), float("nan")],
        "n_a_better": a_better,
        "n_b_better": b_better,
        "p_value": sign_test(a_better, b_better),
        "test": "two-sided exact sign test (McNemar) on queries where the systems differ",
        "confidence": confidence,
    }
    if n:
        rng = np.random.default_rng(seed)
        probs = np.array([b_better, n - a_better - b_better, a_better], dtype=float) / n
        draws = rng.multinomial(n, probs, size=n_boot)
        boot = (draws[:, 2] - draws[:, 0]) / n
        alpha = (1.0 - confidence) / 2.0
        low, high = np.quantile(boot, [alpha, 1.0 - alpha])
        result["difference_ci"] = [float(low), float(high)]
    return result


def sign_test(k_plus: int, k_minus: int) -> float:
    """Two-sided exact sign-test p-value for ``k_plus`` successes against ``k_minus``.

    >>> round(sign_test(9, 1), 4)
    0.0215
    """
    n = k_plus + k_minus
    if n == 0:
        return 1.0
    k = min(k_plus, k_minus)
    # log P(X = i) for X ~ Binomial(n, 1/2), summed for i <= k in log space (exact, no overflow).
    i = np.arange(k + 1)
    log_terms = (
        np.array([math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in i]) - n * math.log(2.0)
    )
    tail = float(np.exp(np.logaddexp.reduce(log_terms)))
    return min(1.0, 2.0 * tail)


def paired_bootstrap(values_a: Mapping[str, float], values_b: Mapping[str, float], *,
                     intervals: Intervals = Intervals()) -> dict:
    """The mean difference A − B of any per-item values on the items both hold (keyed by ``qid``), its
    seeded paired bootstrap interval (items resampled with replacement, each keeping both values) and a
    two-sided bootstrap p-value (twice the share of resampled differences on the far side of zero).

    >>> r = paired_bootstrap({"q1": 1.0, "q2": 0.5, "q3": 0.0}, {"q1": 0.0, "q2": 0.5, "q3": 0.0, "q9": 1.0})
    >>> (r["n"], r["mean_a"], round(r["mean_b"], 3), round(r["difference"], 3))
    (3, 0.5, 0.167, 0.333)
    """
    shared = sorted(set(values_a) & set(values_b))
    a = np.array([values_a[q] for q in shared], dtype=float)
    b = np.array([values_b[q] for q in shared], dtype=float)
    n = len(shared)
    result = {"n": n, "mean_a": float(a.mean()) if n else float("nan"), "mean_b": float(b.mean()) if n else float("nan"),
              "difference": float((a - b).mean()) if n else float("nan"), "difference_ci": [float("nan")] * 2,
              "p_value": float("nan"), "confidence": intervals.confidence,
              "test": "paired percentile bootstrap of the mean difference"}
    if n and intervals.n_boot:
        diff, rng, means = a - b, np.random.default_rng(intervals.seed), []
        for start in range(0, intervals.n_boot, 256):  # resampled in blocks: n_boot x n indices at most 256 rows
            rows = min(256, intervals.n_boot - start)
            means.append(diff[rng.integers(0, n, size=(rows, n))].mean(axis=1))
        boot = np.concatenate(means)
        result["difference_ci"] = percentile_interval(boot, intervals.confidence)
        result["p_value"] = float(min(1.0, 2 * min((boot <= 0).mean(), (boot >= 0).mean())))
    return result
