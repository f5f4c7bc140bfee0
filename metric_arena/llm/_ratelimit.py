"""Client-side rate limiting: requests and tokens per minute, before the API says 429.

A tier-1 OpenAI key allows a few hundred requests and some tens of thousands of tokens per
minute. Sending faster only buys ``429 Too Many Requests`` and retry sleeps, so the request
runner calls ``await limiter.acquire(n_tokens)`` before each API request and this module makes
it wait just long enough.

How it works: one token bucket per limit (requests, tokens). A bucket refills continuously at
``limit / 60`` per second and holds at most ``burst_seconds`` worth of refill (default 1 s: the
API enforces per-minute limits over shorter windows too, so a full minute's burst at start-up
would itself draw 429s). Each ``acquire`` *reserves* its place at once, in call order, and then
sleeps until its reservation comes due (the "virtual scheduling" form of a token bucket), so

- it is fair: coroutines are served first come, first served, however many wait;
- it is cheap: one short computation under a lock, then a single ``asyncio.sleep``;
- a cancelled ``acquire`` gives its reservation back;
- :meth:`RateLimiter.backoff` (after a 429) pauses everyone, waiting coroutines included.

A request larger than the token bucket (``n_tokens > tpm * burst_seconds / 60``) is allowed
*alone*: it waits until the bucket is full, then goes, leaving the bucket in debt that later
requests wait out. It never deadlocks, and over any long window the rate stays at ``tpm``.

Count for ``n_tokens`` what the API counts: prompt tokens plus ``max_tokens``
(:func:`estimate_tokens` gives the API's own cheap estimate from the characters).

>>> import asyncio
>>> limiter = RateLimiter(rpm=600, tpm=None)      # 10 requests per second
>>> async def one():
...     await limiter.acquire(0)
>>> asyncio.run(one())
>>> limiter.acquired
1
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Iterable, Mapping

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError

__all__ = ["RateLimiter", "estimate_tokens"]


class _Bucket:
    """One limit as a virtual-scheduling token bucket (times from ``time.monotonic``).

    ``full_at`` is the moment the bucket will be full again if nothing else is taken; the
    level at time ``t`` is ``capacity - rate * (full_at - t)`` (negative = in debt).
    """

    __slots__ = ("capacity", "full_at", "rate")

    def __init__(self, per_minute: float, burst_seconds: float) -> None:
        self.rate = per_minute / 60.0  # units per second
        self.capacity = self.rate * burst_seconds
        self.full_at = -math.inf

    def earliest(self, amount: float, now: float) -> float:
        """First time at which ``amount`` (capped at the capacity) is in the bucket."""
        need = min(amount, self.capacity)
        return max(now, self.full_at - (self.capacity - need) / self.rate)

    def take(self, amount: float, at: float) -> None:
        self.full_at = max(self.full_at, at) + amount / self.rate

    def give_back(self, amount: float) -> None:
        self.full_at -= amount / self.rate


class RateLimiter:
    """Token-bucket limiter for requests per minute (``rpm``) and tokens per minute (``tpm``).

    Either limit may be ``None`` (not limited). ``burst_seconds`` sets how much may go at once
    after an idle spell: that many seconds' worth of each limit (default 1 s).

    Usage, with the request runner's ``limiter=`` hook::

        limiter = RateLimiter(rpm=500, tpm=30_000)
        await limiter.acquire(prompt_tokens + max_tokens)   # before each API call

    Attributes ``acquired`` (calls served) and ``waited_s`` (total seconds spent waiting)
    count what the limiter did; :meth:`backoff` pauses everyone after a 429.
    """

    def __init__(self, rpm: float | None, tpm: float | None, *, burst_seconds: float = 1.0) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value)
            ):
                raise RagQaArenaError(f"{name}={value!r} is not a positive number: give the per-minute limit of your key, or None for no limit")
        if not (isinstance(burst_seconds, (int, float)) and 0 < burst_seconds < math.inf):
            raise RagQaArenaError(f"burst_seconds={burst_seconds!r} must be a positive number of seconds (default 1.0)")
        self.rpm = rpm
        self.tpm = tpm
        self.burst_seconds = float(burst_seconds)
        self._requests = _Bucket(rpm, burst_seconds) if rpm is not None else None
        self._tokens = _Bucket(tpm, burst_seconds) if tpm is not None else None
        self._paused_until = -math.inf
        self._offset = 0.0  # total seconds of backoff() so far
        self._lock = threading.Lock()  # reservations are tiny; this also makes them thread-safe
        self.acquired = 0
        self.waited_s = 0.0

    def __repr__(self) -> str:
        return f"RateLimiter(rpm={self.rpm!r}, tpm={self.tpm!r}, burst_seconds={self.burst_seconds!r})"

    def _reserve(self, n_tokens: int) -> tuple[float, float]:
        """Book one request of ``n_tokens``; return (monotonic time it may go, pause offset then)."""
        check_int("n_tokens", n_tokens, minimum=0, hint="prompt tokens + max_tokens")
        if self.tpm is not None and n_tokens > self.tpm:
            raise RagQaArenaError(
                f"tpm={self.tpm:g} (--tpm) is smaller than one request ({n_tokens:,} tokens: prompt + max_tokens), "
                f"which would wait about {n_tokens / self.tpm:,.0f} minutes each: give your key's real limit (at "
                f"least {n_tokens:,}), or no --tpm")
        with self._lock:
            now = time.monotonic()
            go = max(now, self._paused_until)
            if self._requests is not None:
                go = max(go, self._requests.earliest(1, now))
            if self._tokens is not None and n_tokens:
                go = max(go, self._tokens.earliest(n_tokens, now))
            if self._requests is not None:
                self._requests.take(1, go)
            if self._tokens is not None and n_tokens:
                self._tokens.take(n_tokens, go)
            self.acquired += 1
            return go, self._offset

    def _cancel(self, n_tokens: int) -> None:
        with self._lock:
            if self._requests is not None:
                self._requests.give_back(1)
            if self._tokens is not None and n_tokens:
                self._tokens.give_back(n_tokens)
            self.acquired -= 1

    async def acquire(self, n_tokens: int = 0) -> None:
        """Wait until one more request of ``n_tokens`` tokens fits in both limits.

        Callers are served in call order. A request bigger than the token bucket goes alone
        once the bucket is full (see the module notes) instead of waiting forever.
        """
        go, offset = self._reserve(n_tokens)
        start = time.monotonic()
        try:
            while True:
                # A backoff() while we sleep moves our turn later by the pause it added.
                wait = go + (self._offset - offset) - time.monotonic()
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
        except asyncio.CancelledError:
            self._cancel(n_tokens)
            raise
        finally:
            self.waited_s += time.monotonic() - start

    def backoff(self, seconds: float) -> None:
        """Pause for ``seconds`` from now (e.g. a 429's ``Retry-After``): nothing goes before it ends.

        Requests already waiting keep their order and spacing, shifted later by the pause.
        """
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
            raise RagQaArenaError(f"seconds={seconds!r} must be a non-negative number")
        with self._lock:
            now = time.monotonic()
            self._paused_until = max(self._paused_until, now + seconds)
            self._offset += seconds
            for bucket in (self._requests, self._tokens):
                if bucket is not None:
                    bucket.full_at = max(bucket.full_at, now) + seconds


def estimate_tokens(messages: Iterable[Mapping], max_tokens: int) -> int:
    """Tokens a chat request counts against a tokens-per-minute limit, estimated cheaply.

    OpenAI's rate limiter counts roughly one token per 4 characters of the messages plus
    ``max_tokens``; this does the same (no tokenizer needed).

    >>> estimate_tokens([{"role": "user", "content": "x" * 400}], max_tokens=256)
    357
    """
    chars = 0
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, str):
            chars += len(content)
        else:  # a list of content parts
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, Mapping))
        chars += len(str(message.get("role", "")))
    return math.ceil(chars / 4) + int(max_tokens)
