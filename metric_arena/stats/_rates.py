"""Win rates against a reference system, with seeded bootstrap intervals.

Outcomes are seen from the evaluated system's side: ``"win"``, ``"tie"``, ``"loss"``, or
``None`` for a pair the judge failed on. Failed pairs count in ``n`` and ``n_failed`` but not
in any rate.
"""

from __future__ import annotations

from collections.abc import Sequence

import math
import statistics

import numpy as np
import numpy.ma  # noqa: F401 - np.quantile imports it at its first call (25-60 ms of CPU): here, not in a run
import numpy.random  # noqa: F401 - as np.random's first use does (~20 ms)

from lfrqa.errors import RagQaArenaError
from metric_arena.stats._sampling import wilson_interval
from metric_arena.stats._settings import OUTCOMES



def summarize(
    outcomes: Sequence[str | None],
    domains: Sequence[str] | None = None,
    no_answer: Sequence[bool] | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    failed_as_tie: Sequence[bool] | None = None,
) -> dict:
    """Rates and 95% bootstrap intervals overall and, when ``domains`` is given, per domain.

    ``failed_as_tie``: one flag per pair whose judgment failed but which counts as a tie (the
    reference implementation's counting: its outcome is ``"tie"`` and it stays in every rate);
    such pairs are counted in ``n_failed`` and ``n_failed_as_tie`` too.

    >>> s = summarize(["win", "tie", "loss", None])
    >>> (s["n"], s["n_failed"], round(s["win_rate"], 3), round(s["win_tie_rate"], 3))
    (4, 1, 0.333, 0.667)
    >>> s = summarize(["win", "tie", "loss", "tie"], failed_as_tie=[False, False, False, True])
    >>> (s["n"], s["n_failed"], s["n_failed_as_tie"], s["win_rate"], s["win_tie_rate"])
    (4, 1, 1, 0.25, 0.75)
    """
    outcomes = list(outcomes)
    for i, outcome in enumerate(outcomes):
        if outcome is not None and outcome not in OUTCOMES:
            raise RagQaArenaError(f"Unknown outcome {outcome!r} at position {i}. Allowed: win, tie, loss, or None for a failed pair")
    if domains is not None and len(domains) != len(outcomes):
        raise RagQaArenaError(f"domains has {len(domains)} entries but outcomes has {len(outcomes)}: give one domain per pair")
    if no_answer is not None and len(no_answer) != len(outcomes):
        raise RagQaArenaError(f"no_answer has {len(no_answer)} entries but outcomes has {len(outcomes)}: give one flag per pair")
    if failed_as_tie is not None and len(failed_as_tie) != len(outcomes):
        raise RagQaArenaError(f"failed_as_tie has {len(failed_as_tie)} entries but outcomes has {len(outcomes)}: give "
                              "one flag per pair")
    summary = _summarize_one(outcomes, no_answer, failed_as_tie, n_boot=n_boot, seed=seed, confidence=confidence)
    if domains is not None:
        summary["per_domain"] = {}
        for domain in sorted(set(domains)):
            idx = [i for i, d in enumerate(domains) if d == domain]
            summary["per_domain"][domain] = _summarize_one(
                [outcomes[i] for i in idx],
                None if no_answer is None else [no_answer[i] for i in idx],
                None if failed_as_tie is None else [failed_as_tie[i] for i in idx],
                n_boot=n_boot,
                seed=seed,
                confidence=confidence,
            )
    return summary


def bootstrap_interval(
    values: np.ndarray, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> list[float]:
    """Percentile bootstrap interval ``[low, high]`` of the mean of 0/1 ``values`` (seeded); NaNs for
    no values or ``n_boot=0`` (no interval wanted).

    Where resampling cannot show the uncertainty (fewer than :data:`MIN_PAIRS_FOR_BOOTSTRAP` values,
    or all of them equal: the bootstrap interval would have zero width) the Wilson score interval
    is returned instead: one pair won gives ``[0.21, 1.0]``, never ``[1.0, 1.0]``.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0 or n_boot < 1:
        return [float("nan"), float("nan")]
    mean = float(values.mean())
    if values.size < MIN_PAIRS_FOR_BOOTSTRAP or mean in (0.0, 1.0):
        low, high = wilson_interval(int(round(values.sum())), int(values.size), confidence)
        return [float(low), float(high)]
    rng = np.random.default_rng(seed)
    # Resampling n Bernoulli values with replacement = one binomial draw of their mean.
    means = rng.binomial(values.size, mean, size=n_boot) / values.size
    return percentile_interval(means, confidence)


def mean_interval(values, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95) -> list[float]:
    """Interval ``[low, high]`` of the mean of per-item shares ``values`` in [0, 1] (seeded); NaNs for no values
    or ``n_boot=0``. All 0s and 1s: :func:`bootstrap_interval`. Fewer than :data:`MIN_SHARES_FOR_BOOTSTRAP` values:
    the Wilson interval of their sum over n (conservative, since a share's variance is at most
    mean x (1 - mean)); else the expanded percentile bootstrap of the mean (:func:`expanded_level`).
    Coverage on simulated shares: ``benchmarks/mean_interval_coverage.py``.

    >>> [round(x, 2) for x in mean_interval([1.0] * 20)]
    [0.84, 1.0]
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0 or n_boot < 1:
        return [float("nan"), float("nan")]
    if np.all((values == 0.0) | (values == 1.0)):
        return bootstrap_interval(values, n_boot=n_boot, seed=seed, confidence=confidence)
    if values.size < MIN_SHARES_FOR_BOOTSTRAP:
        low, high = wilson_interval(min(float(values.sum()), values.size), int(values.size), confidence)
        return [float(low), float(high)]
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // values.size)  # resamples drawn together: memory bounded for any n
    means = np.concatenate([values[rng.integers(0, values.size, size=(min(chunk, n_boot - start), values.size))]
                            .mean(axis=1) for start in range(0, n_boot, chunk)])
    return percentile_interval(means, expanded_level(confidence, int(values.size)))


def expanded_level(confidence: float, n: int) -> float:
    """The percentile level of Hesterberg's expanded percentile interval: the bootstrap's central
    ``1 - 2 Φ(-sqrt(n / (n - 1)) t_{n-1})`` share instead of ``confidence``, so that intervals from a
    few dozen outcomes do not come out too narrow (0.968 for n = 20 at 95%; 0.951 for n = 600).
    Standard library only (no scipy in the core install): t's quantile from the normal one by the
    Cornish-Fisher expansion (error under 1e-4 from 9 degrees of freedom, 0.03 at 2).

    >>> round(expanded_level(0.95, 20), 3), round(expanded_level(0.95, 600), 3)
    (0.968, 0.951)
    """
    if n < 3:
        return confidence
    normal = statistics.NormalDist()
    z, v = normal.inv_cdf(1 - (1 - confidence) / 2), n - 1
    t = (z + (z ** 3 + z) / (4 * v) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * v ** 2)
         + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * v ** 3)
         + (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / (92160 * v ** 4))
    return float(1 - 2 * normal.cdf(-math.sqrt(n / (n - 1)) * t))


#: Fewer per-item shares than this get the Wilson interval of their sum in :func:`mean_interval`.
MIN_SHARES_FOR_BOOTSTRAP = 50


#: Fewer 0/1 values than this get the Wilson interval instead of a percentile bootstrap.
MIN_PAIRS_FOR_BOOTSTRAP = 10


def percentile_interval(estimates: np.ndarray, confidence: float = 0.95) -> list[float]:
    """``[low, high]``: the central ``confidence`` share of bootstrap ``estimates`` (NaN rounds left out;
    NaNs when none is left)."""
    estimates = np.asarray(estimates, dtype=float)
    estimates = estimates[~np.isnan(estimates)]
    if estimates.size == 0:
        return [float("nan"), float("nan")]
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [alpha, 1.0 - alpha])
    return [float(low), float(high)]


def _summarize_one(outcomes, no_answer, failed_as_tie, *, n_boot, seed, confidence) -> dict:
    judged = np.array([o for o in outcomes if o is not None], dtype=object)
    n_judged = int(judged.size)
    wins = (judged == "win").astype(float)
    ties = (judged == "tie").astype(float)
    losses = (judged == "loss").astype(float)

    def rate(values: np.ndarray) -> float:
        return float(values.mean()) if n_judged else float("nan")

    as_tie = sum(bool(flag) and o is not None for flag, o in zip(failed_as_tie or (), outcomes))
    return {
        "n": len(outcomes),
        "n_failed": len(outcomes) - n_judged + as_tie,
        **({"n_failed_as_tie": as_tie} if failed_as_tie is not None else {}),
        "n_judged": n_judged,
        "win_rate": rate(wins),
        "tie_rate": rate(ties),
        "loss_rate": rate(losses),
        "win_tie_rate": rate(wins + ties),
        "win_rate_ci": bootstrap_interval(wins, n_boot=n_boot, seed=seed, confidence=confidence),
        "win_tie_rate_ci": bootstrap_interval(wins + ties, n_boot=n_boot, seed=seed, confidence=confidence),
        "no_answer_rate": (float(np.mean(no_answer)) if no_answer is not None and len(no_answer) else None),
    }
