"""Bradley–Terry ratings on the Elo scale, fitted on aggregated battle counts.

A *battle* is one judged pair ``(system_a, system_b, outcome)`` with the outcome seen from
``system_a``'s side (``"win"``, ``"tie"`` or ``"loss"``). Battles are aggregated into a
players x players matrix first, so fitting cost does not grow with the number of battles.

Model and conventions (those of the Chatbot Arena notebook the RAG-QA Arena paper follows):

* ``P(i beats j) = 1 / (1 + base ** ((R_j - R_i) / scale))`` with ``scale=400``, ``base=10``.
* Ties count as half a win for each side. (The notebook duplicates every battle and counts a tie
  as a win for A in one copy and for B in the other; with an unpenalised maximum-likelihood fit
  that gives exactly the same ratings.)
* The reference player (``anchor``, LFRQA by default in the leaderboard) is fixed at
  ``initial=1000``, so every other rating reads as a distance from LFRQA: a system at 1100
  beats LFRQA with probability 1 / (1 + 10 ** (-100 / 400)) = 0.64. Without an anchor the
  ratings are centred so that their mean is ``initial``.
* The maximum-likelihood fit uses Newton's method on the concave log-likelihood, vectorised over
  bootstrap rounds. A tiny ridge penalty (``ridge=1e-4`` on the natural-log strengths) keeps
  ratings finite when a player won or lost every battle; with hundreds of battles per player its
  effect is far below 0.01 Elo points.
* Intervals: seeded percentile bootstrap. Each pair of players is resampled *within its own
  battle count* (a multinomial draw of its win/tie/loss counts), so every bootstrap round keeps
  the design of the experiment (how many queries each pair was judged on).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from metric_arena.stats._length import style_controlled_bradley_terry
from metric_arena.stats._settings import INTERVAL_KEYWORDS, OUTCOMES, Intervals

SCALE = 400.0
BASE = 10.0
INITIAL = 1000.0


@dataclass
class BattleCounts:
    """Aggregated battles: ``wins[i, j]`` battles player ``i`` won against ``j``; ``ties[i, j]``
    (symmetric) battles between them that ended in a tie.

    >>> counts = BattleCounts.from_battles([("A", "LFRQA", "win"), ("A", "LFRQA", "tie"), ("B", "A", "loss")])
    >>> counts.players, int(counts.wins[0, 1]), int(counts.ties[0, 1]), counts.n_battles
    (['A', 'B', 'LFRQA'], 1, 0, 3)
    """

    players: list[str]
    wins: np.ndarray
    ties: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.players)
        if len(set(self.players)) != n:
            raise RagQaArenaError(f"Duplicate player names in {self.players!r}: give each player once")
        self.wins = np.asarray(self.wins, dtype=float)
        self.ties = np.asarray(self.ties, dtype=float)
        for name, matrix in (("wins", self.wins), ("ties", self.ties)):
            if matrix.shape != (n, n):
                raise RagQaArenaError(f"{name} has shape {matrix.shape}; expected ({n}, {n}) for {n} players")
            if (matrix < 0).any():
                raise RagQaArenaError(f"{name} has negative counts: counts of battles must be >= 0")
        if not np.allclose(self.ties, self.ties.T):
            raise RagQaArenaError("ties must be symmetric: ties[i, j] == ties[j, i]")

    @classmethod
    def from_battles(
        cls, battles: Iterable[tuple[str, str, str]], players: Sequence[str] | None = None
    ) -> BattleCounts:
        """Count ``(player_a, player_b, outcome)`` battles; outcome from ``player_a``'s side.

        ``players`` fixes the order (and may list players with no battles); by default the
        players are sorted by name.
        """
        rows = list(battles)
        names = sorted({p for a, b, _ in rows for p in (a, b)}) if players is None else list(players)
        index = {name: i for i, name in enumerate(names)}
        wins = np.zeros((len(names), len(names)))
        ties = np.zeros((len(names), len(names)))
        for k, (a, b, outcome) in enumerate(rows):
            if outcome not in OUTCOMES:
                raise RagQaArenaError(f"Unknown outcome {outcome!r} in battle {k} ({a!r} vs {b!r}). Allowed: win, tie, loss")
            if a == b:
                raise RagQaArenaError(f"Battle {k} pits {a!r} against itself: a battle needs two different players")
            for p in (a, b):
                if p not in index:
                    raise RagQaArenaError(f"Battle {k} names player {p!r}, which is not in players={names!r}")
            i, j = index[a], index[b]
            if outcome == "win":
                wins[i, j] += 1
            elif outcome == "loss":
                wins[j, i] += 1
            else:
                ties[i, j] += 1
                ties[j, i] += 1
        return cls(names, wins, ties)

    @property
    def n_battles(self) -> int:
        """Total number of battles."""
        return int(round(self.wins.sum() + self.ties.sum() / 2))

    def battles_of(self, player: str) -> int:
        """Number of battles ``player`` took part in."""
        i = self._index(player)
        return int(round(self.wins[i].sum() + self.wins[:, i].sum() + self.ties[i].sum()))

    def scores(self) -> np.ndarray:
        """``scores[i, j]``: wins of ``i`` over ``j`` plus half their ties."""
        return self.wins + 0.5 * self.ties

    def components(self) -> list[list[str]]:
        """Groups of players connected by battles; ratings are only comparable within a group."""
        played = (self.wins + self.wins.T + self.ties) > 0
        seen: set[int] = set()
        groups = []
        for start in range(len(self.players)):
            if start in seen:
                continue
            stack, group = [start], []
            seen.add(start)
            while stack:
                i = stack.pop()
                group.append(i)
                for j in np.flatnonzero(played[i]):
                    if int(j) not in seen:
                        seen.add(int(j))
                        stack.append(int(j))
            groups.append(sorted(self.players[i] for i in group))
        return groups

    def _index(self, player: str) -> int:
        try:
            return self.players.index(player)
        except ValueError:
            raise RagQaArenaError(f"Unknown player {player!r}. Available: {', '.join(self.players)}") from None


#: Fewer battles than this give a player no rating interval (``rating_ci`` None): never "separated".
MIN_BATTLES_FOR_INTERVAL = 10


def fit_bradley_terry(
    counts: BattleCounts,
    *,
    anchor: str | None = None,
    scale: float = SCALE,
    base: float = BASE,
    initial: float = INITIAL,
    ridge: float = 1e-4,
) -> dict[str, float]:
    """Maximum-likelihood Bradley–Terry ratings on the Elo scale, ``{player: rating}``.

    >>> counts = BattleCounts.from_battles([("A", "LFRQA", "win")] * 64 + [("A", "LFRQA", "loss")] * 36)
    >>> {p: round(r) for p, r in fit_bradley_terry(counts, anchor="LFRQA").items()}
    {'A': 1100, 'LFRQA': 1000}
    """
    _check_scale(scale, base)
    anchor_index = None if anchor is None else counts._index(anchor)
    theta = _newton(counts.scores()[None], anchor_index, ridge)[0]
    return dict(zip(counts.players, _to_elo(theta, anchor_index, scale, base, initial).tolist()))


@grouped_keywords("intervals", Intervals, INTERVAL_KEYWORDS)
def bootstrap_bradley_terry(
    counts: BattleCounts,
    *,
    anchor: str | None = None,
    intervals: Intervals | None = None,
    scale: float = SCALE,
    base: float = BASE,
    initial: float = INITIAL,
    ridge: float = 1e-4,
    chunk_size: int = 250,
    progress=None,
) -> dict[str, dict]:
    """Ratings with seeded percentile-bootstrap intervals.

    Returns ``{player: {"rating": float, "rating_ci": [low, high], "n_battles": int}}``; the
    anchor's interval is ``[initial, initial]`` by construction. A player with fewer than
    :data:`MIN_BATTLES_FOR_INTERVAL` battles, or whose resampled ratings do not vary (say, one
    judged pair, or every battle won), gets ``"rating_ci": None``: resampling so few outcomes gives
    a zero-width interval that would claim a certainty the battles cannot give. ``progress(done, total)`` is
    called after each chunk of bootstrap rounds when given. ``intervals``: resamples, seed and level
    (:class:`Intervals`; ``n_boot=``, ``seed=``, ``confidence=`` alone are deprecated).
    """
    intervals = intervals if intervals is not None else Intervals()
    n_boot, seed, confidence = intervals.n_boot, intervals.seed, intervals.confidence
    _check_scale(scale, base)
    if n_boot < 1:
        raise RagQaArenaError(f"n_boot={n_boot} must be >= 1")
    if not 0.0 < confidence < 1.0:
        raise RagQaArenaError(f"confidence={confidence} must be between 0 and 1, e.g. 0.95")
    anchor_index = None if anchor is None else counts._index(anchor)
    point = fit_bradley_terry(counts, anchor=anchor, scale=scale, base=base, initial=initial, ridge=ridge)

    rng = np.random.default_rng(seed)
    n_players = len(counts.players)
    pairs = [(i, j) for i in range(n_players) for j in range(i + 1, n_players)]
    cells = np.array([[counts.wins[i, j], counts.ties[i, j], counts.wins[j, i]] for i, j in pairs]).reshape(-1, 3)
    totals = cells.sum(axis=1)
    # Multinomial draws of each pair's (win, tie, loss) counts: shape (n_boot, n_pairs, 3).
    draws = np.zeros((n_boot, len(pairs), 3))
    for k, total in enumerate(totals):
        if total > 0:
            n = int(round(total))
            draws[:, k, :] = rng.multinomial(n, cells[k] / total, size=n_boot)

    ratings = np.empty((n_boot, n_players))
    rows, cols = (np.array([p[0] for p in pairs], dtype=int), np.array([p[1] for p in pairs], dtype=int))
    for start in range(0, n_boot, chunk_size):
        stop = min(start + chunk_size, n_boot)
        scores = np.zeros((stop - start, n_players, n_players))
        if pairs:
            part = draws[start:stop]
            scores[:, rows, cols] = part[:, :, 0] + 0.5 * part[:, :, 1]
            scores[:, cols, rows] = part[:, :, 2] + 0.5 * part[:, :, 1]
        theta = _newton(scores, anchor_index, ridge)
        ratings[start:stop] = _to_elo(theta, anchor_index, scale, base, initial)
        if progress is not None:
            progress(stop, n_boot)

    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratings, [alpha, 1.0 - alpha], axis=0)
    result = {}
    for i, player in enumerate(counts.players):
        n_battles = counts.battles_of(player)
        interval: list[float] | None = [float(low[i]), float(high[i])]
        if i != anchor_index and (n_battles < MIN_BATTLES_FOR_INTERVAL or not high[i] > low[i]):
            interval = None  # a handful of battles (or all of one outcome) cannot bound a rating: no interval
        result[player] = {"rating": point[player], "rating_ci": interval, "n_battles": n_battles}
    return result


def intervals_separated(upper_ci, lower_ci) -> bool:
    """Whether the interval ``upper_ci`` lies wholly above ``lower_ci``; never when either is None
    (a player with too few battles for an interval is separated from no one).

    >>> intervals_separated([1050, 1100], [980, 1040]), intervals_separated(None, [980, 1040])
    (True, False)
    """
    return upper_ci is not None and lower_ci is not None and upper_ci[0] > lower_ci[1]


def expected_score(rating_a: float, rating_b: float, *, scale: float = SCALE, base: float = BASE) -> float:
    """Probability that a player rated ``rating_a`` beats one rated ``rating_b`` (ties as halves).

    >>> round(expected_score(1100, 1000), 3)
    0.64
    """
    return 1.0 / (1.0 + base ** ((rating_b - rating_a) / scale))


def style_controlled_ratings(
    battles: Sequence[tuple[str, str, str]],
    features: np.ndarray,
    *,
    feature_names: Sequence[str],
    center: bool = False,
    anchor: str | None = None,
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Style-controlled Bradley–Terry ratings (:func:`style_controlled_bradley_terry`) on ``features``
    standardised here: each column divided by its standard deviation, and first centred on its mean with
    ``center=True`` (as FastChat's ``compute_style_control`` normalises). A constant column (every battle
    the same value: nothing to control for; FastChat's own fit turns every rating into NaN there) is
    dropped and named in ``note`` instead; with none left the ratings are the plain Bradley–Terry fit.

    Returns the fit's ``ratings``, ``coefficients`` and ``coefficients_ci`` (kept features only),
    ``features`` (the kept names), ``dropped`` (the constant ones) and ``note`` (None when none dropped).

    >>> fit = style_controlled_ratings([("A", "B", "win"), ("A", "B", "loss")] * 10, [[0.5, 1], [-0.5, 1]] * 10,
    ...                                feature_names=["length", "bold"], n_boot=5)
    >>> fit["features"], fit["dropped"], round(fit["coefficients"]["length"]) > 3
    (['length'], ['bold'], True)
    """
    names = list(feature_names)
    matrix = np.asarray(features, dtype=float).reshape(len(battles), -1)
    if matrix.shape[1] != len(names):
        raise RagQaArenaError(f"style features have {matrix.shape[1]} columns but feature_names has {len(names)}: "
                              "name each column once")
    constant = [k for k in range(len(names)) if len(matrix) == 0 or np.ptp(matrix[:, k]) == 0]
    kept = [k for k in range(len(names)) if k not in constant]
    matrix = matrix[:, kept]
    if center:
        matrix = matrix - matrix.mean(axis=0)
    if kept:
        matrix = matrix / matrix.std(axis=0)
    fit_names = [names[k] for k in kept] or ["(none)"]
    fit = style_controlled_bradley_terry(battles, matrix if kept else np.zeros((len(battles), 1)),
                                         feature_names=fit_names, anchor=anchor,
                                         intervals=Intervals(n_boot=n_boot, seed=seed, confidence=confidence))
    dropped = [names[k] for k in constant]
    note = (f"{', '.join(dropped)}: the same in every battle, so not controlled for (dropped)" if dropped else None)
    coefficients = {n: fit["coefficients"][n] for n in fit_names if kept}
    intervals = {n: fit["coefficients_ci"][n] for n in fit_names if kept}
    return {"ratings": fit["ratings"], "coefficients": coefficients, "coefficients_ci": intervals,
            "features": [names[k] for k in kept], "dropped": dropped, "note": note}


def _check_scale(scale: float, base: float) -> None:
    if scale <= 0:
        raise RagQaArenaError(f"scale={scale} must be > 0 (Elo uses 400)")
    if base <= 1:
        raise RagQaArenaError(f"base={base} must be > 1 (Elo uses 10)")


def _to_elo(theta: np.ndarray, anchor_index: int | None, scale: float, base: float, initial: float) -> np.ndarray:
    if anchor_index is None:
        theta = theta - theta.mean(axis=-1, keepdims=True)
    return initial + scale * theta / math.log(base)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _newton(
    scores: np.ndarray, anchor_index: int | None, ridge: float, *, max_iter: int = 200, tol: float = 1e-10
) -> np.ndarray:
    """Natural-log strengths ``theta`` (batch x players) maximising the penalised log-likelihood
    ``sum_ij S_ij log sigmoid(theta_i - theta_j) - ridge * |theta|^2`` with ``theta[anchor] = 0``
    (player 0 when there is no anchor)."""
    batch, n_players, _ = scores.shape
    theta = np.zeros((batch, n_players))
    if n_players < 2:
        return theta
    fixed = 0 if anchor_index is None else anchor_index
    free = np.array([i for i in range(n_players) if i != fixed])
    totals = scores + np.swapaxes(scores, 1, 2)
    won = scores.sum(axis=2)
    eye = np.eye(n_players)
    ridge = max(float(ridge), 1e-12)
    for _ in range(max_iter):
        prob = _sigmoid(theta[:, :, None] - theta[:, None, :])
        gradient = won - (totals * prob).sum(axis=2) - 2.0 * ridge * theta
        weight = totals * prob * (1.0 - prob)
        hessian = weight - eye * weight.sum(axis=2)[:, :, None] - 2.0 * ridge * eye
        h_free = hessian[:, free][:, :, free]
        g_free = gradient[:, free]
        step = -np.linalg.solve(h_free, g_free[:, :, None])[:, :, 0]
        # Damp huge steps (far from the optimum, or a player that never won/lost) to stay stable.
        largest = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, 4.0 / np.maximum(largest, 1e-300))
        theta[:, free] += step
        if float(largest.max()) < tol:
            break
    return theta
