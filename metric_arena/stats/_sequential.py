"""Stop judging a tournament's pairs once the ranking is separated, with a family-wise error level that
holds however often the battles are looked at.

Each pair of systems ``(a, b)`` has a win probability ``p_ab``: the chance that ``a``'s answer beats
``b``'s on a random shared question (a tie counts half). After ``n`` direct battles with score
``S`` (wins + ties / 2) the *anytime-valid confidence sequence* is

    S / n  ±  sqrt((n / 4 + rho) * log((n / 4 + rho) / (rho * level ** 2))) / n

(Robbins' normal mixture for a 1/2-sub-Gaussian score, Howard et al. 2021): by Ville's inequality the
chance that it *ever* misses ``p_ab``, at any ``n`` and after any number of looks, is at most
``level``. With ``level = alpha / (k * (k - 1) / 2)`` (Bonferroni over every pair of the ``k``
systems, so that it holds whichever pairs end up neighbours) every interval of every pair covers its
``p_ab`` at every look with probability at least ``1 - alpha``. A pair is *separated* when its
interval excludes 1/2; so the chance that a tournament ever declares a wrong order (two equal
systems, or two systems the wrong way round) is at most ``alpha`` (measured in
``benchmarks/tournament_adaptive.py``). ``rho`` tunes the width to be smallest near ``tuned_n``
battles; any ``rho > 0`` keeps the guarantee.

:class:`SequentialRanking` plans the rounds: rank the systems (by the caller's ratings, corrected so
that no separated neighbours stand the wrong way round), and give the next round's judgments to the
neighbouring pairs not yet separated, never past the budget.

>>> low, high = confidence_sequence(70, 0, 100, level=0.05)
>>> round(low, 3), round(high, 3)
(0.546, 0.854)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from metric_arena.stats._ratings import BattleCounts, fit_bradley_terry
from metric_arena.stats._settings import DEFAULT_ALPHA

__all__ = ["RoundPlan", "SequentialRanking", "confidence_sequence"]

STOP_SEPARATED = "separated"
STOP_BUDGET = "budget"
STOP_EXHAUSTED = "questions exhausted"


def _check_level(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise RagQaArenaError(f"{name}={value!r} must be a probability between 0 and 1 (e.g. 0.05)")
    return float(value)


def _rho(level: float, tuned_n: int) -> float:
    """The mixture's ``rho`` that makes the boundary narrowest near ``tuned_n`` battles."""
    log = math.log(1 / level)
    return (tuned_n / 4) / (2 * log + math.log(1 + 2 * log))


def confidence_sequence(wins: float, ties: float, n: int, *, level: float = DEFAULT_ALPHA, tuned_n: int = 200
                        ) -> tuple[float, float]:
    """Anytime-valid interval for a win probability after ``n`` battles (``wins``, ``ties`` among them).

    Valid at every ``n`` at once: the chance that it ever misses is at most ``level``. ``(0, 1)``
    before any battle.
    """
    _check_level("level", level)
    check_int("tuned_n", tuned_n, minimum=1)
    if n < 0 or wins < 0 or ties < 0 or wins + ties > n:
        raise RagQaArenaError(f"wins={wins!r}, ties={ties!r}, n={n!r}: need 0 <= wins + ties <= n")
    if n == 0:
        return (0.0, 1.0)
    rho = _rho(level, tuned_n)
    v = n / 4 + rho
    half = math.sqrt(v * math.log(v / (rho * level * level))) / n
    centre = (wins + ties / 2) / n
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class RoundPlan:
    """One look: the ranking, its neighbouring pairs (``upper``, ``lower``, ``n``, ``win_rate``,
    ``interval``, ``separated``), and either the next round (``grown``: new battle counts per pair)
    or why to stop (``stopped``: "separated", "budget" or "questions exhausted")."""

    ranking: list[str]
    neighbours: list[dict]
    grown: dict[tuple[str, str], int]
    stopped: str | None


class SequentialRanking:
    """The stopping rule and the allocation of an adaptive tournament of ``systems``.

    ``alpha``: the family-wise error level (the chance of ever declaring a wrong order between any two
    systems). Each pair's interval has level ``alpha / (k (k-1) / 2)``.

    >>> rule = SequentialRanking(["a", "b", "c"], alpha=0.05)
    >>> plan = rule.plan({("a", "b"): (0, 0, 0), ("a", "c"): (0, 0, 0), ("b", "c"): (0, 0, 0)}, ["a", "b", "c"],
    ...                  n_max=100, round_size=10, budget_left=10)
    >>> plan.grown, plan.stopped
    ({('a', 'b'): 5, ('b', 'c'): 5}, None)
    """

    def __init__(self, systems: Sequence[str], *, alpha: float = DEFAULT_ALPHA, tuned_n: int = 200) -> None:
        self.systems = list(systems)
        if len(self.systems) < 2 or len(set(self.systems)) != len(self.systems):
            raise RagQaArenaError(f"systems={self.systems!r}: give at least two distinct systems")
        self.alpha = _check_level("alpha", alpha)
        check_int("tuned_n", tuned_n, minimum=1)
        self.tuned_n = tuned_n
        k = len(self.systems)
        self.level = self.alpha / (k * (k - 1) / 2)

    def look(self, counts: BattleCounts, *, anchor: str | None = None
             ) -> tuple[list[str], dict[tuple[str, str], tuple[float, float, float]]]:
        """The systems ranked by Bradley–Terry rating on every battle in ``counts`` (``anchor``: a
        reference player fixed at 1000, e.g. LFRQA), and each pair's ``(wins, ties, losses)`` from its
        first system's side (pairs in the order of :attr:`systems`)."""
        ratings = fit_bradley_terry(counts, anchor=anchor)
        ranking = sorted(self.systems, key=lambda s: (-ratings[s], s))
        index = {p: i for i, p in enumerate(counts.players)}
        records = {}
        for k, a in enumerate(self.systems):
            for b in self.systems[k + 1:]:
                i, j = index[a], index[b]
                records[(a, b)] = (float(counts.wins[i, j]), float(counts.ties[i, j]), float(counts.wins[j, i]))
        return ranking, records

    def interval(self, record: tuple[float, float, float]) -> tuple[float, float]:
        """``(wins, ties, losses)`` of one pair (from its first system's side) -> its interval."""
        wins, ties, losses = record
        return confidence_sequence(wins, ties, int(round(wins + ties + losses)), level=self.level,
                                   tuned_n=self.tuned_n)

    def _seen(self, records: Mapping[tuple[str, str], tuple[float, float, float]], upper: str, lower: str
              ) -> tuple[tuple[float, float, float], tuple[str, str]]:
        """The record of ``upper`` against ``lower`` from ``upper``'s side, and the pair's key."""
        if (upper, lower) in records:
            return tuple(records[(upper, lower)]), (upper, lower)
        if (lower, upper) in records:
            wins, ties, losses = records[(lower, upper)]
            return (losses, ties, wins), (lower, upper)
        raise RagQaArenaError(f"No record for the pair {upper!r}, {lower!r}: give one (wins, ties, losses) per pair")

    def neighbours(self, records: Mapping[tuple[str, str], tuple[float, float, float]], ranking: Sequence[str]
                   ) -> tuple[list[str], list[dict]]:
        """The ranking with every separated neighbour standing the right way round, and its neighbours."""
        order = [s for s in ranking if s in self.systems]
        if sorted(order) != sorted(self.systems):
            raise RagQaArenaError(f"ranking={list(ranking)!r} must list every system once: {self.systems!r}")
        for _ in range(len(order) ** 2):  # bubble: a neighbour separated the wrong way round swaps
            swapped = False
            for k in range(len(order) - 1):
                _low, high = self.interval(self._seen(records, order[k], order[k + 1])[0])
                if high < 0.5:
                    order[k], order[k + 1] = order[k + 1], order[k]
                    swapped = True
            if not swapped:
                break
        rows = []
        for upper, lower in zip(order, order[1:]):
            record, key = self._seen(records, upper, lower)
            low, high = self.interval(record)
            n = int(round(sum(record)))
            rows.append({"upper": upper, "lower": lower, "pair": key, "n": n,
                         "win_rate": (record[0] + record[1] / 2) / n if n else None,
                         "interval": [low, high], "separated": low > 0.5})
        return order, rows

    def plan(self, records: Mapping[tuple[str, str], tuple[float, float, float]], ranking: Sequence[str], *,
             n_max: int | Mapping[tuple[str, str], int], round_size: int, budget_left: float,
             taken: Mapping[tuple[str, str], int] | None = None) -> RoundPlan:
        """The next round: ``round_size`` questions (at most ``budget_left``) shared equally by the
        neighbouring pairs not yet separated, each pair capped at ``n_max`` questions. ``taken``: the
        questions each pair was asked so far (failed ones included; default: its battles)."""
        order, rows = self.neighbours(records, ranking)
        open_rows = [row for row in rows if not row["separated"]]
        if not open_rows:
            return RoundPlan(order, rows, {}, STOP_SEPARATED)
        spend = int(min(round_size, budget_left))
        if spend <= 0:
            return RoundPlan(order, rows, {}, STOP_BUDGET)
        cap = {row["pair"]: n_max if isinstance(n_max, int) else n_max[row["pair"]] for row in open_rows}
        asked = {row["pair"]: row["n"] if taken is None else taken[row["pair"]] for row in open_rows}
        room = {pair: cap[pair] - asked[pair] for pair in asked if asked[pair] < cap[pair]}
        if not room:
            return RoundPlan(order, rows, {}, STOP_EXHAUSTED)
        extra = dict.fromkeys(room, 0)
        while spend > 0 and any(extra[p] < room[p] for p in room):  # one at a time, round robin: never over
            for pair in room:
                if spend > 0 and extra[pair] < room[pair]:
                    extra[pair] += 1
                    spend -= 1
        return RoundPlan(order, rows, {pair: asked[pair] + k for pair, k in extra.items() if k}, None)
