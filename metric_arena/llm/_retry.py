"""Retries and the first contact with a server: the declarative retry policy, and the fail-fast state of
one backend (has anything got through yet, since when, what failed) that stops a run against a server
that is not there, within a stated bound."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from metric_arena.llm._types import Backend, ServerUnreachable, TransientBackendError

__all__ = ["FIRST_REPLY_GRACE", "FirstContact", "RetryPolicy", "within"]

#: While nothing got through to a backend, an attempt in flight is waited for at most this long past the
#: fail-fast window (or the window's own length, when longer): a first reply may be slow, a hung server not.
FIRST_REPLY_GRACE = 5.0


@dataclass(frozen=True)
class RetryPolicy:
    """Declarative retries of transient errors: wait ``initial * multiplier**n`` seconds (capped
    at ``max_wait``, with ``jitter`` as a random fraction added), or the server's ``Retry-After``
    when it sends one (capped at ``max_retry_after``); give up after ``max_retries`` retries.

    Fail fast: while nothing has got through to a backend yet, its failed attempts (connection
    errors, timeouts, 429, 5xx) stop the whole run with :class:`ServerUnreachable` once
    ``fail_fast_after`` seconds have passed since its first attempt (backoff waits are shortened
    to end there). After the first reply the policy above applies. ``None`` turns this off."""

    max_retries: int = 8
    initial: float = 1.0
    multiplier: float = 2.0
    max_wait: float = 60.0
    jitter: float = 0.25
    max_retry_after: float = 300.0
    fail_fast_after: float | None = 20.0

    def wait(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(0.0, retry_after), self.max_retry_after)
        base = min(self.max_wait, self.initial * self.multiplier**retry)
        return base * (1.0 + self.jitter * random.random())


@dataclass
class FirstContact:
    """Whether anything got through to one backend yet, since when it is tried, what failed."""

    first: float | None = None
    reached: bool = False
    failures: Counter = field(default_factory=Counter)
    flying: dict = field(default_factory=dict)  # attempts in flight: token -> when each started

    def unreachable(self, backend: Backend, failure: TransientBackendError, window: float | None):
        """A :class:`ServerUnreachable` when nothing got through within ``window`` seconds, else None.
        An attempt in flight since before the window ended may still succeed (a slow first reply
        while others get 503): while there is one, the run goes on, at most until :meth:`cutoff`."""
        if self.reached or window is None:
            return None
        self.failures[failure.kind] += 1
        deadline = (self.first or 0.0) + window
        elapsed = time.monotonic() - (self.first or 0.0)
        if elapsed < window or any(start < deadline for start in self.flying.values()):
            return None
        kinds = ", ".join(f"{kind} x{count}" for kind, count in self.failures.most_common())
        if set(self.failures) == {"429"}:
            asked = f" and asks to wait {failure.retry_after:.0f} s" if failure.retry_after else ""
            return ServerUnreachable(f"{backend.spec} answered only 429 (rate limited){asked} for {elapsed:.0f} s "
                                     f"({sum(self.failures.values())} attempts): try again later, or lower --rpm/--tpm")
        return ServerUnreachable(f"nothing got through to {backend.spec} in {elapsed:.0f} s "
                                 f"({sum(self.failures.values())} attempts failed: {kinds}). Last error: {failure}")

    def cutoff(self, window: float | None) -> float | None:
        """While nothing got through: how long an attempt may still wait for its reply (a server that
        accepts and never answers ends the run at ``first + window + max(window, 5 s)``, not at the
        attempt's own timeout); None once the backend answered, or without a window."""
        if self.reached or window is None or self.first is None:
            return None
        return max(0.0, self.first + window + max(window, FIRST_REPLY_GRACE) - time.monotonic())

    def wait(self, wait: float, failure: TransientBackendError, window: float | None) -> float:
        """A backoff wait shortened to end with the fail-fast window, a ``Retry-After`` too: before the
        first reply, a long ``Retry-After`` would hold the run past the window it promises."""
        if self.reached or window is None:
            return wait
        return min(wait, max(0.0, (self.first or 0.0) + window - time.monotonic()) + 0.05)


async def within(coroutine, seconds: float | None):
    """``await coroutine``, given up after ``seconds`` (a timeout, retried like one); no limit with None.
    When the run stops while the attempt ends with an error, that error is seen here, never printed as
    "Task exception was never retrieved"."""
    if seconds is None:
        return await coroutine
    task = asyncio.ensure_future(coroutine)
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
    try:
        return await asyncio.wait_for(task, timeout=seconds)
    except asyncio.TimeoutError:
        raise TransientBackendError(f"no reply within {seconds:.0f} s while the server has not answered yet",
                                    kind="timeout") from None


