"""Run many chat requests through the cache and a backend, concurrently, with retries.

For each request the runner

1. answers from the cache when a valid completion is stored under its key;
2. otherwise sends it (at most ``max_concurrency`` requests in flight, an optional rate limiter
   consulted first), retrying transient errors (429, 5xx, timeouts, dropped connections) with
   exponential backoff that honours ``Retry-After`` (:class:`RetryPolicy`);
3. checks the reply with ``validate`` (e.g. "holds exactly one valid rating") and stores it with
   that flag; an invalid reply (or an unusable body) is asked once more as a new request
   (``attempt`` 1 in the cache key, same messages), up to ``reask`` times;
4. stops everything at once on :class:`AuthenticationFailed` / :class:`ModelNotFound`.

Backends that batch on a device (``backend.batched``: hf, vllm) receive the concurrent requests
grouped into :meth:`~metric_arena.llm._specs.Backend.complete_many` calls of up to
``backend.batch_size`` requests, one call at a time; ``max_concurrency`` limits network backends.
Every error is counted by kind in :attr:`Runner.errors` (``"429"``, ``"500"``, ``"timeout"``,
``"connection"``, ``"malformed"``, ``"empty_choices"``, ``"invalid_reply"``...).

>>> import tempfile
>>> from metric_arena.llm import ChatRequest, make_backend
>>> runner = Runner(CompletionCache(tempfile.mkdtemp()), max_concurrency=32)  # doctest: +SKIP
>>> result = await runner.run_one(make_backend("openai:gpt-4o-mini"), ChatRequest([...]))  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lfrqa.errors import RagQaArenaError
from metric_arena.llm._cache import CompletionCache, cache_key
from metric_arena.llm._ratelimit import estimate_tokens
from metric_arena.llm._types import (
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    TransientBackendError,
)

__all__ = ["FatalBackendError", "RequestResult", "RetryPolicy", "Progress", "Runner", "gather_or_cancel", "run_sync",
           "run_until_stopped"]

FatalBackendError = (AuthenticationFailed, ModelNotFound)


@dataclass(frozen=True)
class RetryPolicy:
    """Declarative retries of transient errors: wait ``initial * multiplier**n`` seconds (capped
    at ``max_wait``, with ``jitter`` as a random fraction added), or the server's ``Retry-After``
    when it sends one (capped at ``max_retry_after``); give up after ``max_retries`` retries."""

    max_retries: int = 8
    initial: float = 1.0
    multiplier: float = 2.0
    max_wait: float = 60.0
    jitter: float = 0.25
    max_retry_after: float = 300.0

    def wait(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(0.0, retry_after), self.max_retry_after)
        base = min(self.max_wait, self.initial * self.multiplier**retry)
        return base * (1.0 + self.jitter * random.random())


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


@dataclass
class _Batcher:
    """Groups concurrent requests to one batched backend into ``complete_many`` calls."""

    backend: Backend
    batch_size: int
    gather_wait: float = 0.005
    pending: list = field(default_factory=list)
    worker: asyncio.Task | None = None

    async def submit(self, request: ChatRequest) -> Completion:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((request, future))
        if self.worker is None or self.worker.done():
            self.worker = asyncio.ensure_future(self._work())
        return await future

    async def _work(self) -> None:
        while self.pending:
            if len(self.pending) < self.batch_size:
                await asyncio.sleep(self.gather_wait)  # let concurrent callers join the batch
            batch, self.pending = self.pending[: self.batch_size], self.pending[self.batch_size :]
            live = [(r, f) for r, f in batch if not f.done()]
            if not live:
                continue
            try:
                completions = await self.backend.complete_many([r for r, _ in live])
            except BaseException as error:  # noqa: BLE001 - handed to every waiting caller
                for _, future in live:
                    if not future.done():
                        future.set_exception(error)
                if isinstance(error, asyncio.CancelledError):
                    raise
                continue
            for (_, future), completion in zip(live, completions):
                if future.done():
                    continue
                if isinstance(completion, BaseException):  # this request alone was refused
                    future.set_exception(completion)
                else:
                    future.set_result(completion)


class Runner:
    """Shared state of one run: cache, concurrency limit, retry policy, limiter, error counters."""

    def __init__(
        self,
        cache: CompletionCache | None = None,
        *,
        max_concurrency: int = 16,
        retry: RetryPolicy | None = None,
        limiter=None,
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
        self._semaphore: asyncio.Semaphore | None = None
        self._batchers: dict[int, _Batcher] = {}
        self._fatal: BaseException | None = None

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
        (``reask=0``: the first reply, cached or new, is the answer even when invalid)."""
        identity = backend.identity()
        last: Completion | None = None
        last_cached = False
        error: str | None = None
        attempts = 0
        for attempt in range(int(reask) + 1):
            attempts = attempt + 1
            key = cache_key(identity, request, attempt)
            entry = self.cache.get(key) if self.cache is not None else None
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
            if entry is None and attempt < reask and self.cache is not None:
                # A previous run may have had an unusable body here (not cached) and a valid re-ask.
                for later in range(attempt + 1, int(reask) + 1):
                    found = self.cache.get(cache_key(identity, request, later))
                    if found is not None and found.valid:
                        self.n_cached += 1
                        return RequestResult(found.completion(), True, later + 1, True)
            try:
                completion = await self._send(backend, request)
            except BadReply as failure:
                self.errors[failure.kind] += 1
                error = str(failure)
                continue
            except (TransientBackendError, BackendError) as failure:
                if isinstance(failure, FatalBackendError):
                    raise
                # retries exhausted, or a non-retryable rejection (e.g. 400 context too long)
                return RequestResult(last, False, attempts, last_cached, error=str(failure))
            if completion.finish_reason == "length":
                self.errors["truncated"] += 1  # cut at max_tokens: the caller decides what it means
            valid = True if validate is None else bool(validate(completion))
            if self.cache is not None:
                self.cache.put(key, completion, valid=valid, backend=backend.spec)
            if valid:
                return RequestResult(completion, True, attempts, False)
            self.errors["invalid_reply"] += 1
            last, last_cached, error = completion, False, "invalid reply"
        return RequestResult(last, False, attempts, last_cached, error=error)

    async def _send(self, backend: Backend, request: ChatRequest) -> Completion:
        retry = 0
        while True:
            if self._fatal is not None:
                raise self._fatal
            wait = None
            # Device backends batch on their own (up to backend.batch_size per call): the
            # concurrency limit is for requests over the network.
            async with (contextlib.nullcontext() if backend.batched else self._sem()):
                if self._fatal is not None:
                    raise self._fatal
                if self.limiter is not None:
                    await self.limiter.acquire(estimate_tokens(request.messages, request.max_tokens))
                self.n_sent += 1
                try:
                    if backend.batched:
                        return await self._batcher(backend).submit(request)
                    return await backend.complete(request)
                except FatalBackendError as failure:
                    self.errors[failure.kind] += 1
                    self._fatal = failure
                    raise
                except TransientBackendError as failure:
                    self.errors[failure.kind] += 1
                    if retry >= self.retry.max_retries:
                        raise
                    wait = self.retry.wait(retry, failure.retry_after)
                    if failure.kind == "429" and self.limiter is not None and hasattr(self.limiter, "backoff"):
                        self.limiter.backoff(wait)
                except BadReply:
                    raise
                except BackendError as failure:
                    self.errors[failure.kind] += 1
                    raise
            retry += 1
            await asyncio.sleep(wait)  # outside the semaphore: others keep going

    def _batcher(self, backend: Backend) -> _Batcher:
        batcher = self._batchers.get(id(backend))
        if batcher is None:
            size = int(getattr(backend, "batch_size", 0) or self.max_concurrency)
            batcher = _Batcher(backend, max(1, size))
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
        return {"errors": dict(sorted(self.errors.items())), "n_sent": self.n_sent, "n_cached": self.n_cached}


async def gather_or_cancel(tasks: list[asyncio.Future]) -> list:
    """Like ``asyncio.gather`` but on the first exception cancel the other tasks, then raise it."""
    if not tasks:
        return []
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()
        return [task.result() for task in tasks]
    finally:
        pending = [task for task in tasks if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


async def run_until_stopped(
    work: Callable[[int], Awaitable[None]],
    schedule: Sequence[int],
    should_stop: Callable[[], bool],
    max_in_flight: int,
) -> int:
    """Run ``await work(i)`` for ``i`` in ``schedule``, at most ``max_in_flight`` at once, in order.

    No new item starts once ``should_stop()`` is true (checked before each start); items already
    running finish. The first exception cancels the rest and is raised. Returns how many started.
    """
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise RagQaArenaError(f"max_in_flight={max_in_flight!r} must be a positive int")
    items = iter(schedule)
    started = 0

    async def worker() -> None:
        nonlocal started
        while not should_stop():
            index = next(items, None)
            if index is None:
                return
            started += 1
            await work(index)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(max_in_flight, len(schedule)) or 1)]
    try:
        done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()
    finally:
        pending = [task for task in workers if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    return started


T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of ``coroutine``, run in a fresh event loop (in another thread when one runs here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict = {}

    def target() -> None:
        try:
            box["result"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


class Progress:
    """A rich progress bar for a run of many requests (failed and cached counts shown); off when not enabled."""

    def __init__(self, total: int, enabled: bool, description: str):
        self._progress = None
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]} · cached {task.fields[cached]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._task = self._progress.add_task(description, total=total, failed=0, cached=0)
        self._progress.start()
        self.failed = 0
        self.cached = 0

    def advance(self, failed: bool, cached: bool) -> None:
        if self._progress is None:
            return
        self.failed += int(failed)
        self.cached += int(cached)
        self._progress.update(self._task, advance=1, failed=self.failed, cached=self.cached)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
