"""Run many chat requests through the cache and a backend, concurrently, with retries.

For each request the runner

1. answers from the cache when a valid completion is stored under its key (checked again with
   ``validate``: a stored reply that fails it now is marked invalid and asked again);
2. otherwise sends it (at most ``max_concurrency`` requests in flight, an optional rate limiter
   consulted first), retrying transient errors (429, 5xx, timeouts, dropped connections) with
   exponential backoff that honours ``Retry-After`` (:class:`RetryPolicy`);
3. checks the reply with ``validate`` (e.g. "holds exactly one valid rating") and stores it with
   that flag; an invalid reply (or an unusable body) is asked once more as a new request
   (``attempt`` 1 in the cache key, same messages), up to ``reask`` times;
4. shares work with other runs on the same cache: each attempt first claims its key; while
   another live process holds the claim, this run waits for that answer instead of paying for it
   again (``n_shared`` counts them);
5. stops everything at once on :class:`AuthenticationFailed` / :class:`ModelNotFound`, and on
   :class:`ServerUnreachable` when nothing has got through to a backend for
   ``RetryPolicy.fail_fast_after`` seconds since its first attempt.

A reply longer than :func:`max_reply_chars` (32 characters per requested token, at least 4,096)
is checked whole (``validate``), then cut to that length for storage, keeping its beginning and its
last 1,024 characters (where a judge writes its rating), and flagged (``Completion.original_chars``,
counted as ``"oversized"``): one broken server cannot bloat a run folder or the cache, and a long
reply with its rating at the end still counts.

The cache is called through :meth:`CompletionCache.off_loop` (its own worker thread): a cache
busy with another process's write never blocks the event loop.

Backends that batch on a device (``backend.batched``: hf, vllm) receive the concurrent requests
grouped into :meth:`~metric_arena.llm._specs.Backend.complete_many` calls of up to
``backend.batch_size`` requests, one call at a time; ``max_concurrency`` limits network backends.
Every error is counted by kind in :attr:`Runner.errors` (``"429"``, ``"500"``, ``"timeout"``,
``"connection"``, ``"malformed"``, ``"empty_choices"``, ``"invalid_reply"``, ``"oversized"``...).

>>> import tempfile
>>> from metric_arena.llm import ChatRequest, make_backend
>>> runner = Runner(CompletionCache(tempfile.mkdtemp()), max_concurrency=32)  # doctest: +SKIP
>>> result = await runner.run_one(make_backend("openai:gpt-4o-mini"), ChatRequest([...]))  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

from lfrqa.errors import RagQaArenaError
from metric_arena.llm._cache import CompletionCache, cache_keys, claim_owner
from metric_arena.llm._ratelimit import estimate_tokens
from metric_arena.llm._retry import FirstContact, RetryPolicy, within
from metric_arena.llm._tasks import Batcher, gather_or_cancel
from metric_arena.llm._types import (
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    ServerUnreachable,
    TransientBackendError,
)

__all__ = ["FatalBackendError", "RequestResult", "RetryPolicy", "Runner", "max_reply_chars"]

FatalBackendError = (AuthenticationFailed, ModelNotFound, ServerUnreachable)
#: What is kept of a reply: 32 characters per requested token, and at least 4,096 (a 256-token
#: judgment keeps 8,192). A longer reply keeps its beginning and its last :data:`KEPT_TAIL_CHARS`
#: characters (where a judge's rating is), joined by :data:`CUT_MARK`, and is flagged (``original_chars``).
KEPT_CHARS_PER_TOKEN = 32
MIN_KEPT_CHARS = 4096
KEPT_TAIL_CHARS = 1024
#: Between the kept beginning and end of a cut reply: no digit and no tag, so no parser reads it as a rating.
CUT_MARK = "\n[…]\n"
#: Requests in flight at once unless a RunConfig says otherwise (the one definition; RunConfig and the CLI use it).
DEFAULT_MAX_CONCURRENCY = 16
#: Seconds between looks at the cache while another run sends the same request (jittered).
CLAIM_POLL = 0.2


def max_reply_chars(max_tokens: int) -> int:
    """The longest reply kept for a request of ``max_tokens`` tokens, in characters."""
    return max(MIN_KEPT_CHARS, KEPT_CHARS_PER_TOKEN * int(max_tokens))


@dataclass
class RequestResult:
    """What became of one request.

    ``completion`` is the last reply received (None if every attempt failed without one);
    ``valid`` tells whether it passed ``validate``; ``attempts`` counts the attempts made at a
    valid reply (1, or 2 after a re-ask), cached ones included; ``cached`` is True when the
    returned completion came from the cache; ``error`` describes the last failure.
    """

    completion: Completion | None
    valid: bool
    attempts: int
    cached: bool
    error: str | None = None

    @property
    def text(self) -> str | None:
        return None if self.completion is None else self.completion.text


def _claimed_unanswered(cache: CompletionCache, key: str, owner: str, ttl: float) -> bool:
    """Claim ``key`` (on the cache's thread): True when this owner holds it and no valid answer is stored."""
    if not cache.claim(key, owner, ttl):
        return False
    found = cache.get(key)
    return found is None or not found.valid


def _claimed_at(cache: CompletionCache, key: str, owner: str, ttl: float) -> float | bool:
    """As :func:`_claimed_unanswered`, the claim's time (``time.monotonic()``) when it was made."""
    return _claimed_unanswered(cache, key, owner, ttl) and time.monotonic()


class _Busy(Exception):
    """Another process is sending this request right now (it holds the key's claim in the cache)."""


class Runner:
    """Shared state of one run: cache, concurrency limit, retry policy, limiter, error counters."""

    def __init__(
        self,
        cache: CompletionCache | None = None,
        *,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        retry: RetryPolicy | None = None,
        limiter=None,
        deadline: float | None = None,
        slots: asyncio.Semaphore | None = None,
    ):
        if int(max_concurrency) < 1:
            raise RagQaArenaError(f"max_concurrency must be >= 1, got {max_concurrency!r}")
        self.cache = cache
        self.max_concurrency = int(max_concurrency)
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self.errors: Counter = Counter()
        self.n_sent = 0  # HTTP/device requests made (retries included)
        self.n_cached = 0  # requests answered from the cache
        self.n_shared = 0  # of which answered by another run that was sending them at the same time
        self._owner = claim_owner()
        self._semaphore: asyncio.Semaphore | None = slots  # slots shared with other runners (a RequestPool)
        self._batchers: dict[int, Batcher] = {}
        self._reach: dict[int, FirstContact] = {}
        self._fatal: BaseException | None = None
        # A run's deadline counts from the runner's making (the session's start).
        self.deadline = deadline
        self._ends = None if deadline is None else time.monotonic() + float(deadline)

    def _sem(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._semaphore

    async def run_one(
        self,
        backend: Backend,
        request: ChatRequest,
        *,
        validate: Callable[[Completion], bool] | None = None,
        reask: int = 1,
    ) -> RequestResult:
        """Answer one request (cache first), re-asking up to ``reask`` times after an invalid reply
        (``reask=0``: the first reply, cached or new, is the answer even when invalid). With a
        deadline, a request still unanswered when it passes fails (counted as ``"deadline"``)."""
        if self._ends is None:
            return await self._run_one(backend, request, validate, reask)
        task = asyncio.ensure_future(self._run_one(backend, request, validate, reask))
        # When the run stops (a fatal error elsewhere cancels this wait), the request's own error, if it
        # ended with one at that moment, is seen here rather than printed as "never retrieved".
        task.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            return await asyncio.wait_for(task, max(0.0, self._ends - time.monotonic()))
        except asyncio.TimeoutError:
            self.errors["deadline"] += 1
            return RequestResult(None, False, 1, False,
                                 error=f"no answer within the run's deadline of {self.deadline:g} s")

    async def _run_one(self, backend: Backend, request: ChatRequest, validate, reask: int) -> RequestResult:
        last: Completion | None = None
        last_cached = False
        error: str | None = None
        attempts = 0
        # (no cache: no keys, nothing to hash)
        if self.cache is not None:
            keys = cache_keys(backend.identity(), request, range(int(reask) + 1))
        else:
            keys = [None] * (int(reask) + 1)
        # Every attempt's stored entry and, when none is stored, the first attempt's claim: one trip to the cache's
        # thread (a fresh request then waits for its slot claimed already, and is sent at once).
        stored, first_claim = await self._read_and_claim(keys, backend) if self.cache is not None else ({}, None)
        for attempt in range(int(reask) + 1):
            attempts = attempt + 1
            key = keys[attempt]
            entry = await self._cached(key, validate, stored)
            if entry is not None and (entry.valid or reask == 0):
                # With no re-ask wanted (reask=0), the cached first reply is the answer, valid or not.
                self.n_cached += 1
                return RequestResult(entry.completion(), entry.valid, attempts, True,
                                     error=None if entry.valid else "invalid reply")
            if entry is not None and attempt < reask:
                # A previous run got an invalid reply here: go straight to the re-ask.
                self.n_cached += 1
                last, last_cached, error = entry.completion(), True, "invalid reply"
                continue
            if entry is None and attempt < reask:
                # A previous run may have had an unusable body here (not cached) and a valid re-ask.
                found = await self._cached_later(keys, attempt, validate, stored)
                if found is not None:
                    return found
            try:
                claim, first_claim = (first_claim, None) if attempt == 0 else (None, None)
                completion, valid, cached = await self._ask(backend, request, key, validate, claim)
            except BadReply as failure:
                self.errors[failure.kind] += 1
                error = str(failure)
                continue
            except (TransientBackendError, BackendError) as failure:
                if isinstance(failure, FatalBackendError):
                    raise
                # retries exhausted, or a non-retryable rejection (e.g. 400 context too long)
                return RequestResult(last, False, attempts, last_cached, error=str(failure))
            if valid:
                return RequestResult(completion, True, attempts, cached)
            if not cached:
                self.errors["invalid_reply"] += 1
            last, last_cached, error = completion, cached, "invalid reply"
        return RequestResult(last, False, attempts, last_cached, error=error)

    async def _ask(self, backend: Backend, request: ChatRequest, key: str, validate,
                   claim: float | bool | None = None) -> tuple[Completion, bool, bool]:
        """``(completion, valid, cached)`` for one attempt: the backend's reply, checked and stored, or
        the answer another process stored under ``key`` while it was sending the same request. ``claim``: the
        outcome of the claim on ``key`` when it was made already (:meth:`_read_and_claim`: when, or False); it is
        released here."""
        claimed = self.cache is not None
        released = False
        try:
            while True:
                try:
                    full = await self._send(backend, request, key if claimed else None, claim)
                    break
                except _Busy:
                    claim = None  # claimed again before the next try
                    entry = await self._wait_for_other(key, validate)
                    if entry is not None:
                        self.n_cached += 1
                        self.n_shared += 1
                        return entry.completion(), entry.valid, True
            if full.finish_reason == "length":
                self.errors["truncated"] += 1  # cut at max_tokens: the caller decides what it means
            valid = True if validate is None else bool(validate(full))  # the whole reply, before any cut
            completion = self._kept(full, request)
            if self.cache is not None:
                cache, owner = self.cache, self._owner

                def store() -> None:  # one trip to the cache's thread: store the answer, drop the claim
                    cache.store(key, completion, valid=valid, owner=owner, backend=backend.spec)

                released = True
                await cache.off_loop(store)
            return completion, valid, False
        finally:
            if claimed and not released:
                await self.cache.off_loop(self.cache.release, key, self._owner)

    async def _wait_for_other(self, key: str, validate):
        """While another live process holds the claim on ``key``: its stored entry (a valid one at
        once; an invalid one it stored once its claim is gone), or None when the claim is gone
        without a new answer (then this run sends the request itself)."""
        before = await self.cache.off_loop(self.cache.get, key)
        while True:
            entry = await self._cached(key, validate)
            if entry is not None and entry.valid:
                return entry
            if not await self.cache.off_loop(self.cache.claimed, key, self._owner):
                return entry if entry is not None and entry != before else None
            await asyncio.sleep(CLAIM_POLL * (0.5 + random.random()))
            if self._fatal is not None:
                raise self._fatal

    async def _cached(self, key: str, validate: Callable[[Completion], bool] | None, stored: dict | None = None):
        """The cache entry under ``key`` (from ``stored``, read ahead, when given), its validity checked again: a
        row stored as valid whose reply fails ``validate`` now is marked invalid, so it is asked again instead
        of failing forever."""
        if stored is not None:
            entry = stored.get(key)
        else:
            entry = await self.cache.off_loop(self.cache.get, key) if self.cache is not None else None
        if entry is not None and entry.valid and validate is not None and not validate(entry.completion()):
            await self.cache.off_loop(self.cache.mark_invalid, key)
            self.errors["invalid_cached"] += 1
            entry = replace(entry, valid=False)
        return entry

    async def _cached_later(self, keys: list[str], attempt: int, validate, stored: dict):
        for later in range(attempt + 1, len(keys)):
            found = await self._cached(keys[later], validate, stored)
            if found is not None and found.valid:
                self.n_cached += 1
                return RequestResult(found.completion(), True, later + 1, True)
        return None

    def _kept(self, completion: Completion, request: ChatRequest) -> Completion:
        """``completion`` cut to :func:`max_reply_chars` (and flagged) when the reply is longer: its
        beginning and its last :data:`KEPT_TAIL_CHARS` characters, joined by :data:`CUT_MARK`."""
        cap = max_reply_chars(request.max_tokens)
        text = completion.text
        if len(text) <= cap:
            return completion
        self.errors["oversized"] += 1
        tail = min(KEPT_TAIL_CHARS, cap // 4)
        kept = text[: cap - tail - len(CUT_MARK)] + CUT_MARK + text[-tail:]
        return replace(completion, text=kept, original_chars=len(text))

    async def _send(self, backend: Backend, request: ChatRequest, key: str | None = None,
                    claim: float | bool | None = None) -> Completion:
        """The backend's reply, after retries; with ``key``, each attempt first claims it in the cache
        (:class:`_Busy` when another process is sending the same request right now), the first one unless
        ``claim`` says how its claim, made already, went (False: busy; a time: held since then, claimed again
        when half its life went by waiting for a slot)."""
        retry = 0
        reach = self._reach.setdefault(id(backend), FirstContact())
        window = self.retry.fail_fast_after
        while True:
            if self._fatal is not None:
                raise self._fatal
            if claim is False:
                raise _Busy  # (before waiting for a slot)
            wait = None
            # Device backends batch on their own (up to backend.batch_size per call): the
            # concurrency limit is for requests over the network.
            async with (contextlib.nullcontext() if backend.batched else self._sem()):
                if self._fatal is not None:
                    raise self._fatal
                fresh = bool(claim) and time.monotonic() - claim < self._claim_ttl(backend) / 2
                if key is not None and not fresh and not await self._claim(key, backend):
                    raise _Busy
                claim = None  # a retry claims again (renewing the claim)
                if self.limiter is not None:
                    await self.limiter.acquire(estimate_tokens(request.messages, request.max_tokens))
                self.n_sent += 1
                if reach.first is None:
                    reach.first = time.monotonic()
                token = object()
                reach.flying[token] = time.monotonic()
                try:
                    try:
                        if backend.batched:
                            completion = await self._batcher(backend).submit(request)
                        else:
                            completion = await within(backend.complete(request), reach.cutoff(window))
                    finally:
                        del reach.flying[token]
                    reach.reached = True
                    return completion
                except FatalBackendError as failure:
                    self.errors[failure.kind] += 1
                    self._fatal = failure
                    raise
                except TransientBackendError as failure:
                    self.errors[failure.kind] += 1
                    fatal = reach.unreachable(backend, failure, window)
                    if fatal is not None:
                        self._fatal = fatal
                        raise fatal from None
                    if retry >= self.retry.max_retries:
                        raise
                    wait = reach.wait(self.retry.wait(retry, failure.retry_after), failure, window)
                    if failure.kind == "429" and self.limiter is not None and hasattr(self.limiter, "backoff"):
                        self.limiter.backoff(wait)
                except BadReply:
                    reach.reached = True  # the server answered (an unusable body): it is there
                    raise
                except BackendError as failure:
                    reach.reached = True  # the server answered (e.g. 400): it is there
                    self.errors[failure.kind] += 1
                    raise
            retry += 1
            await asyncio.sleep(wait)  # outside the semaphore: others keep going

    async def _claim(self, key: str, backend: Backend) -> bool:
        """Claim ``key`` before sending it: False when another process is sending it, or has just
        stored a valid answer under it (then there is nothing to send). One call on the cache's thread."""
        cache, owner, ttl = self.cache, self._owner, self._claim_ttl(backend)
        return await cache.off_loop(lambda: _claimed_unanswered(cache, key, owner, ttl))

    async def _read_and_claim(self, keys: list[str], backend: Backend) -> tuple[dict, float | bool | None]:
        """The entries stored under ``keys`` and, when there are none, the first key's claim (as
        :meth:`_claim`, its time when made; None when not tried): one call on the cache's thread. Cancelled while it runs, the
        claim it may have made is released (after it, on the same thread)."""
        cache, owner, ttl = self.cache, self._owner, self._claim_ttl(backend)

        def read_and_claim() -> tuple[dict, float | bool | None]:
            found = cache.get_many(keys)
            return (found, None) if found else (found, _claimed_at(cache, keys[0], owner, ttl))

        try:
            return await cache.off_loop(read_and_claim)
        except BaseException:
            with contextlib.suppress(Exception):
                await cache.off_loop(cache.release, keys[0], owner)
            raise

    def _claim_ttl(self, backend: Backend) -> float:
        """A claim lasts one attempt (the backend's timeout), the longest backoff and a margin; it is made
        before the request waits for a slot (at most the requests in flight before it)."""
        return float(getattr(backend, "timeout", None) or 120.0) + self.retry.max_wait + 30.0

    def _batcher(self, backend: Backend) -> Batcher:
        batcher = self._batchers.get(id(backend))
        if batcher is None:
            size = int(getattr(backend, "batch_size", 0) or self.max_concurrency)
            batcher = Batcher(backend, max(1, size))
            self._batchers[id(backend)] = batcher
        return batcher

    async def run_many(
        self,
        backend: Backend,
        requests: list[ChatRequest],
        *,
        validate: Callable[[Completion], bool] | None = None,
        reask: int = 1,
    ) -> list[RequestResult]:
        """Answer all requests concurrently, in input order; a fatal error cancels the rest."""
        tasks = [asyncio.ensure_future(self.run_one(backend, r, validate=validate, reask=reask)) for r in requests]
        return await gather_or_cancel(tasks)

    def refuse(self, reason: str) -> RequestResult:
        """The result of a request that is not sent (e.g. over the input budget), counted as ``over_budget``."""
        self.errors["over_budget"] += 1
        return RequestResult(None, False, 0, False, error=reason)

    def counters(self) -> dict:
        return {"errors": dict(sorted(self.errors.items())), "n_sent": self.n_sent, "n_cached": self.n_cached,
                "n_shared": self.n_shared}
