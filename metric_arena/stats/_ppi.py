"""Anchored rates: a cheap judge's verdicts on all N pairs corrected by a reference (a better judge, or people)
on a random subset of n of them, with prediction-powered inference (PPI++, Angelopoulos, Duchi & Zrnic 2023).

The estimate of a rate (the mean of a 0/1 outcome: a win, or a win or tie) is

    theta = lam * mean_N(cheap) + mean_n(reference - lam * cheap)

where ``mean_N`` runs over all N pairs the cheap judge judged and ``mean_n`` over the n anchored pairs (a
simple random subset of the N, drawn before anything was judged). For any fixed ``lam`` it is unbiased: the
second term removes, on average, exactly the cheap judge's error. ``lam = 0`` is the reference-only rate,
``lam = 1`` classic PPI; PPI++'s power tuning picks the ``lam`` of least variance.

Here the anchors are a subset of the N (not a second, disjoint sample as in the paper's set-up), which is the
two-phase "regression estimator" of survey sampling: with ``r = reference - lam * cheap``,

    Var(theta) = Var(reference) / N + (1/n - 1/N) * Var(r),

so the power-tuned ``lam`` is ``Cov(reference, cheap) / Var(cheap)`` (the residual's variance is least there),
clipped to [0, 1]: between the reference-only and the classic PPI estimate. The effective sample size
``n_eff = Var(reference) / Var(theta)`` is the reference-only n of the same variance, and the interval is the
Wilson score interval of ``theta`` at ``n_eff`` (the normal interval ``theta +- z * se``, bent towards 0.5
as Wilson's is near 0 and 1: with ``lam = 0`` it is about the reference-only Wilson interval). Simulated, it
covers a little better than the plain normal interval near rates of 0.2 and 0.8 (0.941 against 0.938 at
p = 0.8, n = 300, 3,000 runs). :func:`anchored_rate` also gives the reference-only (Wilson over the n) and raw
cheap (Wilson over the N) estimates.
Coverage and widths on simulated judges of known behaviour: ``benchmarks/anchored_rates.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from lfrqa.errors import RagQaArenaError
from metric_arena.stats._sampling import wilson_interval
from metric_arena.stats._settings import Intervals

__all__ = ["MIN_ANCHORS", "anchor_size", "anchored_difference", "anchored_rate"]

#: Fewer anchored pairs than this: no anchored interval (the variances cannot be estimated).
MIN_ANCHORS = 10
LAMBDA_MAX = 1.0


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _binary(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if array.size and not np.isin(array, (0.0, 1.0)).all():
        raise RagQaArenaError(f"{name} must hold 0/1 outcomes (1: a win, or a win or tie), got {sorted(set(array.tolist()))[:5]}")
    return array


def _tuned(reference: np.ndarray, cheap_anchor: np.ndarray, var_cheap: float, power_tuning: bool) -> float:
    if not power_tuning:
        return 1.0
    if var_cheap <= 0 or reference.size < 2:
        return 0.0
    cov = float(np.cov(reference, cheap_anchor, ddof=1)[0, 1])
    return float(min(LAMBDA_MAX, max(0.0, cov / var_cheap)))


def anchored_rate(
    reference: Sequence[float],
    cheap_anchor: Sequence[float],
    cheap_all: Sequence[float],
    *,
    intervals: Intervals = Intervals(),
    power_tuning: bool = True,
) -> dict:
    """The anchored rate of a 0/1 outcome and its interval (``intervals.confidence``; its ``n_boot`` and
    ``seed`` are not used: the interval is Wilson's at the effective sample size, no resampling).

    ``reference``: the reference's outcomes on the n anchored pairs; ``cheap_anchor``: the cheap judge's on
    the same pairs, in the same order; ``cheap_all``: the cheap judge's on all N pairs (the anchored ones
    among them). ``power_tuning=False`` gives classic PPI (``lam = 1``).

    Returns ``estimate``, ``ci``, ``lambda``, ``se``, ``n``, ``N``, ``n_effective`` (the reference-only n of the
    same variance), ``reference_only`` and ``cheap`` (each ``{"estimate", "ci"}``: Wilson intervals over n and
    over N) and ``cheap_on_anchors`` (the cheap judge's rate on the anchored pairs). With fewer than
    :data:`MIN_ANCHORS` anchors the anchored estimate and interval are None.

    >>> truth = [1, 0, 1, 1, 0, 1, 0, 1, 1, 0] * 3
    >>> cheap = [1, 1, 1, 1, 0, 1, 0, 1, 1, 1] * 3       # the cheap judge calls some losses wins
    >>> r = anchored_rate(truth, cheap, cheap * 10)
    >>> round(r["cheap"]["estimate"], 2), round(r["estimate"], 2), r["n"], r["N"]
    (0.8, 0.6, 30, 300)
    """
    y, f_n, f_all = (_binary(v, name) for v, name in ((reference, "reference"), (cheap_anchor, "cheap_anchor"),
                                                      (cheap_all, "cheap_all")))
    if y.size != f_n.size:
        raise RagQaArenaError(f"reference has {y.size} outcomes but cheap_anchor {f_n.size}: give both judges' "
                              "outcomes on the same anchored pairs, in the same order")
    if f_all.size < y.size:
        raise RagQaArenaError(f"cheap_all has {f_all.size} outcomes, fewer than the {y.size} anchored pairs: the "
                              "anchors must be a subset of the cheap judge's pairs")
    n, big_n, conf = int(y.size), int(f_all.size), intervals.confidence
    result: dict = {
        "n": n, "N": big_n, "confidence": conf, "estimate": None, "ci": [None, None], "se": None, "lambda": None,
        "n_effective": None,
        "reference_only": _wilson(y, conf),
        "cheap": _wilson(f_all, conf),
        "cheap_on_anchors": float(f_n.mean()) if n else None,
    }
    if n < MIN_ANCHORS:
        return result
    var_cheap = float(f_all.var(ddof=1)) if big_n > 1 else 0.0
    lam = _tuned(y, f_n, var_cheap, power_tuning)
    residual = y - lam * f_n
    estimate = lam * float(f_all.mean()) + float(residual.mean())
    var_y = _smoothed_variance(y)
    var_r = _residual_variance(residual)
    variance = var_y / big_n + max(1.0 / n - 1.0 / big_n, 0.0) * var_r
    estimate = min(1.0, max(0.0, estimate))
    n_effective = var_y / variance
    result.update(estimate=float(estimate), ci=_wilson_at(estimate, n_effective, _z(conf)), se=math.sqrt(variance),
                  **{"lambda": lam}, n_effective=float(n_effective))
    return result


def _wilson_at(p: float, n: float, z: float) -> list[float]:
    """The Wilson score interval of a rate ``p`` seen on ``n`` (possibly fractional, effective) pairs."""
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [float(max(0.0, center - half)), float(min(1.0, center + half))]


def _smoothed_variance(y: np.ndarray) -> float:
    """The variance of a 0/1 outcome from its n values, with one success and one failure added (Agresti-Coull
    style): never 0 when every anchor has the same outcome."""
    p = (float(y.sum()) + 1.0) / (y.size + 2.0)
    return p * (1.0 - p)


def _residual_variance(residual: np.ndarray) -> float:
    """The residuals' variance, at least that of one disagreement more among the n (never 0: anchors that all
    agree with the cheap judge do not prove that it never errs)."""
    return max(float(residual.var(ddof=1)), 1.0 / (residual.size + 2.0))


def _wilson(values: np.ndarray, confidence: float) -> dict:
    if values.size == 0:
        return {"estimate": None, "ci": [None, None]}
    low, high = wilson_interval(int(values.sum()), int(values.size), confidence)
    return {"estimate": float(values.mean()), "ci": [float(low), float(high)]}


def anchor_size(
    reference: Sequence[float],
    cheap_anchor: Sequence[float],
    *,
    n_total: int,
    half_width: float,
    intervals: Intervals = Intervals(),
) -> dict:
    """How many anchored pairs (of ``n_total``) give an anchored interval of ``half_width`` (a rate, e.g. 0.03),
    from a pilot: both judges' 0/1 outcomes on the same pairs (``reference``, ``cheap_anchor``).

    Returns ``n_anchored`` (None when no n up to ``n_total`` reaches the width: even judging every pair with
    the reference would not), ``n_reference_only`` (the pairs a reference-only estimate needs for that width),
    the pilot's ``lambda``, ``n_pilot`` and ``correlation``.

    >>> truth = [1, 0, 1, 1, 0, 1, 0, 1, 1, 0] * 5
    >>> s = anchor_size(truth, truth, n_total=3000, half_width=0.05)   # a cheap judge that always agrees
    >>> s["n_anchored"] < s["n_reference_only"]
    True
    """
    y, f = _binary(reference, "reference"), _binary(cheap_anchor, "cheap_anchor")
    if y.size != f.size or y.size < MIN_ANCHORS:
        raise RagQaArenaError(f"a pilot needs both judges' outcomes on the same pairs, at least {MIN_ANCHORS} of them "
                              f"(got {y.size} reference and {f.size} cheap outcomes): anchor a first subset, then ask again")
    if not (0 < half_width < 1 and n_total >= 1):
        raise RagQaArenaError(f"half_width={half_width!r} must lie in (0, 1) (e.g. 0.03) and n_total={n_total!r} >= 1")
    var_f = float(f.var(ddof=1))
    lam = _tuned(y, f, var_f, True)
    var_y = _smoothed_variance(y)
    var_r = _residual_variance(y - lam * f)
    target = (half_width / _z(intervals.confidence)) ** 2
    n_ref = math.ceil(var_y / target)
    spare = target - var_y / n_total
    n_needed = None
    if spare > 0:
        n_needed = max(MIN_ANCHORS, math.ceil(1.0 / (spare / var_r + 1.0 / n_total)))
        n_needed = n_needed if n_needed <= n_total else None
    corr = float(np.corrcoef(y, f)[0, 1]) if y.std() > 0 and f.std() > 0 else None
    return {"n_anchored": n_needed, "n_reference_only": n_ref, "n_total": n_total, "half_width": half_width,
            "confidence": intervals.confidence, "lambda": lam, "n_pilot": int(y.size), "correlation": corr}


def anchored_difference(base: dict, new: dict, *, confidence: float = 0.95) -> dict:
    """``new - base`` of two anchored rates (:func:`anchored_rate` results, or dicts with ``estimate`` and
    ``se``) with a normal interval whose variance is the sum of the two: their anchors are drawn apart, and
    the positive correlation of two runs on the same questions only narrows the truth's spread, so the
    interval errs wide. Its error rates as a gate are measured in ``benchmarks/anchored_rates.py``.

    >>> anchored_difference({"estimate": 0.5, "se": 0.02}, {"estimate": 0.4, "se": 0.02})["difference"]
    -0.09999999999999998
    """
    diff = new["estimate"] - base["estimate"]
    half = _z(confidence) * math.sqrt(base["se"] ** 2 + new["se"] ** 2)
    return {"difference": diff, "difference_ci": [diff - half, diff + half]}
