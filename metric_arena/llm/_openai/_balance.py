"""Which replica of one judge takes the next request: the one expected to answer first, from running estimates
of each replica's speed, with replicas that fail kept out on a growing back-off until they answer cleanly."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

__all__ = ["Balancer"]


class Balancer:
    """Routes each attempt to the replica with the earliest expected completion: a running estimate of its
    latency at the load it would have, ``mean + slope × (requests in flight + 1 − mean load)``, from an
    exponentially weighted line through (requests in flight when sent, latency) of its answers. A server that
    queues has latency ∝ load, so this is its latency estimate × (in flight + 1); one that answers many at once
    has a flat line, and its load counts ``MIN_SLOPE`` of its latency per request in flight (no server is
    perfectly parallel). Replicas expected within ``TOLERANCE`` of the earliest count as equal and take turns
    by load (equal replicas share the load, whatever the noise of their estimates). A replica with no answer
    yet fitted (its first ``WARM_UP`` answers, which carry the connections' set-up, are not) counts as the
    fastest known, one request in flight at a time once another replica is fitted (before, all take turns). A replica not sent to for ``PROBE_EVERY`` seconds gets the next request, so a slow one that became
    fast is noticed. A replica's expected completion is divided by its recent success rate (1 − ``error_rate``):
    the time to an answer, failed attempts counted.

    The few attempts that explore are :meth:`doubtful`: at a replica not fitted yet, once one runs ``HEDGE_AFTER``
    × the mean latency of the best other replica's answers, a copy goes there (:meth:`backup`); a probe, and an attempt
    at a replica on probation, is a shadow: its copy at the best one goes at once, so exploring holds up no
    request. So is an attempt at a replica not heard from while none is fitted (a cold start: the first wave goes
    out before any replica has answered, and each of its requests gets ``COLD_COPIES`` copies at other replicas,
    the least loaded, so that one slow and one failing replica together hold up none of them). The first answer
    is kept, the other attempts cancelled; a cancelled one counts as taking at least as long as it ran (:meth:`overtaken`), so a slow replica is known as slow without waiting for its answers; when
    one attempt fails, the other carries the request on, with a copy at once if it explores.

    A replica that fails (connection, timeout, 5xx) is out for ``OUT_FOR`` seconds, twice as long after each
    further failure (up to ``MAX_OUT_FOR``); back, it is on probation: at most 1 + (answers in a row) requests in
    flight (answers to attempts sent before the failure not counted), and a failure sends it out for the next, longer
    back-off. Only ``CLEAN_AFTER`` answers in a row clear
    its record (one answer no longer does). When every replica is out, the one back soonest is tried. A replica
    :meth:`flag`-ged (it replied as another model) is out for good.

    Counts per replica: ``attempts`` (requests sent), ``served`` (answers used), ``failures`` (failed attempts),
    ``retries`` (attempts that carried on a request that had just failed at another replica: sent after the
    failure, or the copy of a hedge already running), ``hedges`` (copies sent there), ``discarded`` (answers of a
    flagged replica), ``latency_sum`` and ``timed`` (seconds and number of answered attempts) and ``error_rate``
    (weighted recent share of failed attempts)."""

    OUT_FOR = 2.0
    MAX_OUT_FOR = 60.0
    CLEAN_AFTER = 20
    SMOOTHING = 0.1
    MIN_SLOPE = 0.02
    TOLERANCE = 0.25
    WARM_UP = 4
    PROBE_EVERY = 30.0
    HEDGE_AFTER = 1.25  # (1 + TOLERANCE: an attempt at a replica as fast runs a little longer than its mean, at times)
    COLD_COPIES = 2  # copies of an attempt in a cold start, at other replicas: up to three attempts a request
    LOST_AFTER = 16  # races lost, none won: a replica is presumed PRESUMED × as slow as the best (an equal one
    # loses 16 in a row with a chance of 1 in 65,536 against one other, 1 in 660 against two)
    PRESUMED = 4.0  # (well out of TOLERANCE of the best, whose estimate drifts with its load)
    POLL = 0.005  # a doubtful attempt looks again after POLL s, then 1/64 of its age, while none is fitted

    def __init__(self, n: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.load = [0] * n
        self.attempts = [0] * n
        self.served = [0] * n
        self.failures = [0] * n
        self.retries = [0] * n
        self.hedges = [0] * n
        self.discarded = [0] * n
        self.latency_sum = [0.0] * n
        self.timed = [0] * n
        self.error_rate = [0.0] * n
        self.flagged: list[str | None] = [None] * n
        self.out_until = [0.0] * n
        self.strikes = [0] * n
        self.clean = [0] * n
        self.fit: list[list[float] | None] = [None] * n  # weighted means of load, latency, load², load × latency
        self.points = [0] * n  # (load, latency) points in the fit
        self.lost = [0] * n  # attempts overtaken by a copy before the replica's first answer
        self.last_sent = [clock()] * n
        self._turn = 0

    def flag(self, replica: int, why: str) -> None:
        """Take ``replica`` out for good (its answers are not used), recording ``why``."""
        self.flagged[replica] = self.flagged[replica] or why

    def line(self, replica: int) -> tuple[float, float, float] | None:
        """(mean load, mean latency, slope) of ``replica``'s answers, None before the first fitted one."""
        fit = self.fit[replica]
        if fit is None:
            return None
        x, y, xx, xy = fit
        var = xx - x * x
        slope = (xy - x * y) / var if var > 0.05 else 0.0
        return x, y, max(slope, self.MIN_SLOPE * y)

    def expected(self, replica: int) -> float:
        """When a request sent now to ``replica`` is expected to be answered, in seconds from now."""
        line = self.line(replica)
        if line is None:
            known = [fit[1] for fit in self.fit if fit is not None]
            y = min(known, default=1.0)
            line = (1.0, y, self.MIN_SLOPE * y)
        x, y, slope = line
        return max(y + slope * (self.load[replica] + 1 - x), 0.0) / max(1.0 - self.error_rate[replica], 0.05)

    def doubtful(self, replica: int) -> float | None:
        """How an attempt at ``replica`` explores, as the multiple of the best other replica's mean latency after
        which a copy goes there (:meth:`backup`); None when it does not explore. 0 (a copy at once at another
        replica) for one not heard from while no replica is fitted: a cold start, where a third of the first
        requests would otherwise wait on a slow replica or fail at a flaky one before either is known (at most
        the first wave is copied: ``COLD_COPIES`` copies per request in flight); also for one that never answered
        and lost the races it ran (until it wins one, or is presumed slower after ``LOST_AFTER``). ``HEDGE_AFTER``
        for another replica not fitted yet (its speed is learnt from how long it takes); 0 for one known slower than another
        beyond ``TOLERANCE`` (a probe, or the only one in service) and one on probation: a shadow, with a copy at
        the best one at once, so that no request waits on it."""
        if len(self.load) == 1:
            return None
        if self.strikes[replica]:
            return 0.0  # on probation, known or not
        line = self.line(replica)
        if line is None:
            if not self.timed[replica] and (self.cold() or self.lost[replica]):
                return 0.0  # a cold start's attempt, or one at a replica that lost every race it ran
            return self.HEDGE_AFTER
        known = [fit[1] for r, fit in enumerate(self.fit) if fit is not None and r != replica]
        return 0.0 if known and line[1] > min(known) * (1 + self.TOLERANCE) else None

    def cold(self) -> bool:
        """Whether no replica is fitted yet (a cold start: nothing known of their speeds)."""
        return all(fit is None for fit in self.fit)

    def backup(self, replica: int, sent: float, after: float,
               tried: Collection[int] = ()) -> tuple[float | None, int | None]:
        """For a doubtful attempt at ``replica`` sent at ``sent`` and not answered yet, hedged ``after`` × the
        best other replica's mean latency (:meth:`doubtful`): ``(0.0, other)`` to send a copy to ``other``
        (not one of ``tried``) now, ``(seconds, None)`` to ask again then, ``(None, None)`` never to hedge it.
        While no replica is fitted, a shadow's copy goes to the least loaded other one in service."""
        now = self.clock()
        usable = [r for r in range(len(self.load)) if r != replica and r not in tried and not self.strikes[r]
                  and self.flagged[r] is None and self.out_until[r] <= now]
        others = [r for r in usable if self.fit[r] is not None]
        if all(r == replica or r in tried for r in range(len(self.load))):
            return None, None  # every other replica has an attempt of this request already
        if not others:
            if after == 0.0 and usable and self.cold():
                return 0.0, min(usable, key=lambda r: self.load[r])  # a cold start's copy
            return max(self.POLL, (now - sent) / 64), None  # nothing known to hedge with yet: 64 looks a doubling
        best = min(others, key=self.expected)
        # how long its answers take (not at the load it would have): an attempt running ``after`` × as long is
        # likely answered sooner by a copy there
        typical = self.line(best)[1]
        line = self.line(replica)
        if after and line is not None and line[1] <= typical * (1 + self.TOLERANCE):
            return None, None  # known by now, and as fast as the best: no copy
        due = sent + after * typical
        return (0.0, best) if now >= due else (due - now, None)

    def overtaken(self, replica: int, token: tuple[float, int]) -> None:
        """The attempt of ``token`` is cancelled, a copy elsewhere having answered first: it took at least as long
        as it ran. That lower bound is fitted (warm-up or not) when it exceeds the replica's estimate, or, when it
        has none, when it shows it slower than the best other fitted replica beyond ``TOLERANCE`` (so a slow
        replica is known as slow without waiting for its answers); a lower one says nothing (a cold start's copy
        answering first says of the replica it overtook only that it was not faster). A replica that never
        answered and lost ``LOST_AFTER`` races is presumed slower than the best beyond ``TOLERANCE`` (fitted at
        ``PRESUMED`` × the best's latency): its attempts become shadows, and its own answers correct it."""
        sent, in_flight = token
        ran = max(self.clock() - sent, 0.0)
        line = self.line(replica)
        if line is not None:
            if ran > line[1]:
                self._fit(replica, in_flight, ran)
            return
        self.lost[replica] += not self.timed[replica]
        known = [fit[1] for r, fit in enumerate(self.fit) if fit is not None and r != replica]
        if known and ran > min(known) * (1 + self.TOLERANCE):
            self._fit(replica, in_flight, ran)
        elif known and self.lost[replica] >= self.LOST_AFTER and not self.timed[replica]:
            self._fit(replica, in_flight, min(known) * self.PRESUMED)  # presumed slower than the best

    def order(self) -> list[int]:
        """The replicas to try for one attempt, best first: those in service by expected completion (a replica
        not tried for ``PROBE_EVERY`` seconds first), then the one out that is back soonest (never a flagged
        one)."""
        n = len(self.load)
        if n == 1:  # one replica: it, unless flagged (what the ordering below gives, without its cost)
            return [] if self.flagged[0] is not None else [0]
        now = self.clock()
        self._turn = (self._turn + 1) % n
        turns = [(self._turn + k) % n for k in range(n) if self.flagged[(self._turn + k) % n] is None]
        cold = self.cold()  # nothing known yet: in turn
        up = [r for r in turns if self.out_until[r] <= now and (not self.strikes[r] or self.load[r] <= self.clean[r])
              and (cold or self.fit[r] is not None or not self.load[r])]
        down = sorted((r for r in turns if r not in up), key=lambda r: max(self.out_until[r], now))
        expected = {r: self.expected(r) for r in up}
        best = min(expected.values(), default=0.0) * (1 + self.TOLERANCE)
        # a stale replica first (a probe); then those within TOLERANCE of the best, least loaded first; the rest
        up.sort(key=lambda r: (now - self.last_sent[r] < self.PROBE_EVERY, expected[r] > best,
                               self.load[r] if expected[r] <= best else expected[r]))
        return up + down[:1] if up else down

    def started(self, replica: int, *, retry: bool = False) -> tuple[float, int]:
        """Count an attempt sent to ``replica``; the token :meth:`finished` takes."""
        self.load[replica] += 1
        self.attempts[replica] += 1
        self.retries[replica] += retry
        self.last_sent[replica] = now = self.clock()
        return now, self.load[replica]

    def finished(self, replica: int, token: tuple[float, int], *, answered: bool) -> None:
        """The attempt of ``token`` is over; an answer updates the replica's speed estimate."""
        self.load[replica] -= 1
        if answered:
            sent, in_flight = token
            latency = max(self.clock() - sent, 0.0)
            self.latency_sum[replica] += latency
            self.timed[replica] += 1
            # the first answers carry the connections' set-up, not its speed; one replica has nothing to choose
            if self.timed[replica] > self.WARM_UP and len(self.load) > 1:
                self._fit(replica, in_flight, latency)

    def _fit(self, replica: int, in_flight: int, latency: float) -> None:
        point = (in_flight, latency, in_flight * in_flight, in_flight * latency)
        fit = self.fit[replica] or list(point)
        self.points[replica] += 1
        weight = max(self.SMOOTHING, 1 / self.points[replica])  # a plain mean of the first 1 / SMOOTHING points
        self.fit[replica] = [m + weight * (p - m) for m, p in zip(fit, point)]

    def answered(self, replica: int) -> None:
        self.served[replica] += 1
        self.error_rate[replica] *= 1 - self.SMOOTHING
        if self.strikes[replica]:
            self.clean[replica] += 1
            if self.clean[replica] >= self.CLEAN_AFTER:
                self.strikes[replica] = self.clean[replica] = 0

    def failed(self, replica: int) -> None:
        self.failures[replica] += 1
        self.error_rate[replica] += self.SMOOTHING * (1 - self.error_rate[replica])
        self.out_until[replica] = self.clock() + min(self.MAX_OUT_FOR, self.OUT_FOR * 2 ** self.strikes[replica])
        self.strikes[replica] += 1
        self.clean[replica] = min(0, 1 - self.load[replica])  # answers to attempts already in flight do not count as clean

    def figures(self, replica: int) -> dict:
        """What the run's summary records of ``replica``: requests sent, failed, retried, hedge copies, mean
        latency."""
        timed = self.timed[replica]
        return {"n_requests": self.attempts[replica], "n_failures": self.failures[replica],
                "n_retries": self.retries[replica], "n_hedges": self.hedges[replica],
                "mean_latency_s": round(self.latency_sum[replica] / timed, 4) if timed else None,
                "error_rate": round(self.error_rate[replica], 4)}
