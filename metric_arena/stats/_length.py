"""Length and style: descriptive views and style-controlled Bradley–Terry (length-controlled win rates
live in :mod:`metric_arena.stats._length_control`).

Style-controlled ratings follow Arena-Hard's ``--control-features``: the Bradley–Terry design matrix
(``+1`` for the first player, ``-1`` for the second) gains the normalised differences of length and
markdown between the two answers (standardised), and the players' coefficients are the ratings with
style held equal. Pure numpy.

>>> normalized_difference([30, 0], [10, 0]).tolist()
[0.5, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from metric_arena.stats._rates import percentile_interval
from metric_arena.stats._settings import INTERVAL_KEYWORDS, Intervals

__all__ = ["LENGTH_BINS", "length_views", "logistic_fit", "normalized_difference", "style_controlled_bradley_terry"]

#: Length ratio bins (system words / reference words): shorter than 0.8x, 0.8-1.25x, longer than 1.25x.
LENGTH_BINS = (("shorter", 0.0, 0.8), ("similar", 0.8, 1.25), ("longer", 1.25, math.inf))
_RIDGE = 1e-3


def normalized_difference(a, b, *, smooth: float = 0.0) -> np.ndarray:
    """``(a - b) / (a + b + smooth)`` elementwise; 0 where both are 0."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    total = a + b + smooth
    return np.divide(a - b, total, out=np.zeros_like(total), where=total > 0)


def logistic_fit(x: np.ndarray, y: np.ndarray, *, weights: np.ndarray | None = None, ridge: float = _RIDGE,
                 max_iter: int = 50, start: np.ndarray | None = None) -> np.ndarray:
    """Coefficients of a logistic regression of ``y`` (0..1, soft labels allowed) on the columns of ``x``,
    by Newton's method with a small ridge penalty (finite coefficients under separation); ``start``:
    initial coefficients (a bootstrap round starts from the point estimate)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    beta = np.zeros(x.shape[1]) if start is None else np.array(start, dtype=float)
    penalty = ridge * np.eye(x.shape[1])
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -30, 30)))
        gradient = x.T @ (w * (y - p)) - ridge * beta
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def _holding(interval: list[float], estimate: float) -> list[float]:
    """A percentile interval widened, if need be, to hold its own estimate (rare with skewed bootstraps)."""
    return [min(interval[0], estimate), max(interval[1], estimate)]


def length_views(outcomes: Sequence[str | None], words: Sequence[int], reference_words: Sequence[int]) -> dict:
    """Descriptive length figures of one system against the reference.

    ``avg_words`` / ``reference_avg_words`` (over judged pairs), ``p_longer_wins`` (among decisive
    verdicts where the lengths differ, the share won by the longer answer; None without such
    verdicts) and ``by_length_ratio``: per bin of words / reference words (:data:`LENGTH_BINS`),
    ``n``, ``win_rate`` and ``win_tie_rate``.
    """
    keep = [k for k, o in enumerate(outcomes) if o is not None]
    out = np.array([outcomes[k] for k in keep], dtype=object)
    ws = np.array([words[k] for k in keep], dtype=float)
    rs = np.array([reference_words[k] for k in keep], dtype=float)
    decisive = (out != "tie") & (ws != rs)
    longer_won = ((out == "win") & (ws > rs)) | ((out == "loss") & (ws < rs))
    ratio = np.divide(ws, rs, out=np.full_like(ws, np.inf), where=rs > 0)
    bins = {}
    for name, low, high in LENGTH_BINS:
        inside = (ratio >= low) & (ratio < high) if high != math.inf else ratio >= low
        n = int(inside.sum())
        bins[name] = {"range": [low, None if high == math.inf else high], "n": n,
                      "win_rate": float((out[inside] == "win").mean()) if n else None,
                      "win_tie_rate": float((out[inside] != "loss").mean()) if n else None}
    return {"avg_words": float(ws.mean()) if keep else None,
            "reference_avg_words": float(rs.mean()) if keep else None,
            "p_longer_wins": float(longer_won[decisive].mean()) if decisive.any() else None,
            "n_decisive_length_differs": int(decisive.sum()), "by_length_ratio": bins}


@grouped_keywords("intervals", Intervals, INTERVAL_KEYWORDS, defaults={"n_boot": 200})
def style_controlled_bradley_terry(battles: Sequence[tuple[str, str, str]], features: np.ndarray, *,
                                   feature_names: Sequence[str], players: Sequence[str] | None = None,
                                   anchor: str | None = None, intervals: Intervals | None = None,
                                   scale: float = 400.0, base: float = 10.0, initial: float = 1000.0) -> dict:
    """Bradley–Terry ratings with style features held equal (Arena-Hard's ``--control-features``).

    ``battles``: ``(player_a, player_b, outcome)`` from ``player_a``'s side; ``features``: one row per
    battle of style differences (a minus b), e.g. :func:`normalized_difference` of lengths. Features are
    standardised; a tie counts as half a win for each side. Returns ``ratings`` (``{player: {"rating",
    "rating_ci"}}``, the anchor fixed at ``initial``), ``coefficients`` (``{feature: log-odds per
    standard deviation}``) and ``coefficients_ci``; intervals from a seeded bootstrap over battles
    (``intervals``, default ``Intervals(n_boot=200)``; ``n_boot=``, ``seed=``, ``confidence=`` alone are deprecated).
    """
    intervals = intervals if intervals is not None else Intervals(n_boot=200)
    n_boot, seed, confidence = intervals.n_boot, intervals.seed, intervals.confidence
    names = sorted({p for a, b, _ in battles for p in (a, b)}) if players is None else list(players)
    features = np.asarray(features, dtype=float).reshape(len(battles), -1)
    if features.shape[1] != len(feature_names):
        raise RagQaArenaError(f"style features have {features.shape[1]} columns but feature_names has "
                              f"{len(feature_names)}: name each column once")
    if not battles:
        raise RagQaArenaError("style_controlled_bradley_terry needs at least one battle")
    index = {p: i for i, p in enumerate(names)}
    if anchor is not None and anchor not in index:
        raise RagQaArenaError(f"anchor {anchor!r} plays no battle. Players: {', '.join(names)}; give one of them or None")
    anchor_i = index[anchor] if anchor is not None else None
    first = np.array([index[a] for a, _, _ in battles], dtype=np.intp)
    second = np.array([index[b] for _, b, _ in battles], dtype=np.intp)
    score = np.array([{"win": 1.0, "tie": 0.5, "loss": 0.0}[o] for _, _, o in battles])
    std = features.std(axis=0)
    std[std == 0] = 1.0
    design = _PairDesign(first, second, features / std, len(names), anchor_i)

    def fit(weights: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        beta = design.fit(score, weights, start)
        theta = beta[:len(names)].copy()
        if anchor_i is None:
            theta -= theta.mean()
        return np.concatenate([initial + theta * scale / math.log(base), beta[len(names):]]), beta

    point, start = fit(np.ones(len(battles)))
    rng = np.random.default_rng(seed)
    boots = np.array([fit(np.bincount(rng.integers(0, len(battles), len(battles)), minlength=len(battles))
                          .astype(float), start)[0] for _ in range(n_boot)]).reshape(n_boot, len(point))
    cis = [_holding(percentile_interval(boots[:, k], confidence), float(point[k])) if n_boot else None
           for k in range(len(point))]
    ratings = {p: {"rating": float(point[i]), "rating_ci": cis[i]} for i, p in enumerate(names)}
    m = len(names)
    return {"ratings": ratings, "coefficients": {n: float(point[m + k]) for k, n in enumerate(feature_names)},
            "coefficients_ci": {n: cis[m + k] for k, n in enumerate(feature_names)}}


class _PairDesign:
    """The Bradley–Terry design (``+1`` first player, ``-1`` second) plus dense style features, fitted by
    Newton's method on sums over battles (``np.bincount``), never building the players' dense columns."""

    def __init__(self, first: np.ndarray, second: np.ndarray, features: np.ndarray, n_players: int,
                 anchor: int | None) -> None:
        self.first, self.second, self.features, self.m = first, second, features, n_players
        self.free = np.array([i for i in range(n_players) if i != anchor] + list(range(n_players, n_players
                                                                                        + features.shape[1])))

    def _by_player(self, values: np.ndarray) -> np.ndarray:
        return (np.bincount(self.first, values, self.m) - np.bincount(self.second, values, self.m))

    def fit(self, y: np.ndarray, w: np.ndarray, start: np.ndarray | None, ridge: float = 1e-4) -> np.ndarray:
        m, k = self.m, self.features.shape[1]
        beta = np.zeros(m + k) if start is None else start.copy()
        for _ in range(50):
            eta = beta[self.first] - beta[self.second] + self.features @ beta[m:]
            p = _sigmoid(eta)
            r, v = w * (y - p), w * p * (1 - p)
            gradient = np.concatenate([self._by_player(r), self.features.T @ r]) - ridge * beta
            pairs = np.bincount(self.first * m + self.second, v, m * m).reshape(m, m)
            pairs = pairs + pairs.T
            hessian = np.zeros((m + k, m + k))
            hessian[:m, :m] = np.diag(pairs.sum(axis=1)) - pairs
            cross = np.column_stack([self._by_player(v * self.features[:, j]) for j in range(k)])
            hessian[:m, m:], hessian[m:, :m] = cross, cross.T
            hessian[m:, m:] = (self.features * v[:, None]).T @ self.features
            hessian += ridge * np.eye(m + k)
            free = self.free
            step = np.zeros(m + k)
            step[free] = np.linalg.solve(hessian[np.ix_(free, free)], gradient[free])
            beta += step
            if np.max(np.abs(step)) < 1e-8:
                break
        return beta
