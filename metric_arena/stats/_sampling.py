"""Judge fewer pairs: a seeded stratified sub-sample, and stopping once the interval is narrow.

A full run judges 14,020 pairs per system. A leaderboard rank rarely needs that many: with
``n`` pairs the 95% interval on a win rate near 50% is about ``2 * 1.96 * sqrt(0.25 / n)``
wide (±2.6 points at 1,400 pairs, ±0.8 at 14,020).

- :func:`stratified_sample` picks ``n`` question ids with each domain kept at its share of the
  full set, the same ids for the same seed whatever order the input came in.
- :class:`IntervalStopper` watches outcomes as they arrive and says when the win+tie rate's
  interval is narrower than a target width; feed it the ids in the order
  :func:`stratified_sample` returns them (every prefix of that order is itself stratified).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError

__all__ = ["IntervalStopper", "pair_schedule", "stratified_sample", "wilson_interval"]


def _rank(seed: int, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()


def _largest_remainder(quotas: dict[str, Fraction], n: int) -> dict[str, int]:
    """Round quotas (summing to ``n``) to ints summing to ``n``: floors, then the largest remainders."""
    alloc = {d: math.floor(q) for d, q in quotas.items()}
    left = n - sum(alloc.values())
    by_remainder = sorted(quotas, key=lambda d: (-(quotas[d] - alloc[d]), d))
    for d in by_remainder[:left]:
        alloc[d] += 1
    return alloc


def _allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    total = sum(sizes.values())
    quotas = {d: Fraction(n * size, total) for d, size in sizes.items()}  # exact: ties stay ties
    alloc = _largest_remainder(quotas, n)
    if n >= len(sizes):
        # At least one per domain: move one from the domain most above its quota (with more than one).
        for d in sorted((d for d in sizes if alloc[d] == 0), key=lambda d: (-quotas[d], d)):
            donor = max((x for x in sizes if alloc[x] > 1), key=lambda x: (alloc[x] - quotas[x], alloc[x], x))
            alloc[donor] -= 1
            alloc[d] += 1
    return alloc


def _interleave(groups: dict[str, list[str]], sizes: dict[str, int]) -> list[str]:
    """Merge per-domain lists so that every prefix keeps each domain near its share ``sizes``."""
    total = sum(sizes.values())
    name_rank = {d: i for i, d in enumerate(sorted(groups))}
    taken = dict.fromkeys(groups, 0)
    out: list[str] = []
    for k in range(1, sum(len(g) for g in groups.values()) + 1):
        # The domain furthest behind its share of the first k places goes next (ties: by name);
        # compared in integers (deficit * total) so that ties are exact.
        open_domains = [d for d in groups if taken[d] < len(groups[d])]
        d = max(open_domains, key=lambda d: (k * sizes[d] - taken[d] * total, -name_rank[d]))
        out.append(groups[d][taken[d]])
        taken[d] += 1
    return out


def stratified_sample(ids: Sequence[str], domains: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` of ``ids``, stratified by domain, seeded, independent of the input order.

    Each domain gets ``n * size / total`` places, rounded by largest remainder (ties by domain
    name), and at least one place per domain when ``n`` is at least the number of domains.
    Within a domain the ids ranked first by ``sha256(f"{seed}:{qid}")`` are taken, so the
    sample depends only on the set of (id, domain) pairs and the seed. ``n >= len(ids)`` keeps
    every id (a seeded order of the whole set).

    The result is ordered so that each prefix is itself near-stratified: judge in this order
    and stop early (see :class:`IntervalStopper`) without skewing the domain mix.

    >>> ids = [f"q{i}" for i in range(10)]
    >>> domains = ["fiqa"] * 6 + ["bioasq"] * 3 + ["science"]
    >>> sample = stratified_sample(ids, domains, 5, seed=0)
    >>> sorted(domains[ids.index(q)] for q in sample)
    ['bioasq', 'fiqa', 'fiqa', 'fiqa', 'science']
    """
    ids = list(ids)
    domains = list(domains)
    if len(ids) != len(domains):
        raise RagQaArenaError(f"ids has {len(ids)} entries but domains has {len(domains)}: give one domain per id")
    check_int("n", n, minimum=0, hint="the number of questions to keep")
    check_int("seed", seed)
    groups: dict[str, list[str]] = {}
    seen: set[str] = set()
    for qid, domain in zip(ids, domains):
        if not isinstance(qid, str) or not qid:
            raise RagQaArenaError(f"id {qid!r} is not a non-empty string: sample by the stable qid")
        if not isinstance(domain, str) or not domain:
            raise RagQaArenaError(f"domain {domain!r} of id {qid!r} is not a non-empty string")
        if qid in seen:
            raise RagQaArenaError(f"id {qid!r} appears twice: ids must be unique")
        seen.add(qid)
        groups.setdefault(domain, []).append(qid)
    if not ids or n == 0:
        return []
    groups = {d: sorted(g, key=lambda q: _rank(seed, q)) for d, g in sorted(groups.items())}
    sizes = {d: len(g) for d, g in groups.items()}
    alloc = _allocate(sizes, min(n, len(ids)))
    return _interleave({d: g[: alloc[d]] for d, g in groups.items()}, sizes)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``successes / n`` (``(0.0, 1.0)`` when ``n == 0``).

    >>> lo, hi = wilson_interval(50, 100)
    >>> round(lo, 4), round(hi, 4)
    (0.4038, 0.5962)
    """
    if not 0 <= successes <= n:
        raise RagQaArenaError(f"successes={successes!r} must be between 0 and n={n!r}")
    if not 0 < confidence < 1:
        raise RagQaArenaError(f"confidence={confidence!r} must be between 0 and 1 (e.g. 0.95)")
    if n == 0:
        return (0.0, 1.0)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return (low, high)


class IntervalStopper:
    """Stop judging once the win+tie rate's interval is narrower than ``target_width``.

    Feed each judged pair's outcome (``"win"``, ``"tie"``, ``"loss"``; ``None`` for a failed
    pair, which is counted but not in the rate) to :meth:`update`; :attr:`should_stop` turns
    true once at least ``min_n`` pairs are judged and the interval is at most ``target_width``
    wide. The interval is the Wilson score interval: closed form, so checking after every pair
    costs nothing (the bootstrap of the final report is too slow per step), and unlike the
    normal approximation it behaves near 0 and 1. ``metric="win"`` watches the win rate
    instead, ``"both"`` waits for both intervals.

    Stopping when an interval first gets narrow is optional stopping: the reported interval's
    coverage is then slightly below nominal. ``min_n`` (default 50) guards the small-n end;
    report the interval reached (:meth:`summary`) next to the sample size.

    >>> stop = IntervalStopper(target_width=0.2, min_n=10)
    >>> for outcome in ["win", "loss"] * 50:
    ...     if stop.update(outcome):
    ...         break
    >>> stop.n, round(stop.width, 3)
    (93, 0.199)
    """

    METRICS = ("win_tie", "win", "both")

    def __init__(self, target_width: float, min_n: int = 50, confidence: float = 0.95, *, metric: str = "win_tie") -> None:
        if isinstance(target_width, bool) or not isinstance(target_width, (int, float)) or not 0 < target_width <= 1:
            raise RagQaArenaError(f"target_width={target_width!r} must be in (0, 1], e.g. 0.05 for a 5-point interval")
        check_int("min_n", min_n, minimum=1)
        if not 0 < confidence < 1:
            raise RagQaArenaError(f"confidence={confidence!r} must be between 0 and 1 (e.g. 0.95)")
        if metric not in self.METRICS:
            raise RagQaArenaError(f"Unknown metric {metric!r}. Available: {', '.join(self.METRICS)}")
        self.target_width = float(target_width)
        self.min_n = min_n
        self.confidence = confidence
        self.metric = metric
        self.n = 0  # judged pairs
        self.n_failed = 0
        self.wins = 0
        self.ties = 0

    def update(self, outcome: str | None) -> bool:
        """Count one pair's outcome; return :attr:`should_stop`."""
        if outcome is None:
            self.n_failed += 1
        elif outcome == "win":
            self.n += 1
            self.wins += 1
        elif outcome == "tie":
            self.n += 1
            self.ties += 1
        elif outcome == "loss":
            self.n += 1
        else:
            raise RagQaArenaError(f"Unknown outcome {outcome!r}. Allowed: win, tie, loss, or None for a failed pair")
        return self.should_stop

    @property
    def interval(self) -> tuple[float, float]:
        """Wilson interval of the win+tie rate (of the win rate with ``metric="win"``)."""
        return wilson_interval(self.wins if self.metric == "win" else self.wins + self.ties, self.n, self.confidence)

    @property
    def width(self) -> float:
        """Width of the watched interval (the wider one with ``metric="both"``)."""
        lo, hi = self.interval
        width = hi - lo
        if self.metric == "both":
            lo_w, hi_w = wilson_interval(self.wins, self.n, self.confidence)
            width = max(width, hi_w - lo_w)
        return width

    @property
    def should_stop(self) -> bool:
        return self.n >= self.min_n and self.width <= self.target_width

    def summary(self) -> dict:
        """What to report: counts, rates, the interval reached, and whether the target was met."""
        judged = self.n or float("nan")
        return {
            "n": self.n + self.n_failed,
            "n_judged": self.n,
            "n_failed": self.n_failed,
            "win_rate": self.wins / judged,
            "win_tie_rate": (self.wins + self.ties) / judged,
            "win_rate_wilson": list(wilson_interval(self.wins, self.n, self.confidence)),
            "win_tie_rate_wilson": list(wilson_interval(self.wins + self.ties, self.n, self.confidence)),
            "width": self.width,
            "target_width": self.target_width,
            "metric": self.metric,
            "confidence": self.confidence,
            "min_n": self.min_n,
            "stopped_early": self.should_stop,
        }


def pair_schedule(
    ids: Sequence[str], domains: Sequence[str | None] | None, sample: int | None = None, seed: int = 0
) -> list[int]:
    """Positions of the pairs to judge, in the order to judge them (see :func:`stratified_sample`).

    ``sample=None`` keeps every pair, in a seeded stratified order (every prefix keeps each
    domain near its share, so stopping early does not skew the domain mix). Without domains
    (``None``, or any missing) the pairs form one stratum: a seeded order independent of the
    input order.

    >>> pair_schedule(["a", "b", "c", "d"], ["x", "x", "y", "y"], sample=2, seed=0)
    [0, 3]
    """
    ids = list(ids)
    check_int("sample", sample, minimum=1, optional=True, hint="the number of pairs to judge; None for all")
    if domains is None or any(d is None for d in domains):
        strata = ["all"] * len(ids)
    else:
        strata = list(domains)
    chosen = stratified_sample(ids, strata, len(ids) if sample is None else sample, seed)
    position = {qid: i for i, qid in enumerate(ids)}
    return [position[qid] for qid in chosen]
