"""Length-controlled (LC) win rates against a reference whose length varies per question.

The idea is AlpacaEval 2's (a per-system logistic fit whose length term is set to 0); what the data
can say is checked before a figure is given:

* ``f = (L_sys - L_ref) / (L_sys + L_ref)`` in whitespace words, between -1 and 1 (0: same length);
* two logistic fits of the system's outcomes, ``win`` vs not and ``win or tie`` vs ``loss``, each on
  ``[1, f, domain indicators, no-answer indicator]`` (refusals are short and lose: the indicator keeps
  them from reading as length bias);
* **priors** keep every coefficient finite: the length slope ``N(0, slope_prior_sd²)`` (log-odds per
  unit of ``f``), the intercept and the other effects ``N(0, effect_prior_sd²)``; the point estimate is
  the posterior mode. When a system is longer than the reference on every question, the data fix only
  ``intercept + slope · f̄``: the slope then stays at its prior and the interval says so;
* the LC rate is the mean predicted probability over the system's questions with ``f`` set to 0;
* the interval comes from a seeded bootstrap over questions (expanded percentile, Hesterberg 2015,
  for small samples) in which every round also draws the priors' centres from the priors (a
  perturbed-posterior bootstrap: each round's mode is then an approximate posterior draw). Where the
  data pin a coefficient down, the prior's pull is negligible and this is the plain bootstrap; where
  they do not (no question near equal length), the interval widens to what the prior allows instead
  of collapsing to zero width. It is never narrower than the Wilson score interval of a plain rate
  equal to the LC estimate on the same number of judged questions (equalising lengths never makes a
  rate more precise than counting; this floor matters where the bootstrap cannot vary, as when every
  outcome is a win);
* **support check**: the LC rate at equal length is only reported when at least ``min_near`` of the
  system's judged questions lie near equal length, ``|f| <= near`` (``near = 1/9``: the system's answer
  0.8 to 1.25 times the reference's words, the "similar" bin of the length views). Otherwise
  ``lc_win_rate`` and ``lc_win_tie_rate`` are None and ``lc_note`` says why.

Each system is fitted on its own pairs, so adding systems never moves another system's figure.

>>> rng = np.random.default_rng(1)
>>> f = rng.uniform(-0.5, 0.5, 200)
>>> won = rng.random(200) < 1 / (1 + np.exp(-3 * f))
>>> rates = length_controlled_rates(["win" if w else "loss" for w in won], f, n_boot=50)
>>> low, high = rates["lc_win_rate_ci"]
>>> bool(low < 0.5 < high), rates["lc_note"], rates["length_coef_win_ci"][0] > 0
(True, None, True)
>>> always_longer = length_controlled_rates(["win", "loss"] * 30, [0.2] * 60, n_boot=20)
>>> always_longer["lc_win_rate"], always_longer["lc_note"].split(":")[0]
(None, 'not identifiable')
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lfrqa.errors import RagQaArenaError
from metric_arena.stats._rates import expanded_level, percentile_interval
from metric_arena.stats._sampling import wilson_interval

__all__ = ["LengthControl", "length_controlled_rates"]

#: Bootstrap rounds fitted together (memory: rounds x questions floats per array).
_BLOCK = 64


@dataclass(frozen=True)
class LengthControl:
    """How LC rates are fitted and when they are reported.

    ``slope_prior_sd``: sd of the length slope's prior (log-odds per unit of ``f``; 3.0 chosen on
    ``benchmarks/length_control.py``: 1 and 2 under-cover where lengths barely overlap, 4 only
    widens); ``effect_prior_sd``: sd of the intercept's and the domain / no-answer effects' priors
    (weak); ``near``: ``|f|`` at most this counts as near equal length (1/9: 0.8-1.25x the
    reference's words); ``min_near``: judged questions near equal length needed to report an LC rate
    (fewer: None with ``lc_note``)."""

    slope_prior_sd: float = 3.0
    effect_prior_sd: float = 5.0
    near: float = 1 / 9
    min_near: int = 10

    def __post_init__(self) -> None:
        for name in ("slope_prior_sd", "effect_prior_sd"):
            if not getattr(self, name) > 0:
                raise RagQaArenaError(f"LengthControl({name}={getattr(self, name)!r}): give a positive number")
        if not 0 <= self.near < 1 or self.min_near < 0:
            raise RagQaArenaError(f"LengthControl(near={self.near!r}, min_near={self.min_near!r}): near must lie in "
                                  "[0, 1) and min_near be >= 0")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def _design(f: np.ndarray, domains: Sequence[str] | None, no_answer: np.ndarray) -> np.ndarray:
    columns = [np.ones_like(f), f]
    if domains is not None:
        names = sorted(set(domains))
        columns += [np.array([d == name for d in domains], dtype=float) for name in names[1:]]
    if no_answer.any():
        columns.append(no_answer.astype(float))
    return np.column_stack(columns)


def _map_fits(x: np.ndarray, y: np.ndarray, weights: np.ndarray, centres: np.ndarray, precision: np.ndarray,
              start: np.ndarray) -> np.ndarray:
    """Posterior modes of logistic regressions of ``y`` on ``x``, one per row of ``weights`` (rounds x
    questions) and ``centres`` (the priors' means, rounds x columns), by damped Newton steps."""
    beta = np.array(np.broadcast_to(start, centres.shape), dtype=float)
    k = x.shape[1]
    outer = (x[:, :, None] * x[:, None, :]).reshape(len(x), k * k)  # each question's x x^T, flat
    for _ in range(100):
        p = _sigmoid(beta @ x.T)
        gradient = (weights * (y - p)) @ x - precision * (beta - centres)
        hessian = ((weights * p * (1 - p)) @ outer).reshape(-1, k, k) + np.diag(precision)
        step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        size = np.max(np.abs(step), axis=1, keepdims=True)
        beta += step * np.minimum(1.0, 5.0 / np.maximum(size, 1e-300))
        if size.max() < 1e-8:
            break
    return beta


def _lc(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    at_zero = x.copy()
    at_zero[:, 1] = 0.0
    return _sigmoid(beta @ at_zero.T).mean(axis=1)


def length_controlled_rates(outcomes: Sequence[str | None], f: Sequence[float], *,
                            domains: Sequence[str] | None = None, no_answer: Sequence[bool] | None = None,
                            n_boot: int = 1000, seed: int = 0, confidence: float = 0.95,
                            control: LengthControl = LengthControl()) -> dict:
    """Raw and length-controlled win and win+tie rates of one system against the reference.

    ``outcomes``: the system's outcomes (``None`` for failed pairs, left out); ``f``: the normalised
    length difference of each pair; ``domains``/``no_answer``: per pair. Returns ``n``, ``win_rate``,
    ``win_tie_rate``, ``n_near_equal_length`` (judged questions with ``|f| <= control.near``),
    ``lc_win_rate``, ``lc_win_tie_rate`` with ``_ci`` (None, with ``lc_note`` saying why, when fewer
    than ``control.min_near`` questions lie near equal length), ``length_coef_win`` and
    ``length_coef_win_tie`` (posterior modes, log-odds per unit of ``f``) with ``_ci`` (reported even
    when the LC rate is not: near the prior's when the data cannot tell), ``length_coef_significant``
    (whether either slope's interval excludes 0) and ``warning`` (when an LC rate differs from the raw
    one by more than 10 points; else None).
    """
    if len(f) != len(outcomes):
        raise RagQaArenaError(f"length_controlled_rates: {len(outcomes)} outcomes but {len(f)} length differences; "
                              "give one per pair")
    keep = [k for k, o in enumerate(outcomes) if o is not None]
    out = np.array([outcomes[k] for k in keep], dtype=object)
    result = {"n": len(keep), "win_rate": None, "win_tie_rate": None, "n_near_equal_length": None,
              "lc_win_rate": None, "lc_win_rate_ci": None, "lc_win_tie_rate": None, "lc_win_tie_rate_ci": None,
              "lc_note": None, "length_coef_win": None, "length_coef_win_ci": None, "length_coef_win_tie": None,
              "length_coef_win_tie_ci": None, "length_coef_significant": None, "warning": None}
    if len(keep) < 2:
        result["lc_note"] = f"not identifiable: {len(keep)} judged question(s)"
        return result
    f_arr = np.array([float(f[k]) for k in keep])
    doms = None if domains is None else [str(domains[k]) for k in keep]
    flags = np.zeros(len(keep), bool) if no_answer is None else np.array([bool(no_answer[k]) for k in keep])
    x = _design(f_arr, doms, flags)
    sd = np.full(x.shape[1], control.effect_prior_sd)
    sd[1] = control.slope_prior_sd
    precision = 1.0 / sd ** 2
    n, p = x.shape
    near = int((np.abs(f_arr) <= control.near + 1e-12).sum())
    result.update(win_rate=float((out == "win").mean()), win_tie_rate=float((out != "loss").mean()),
                  n_near_equal_length=near)
    level = expanded_level(confidence, n)
    rng = np.random.default_rng(seed)
    rounds = [(rng.multinomial(n, np.full(n, 1.0 / n), size=min(_BLOCK, n_boot - k)).astype(float),
               rng.normal(0.0, sd, size=(min(_BLOCK, n_boot - k), p))) for k in range(0, n_boot, _BLOCK)]
    fits = {}
    for name, y in (("win", (out == "win").astype(float)), ("win_tie", (out != "loss").astype(float))):
        point = _map_fits(x, y, np.ones((1, n)), np.zeros((1, p)), precision, np.zeros(p))[0]
        boots = np.concatenate([_map_fits(x, y, counts, centres, precision, point) for counts, centres in rounds]
                               or [np.zeros((0, p))])
        lc = float(_lc(x, point[None])[0])
        fits[name] = point
        result[f"length_coef_{name}"] = float(point[1])
        if n_boot:
            result[f"length_coef_{name}_ci"] = _holding(percentile_interval(boots[:, 1], level), float(point[1]))
        if near >= control.min_near:
            result[f"lc_{name}_rate"] = lc
            if n_boot:
                floor = wilson_interval(lc * n, n, confidence)
                low, high = _holding(percentile_interval(_lc(x, boots), level), lc)
                result[f"lc_{name}_rate_ci"] = [min(low, floor[0]), max(high, floor[1])]
    if n_boot:
        result["length_coef_significant"] = any(not (result[f"length_coef_{k}_ci"][0] <= 0
                                                     <= result[f"length_coef_{k}_ci"][1]) for k in fits)
    if near < control.min_near:
        low, high = (1 - control.near) / (1 + control.near), (1 + control.near) / (1 - control.near)
        result["lc_note"] = (f"not identifiable: only {near} of {n} judged questions lie near equal length "
                             f"({low:.2f}-{high:.2f}x the reference's words; {control.min_near} needed), so the "
                             "rate at equal length would be an extrapolation")
        return result
    result["warning"] = _gap_warning(result)
    return result


def _gap_warning(result: dict) -> str | None:
    """What the data shows when an LC rate moves more than 10 points from the raw one; the judge is
    said to favour a length only when a fitted slope's interval excludes 0."""
    gaps = [(name, result[f"lc_{key}"] - result[key]) for name, key in (("win", "win_rate"),
                                                                       ("win+tie", "win_tie_rate"))
            if abs(result[f"lc_{key}"] - result[key]) > 0.10]
    if not gaps:
        return None
    moves = " and ".join(f"{'its ' if k == 0 else ''}{name} rate by {gap * 100:+.1f} points"
                         for k, (name, gap) in enumerate(gaps))
    text = f"{moves.replace(' rate by', ' rate moves by', 1)} when lengths are equalised"
    if result["length_coef_significant"]:
        key = next(k for k in ("win", "win_tie") if not (result[f"length_coef_{k}_ci"][0] <= 0
                                                         <= result[f"length_coef_{k}_ci"][1]))
        coef, ci = result[f"length_coef_{key}"], result[f"length_coef_{key}_ci"]
        side = "longer" if coef > 0 else "shorter"
        fit = "" if key == "win" else " of win+tie"
        text += (f"; the judge's verdicts favour the {side} answer (length coefficient{fit} {coef:.2f} "
                 f"[{ci[0]:.2f}, {ci[1]:.2f}] log-odds per unit of f)")
    else:
        text += "; the length coefficient's interval holds 0, so this is no evidence that the judge rewards length"
    return text


def _holding(interval: list[float], estimate: float) -> list[float]:
    """A percentile interval widened, if need be, to hold its own estimate (rare with skewed bootstraps)."""
    return [min(interval[0], estimate), max(interval[1], estimate)]
