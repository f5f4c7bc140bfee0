"""How a run's requests run (:class:`RunConfig`) and the one place their machinery lives (:class:`Session`).

Every entry point that sends requests (judge, generate, the tournament, the reward, the trainer
callback, the metric) takes one :class:`RunConfig` and opens one :class:`Session` with it: the
session builds the backends a spec names, opens the cache, makes the runner (concurrency, retries,
rate limiter) and the progress bars, and closes all of them when the ``async with`` block ends,
whatever happens inside. A backend handed in already built belongs to the caller: its network
connections are closed with the session (a client belongs to one event loop; it is made again on next
use), but a model it runs on this machine stays loaded (a judge kept across a training loop's calls).

>>> run = RunConfig(base_url="http://127.0.0.1:8000/v1", max_concurrency=32)
>>> run
RunConfig(base_url='http://127.0.0.1:8000/v1', timeout=None, max_concurrency=32, limiter=None, retry=None, cache_dir=None, use_cache=True, endpoint_name=None, deadline=None)
>>> async def main():                                                   # doctest: +SKIP
...     async with Session("openai:gpt-4o-mini", run) as session:
...         result = await session.runner.run_one(session.backends[0], ChatRequest([...]))
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TypeVar

from builders import shown_url
from lfrqa.checks import check_int
from lfrqa.errors import InvalidInputType
from metric_arena.llm._cache import CompletionCache
from metric_arena.llm._ratelimit import RateLimiter
from metric_arena.llm._runner import DEFAULT_MAX_CONCURRENCY, RequestResult, RetryPolicy, Runner
from metric_arena.llm._specs import make_backends, parse_spec
from metric_arena.llm._tasks import Progress, gather_or_cancel, run_until_stopped
from metric_arena.llm._tokens import encodings_loaded, load_encodings, make_budgets
from metric_arena.llm._types import OPENAI, Backend, ChatRequest, Completion

__all__ = ["Concurrency", "RequestPool", "RunConfig", "Session"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """How requests run: where they go, how many at once, how fast, how often retried, where cached.

    ``base_url``/``api_key`` reach openai backends (defaults ``$OPENAI_BASE_URL``/``$OPENAI_API_KEY``;
    the key is never shown in ``repr`` nor stored). Several URLs (a list) are replicas of one judge:
    requests go to the least-loaded one, a failing one is taken out and tried again later.
    ``endpoint_name``: what names the server in the cache key (default: the first URL), so replicas, and
    later runs on other servers of the same model, share answers. ``timeout``: seconds one attempt may take
    (openai backends). ``max_concurrency``: requests in flight at once (network backends).
    ``limiter``: a :class:`~metric_arena.RateLimiter` shared by every request of the run.
    ``retry``: a :class:`~metric_arena.RetryPolicy`. ``cache_dir``: the SQLite cache (default
    ``$RAG_QA_ARENA_CACHE`` or ``~/.cache/rag_qa_arena``); ``use_cache=False`` neither reads nor writes it.
    ``deadline``: seconds one run (one ``judge_pairs`` or ``generate_answers`` call, one reward call)
    may take in all; a request still unanswered then fails (counted as ``"deadline"``) and the run
    ends with what it has. None: no limit but the retries' own.
    """

    base_url: str | Sequence[str] | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float | None = None
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    limiter: RateLimiter | None = None
    retry: RetryPolicy | None = None
    cache_dir: str | os.PathLike | None = None
    use_cache: bool = True
    endpoint_name: str | None = None
    deadline: float | None = None

    def __repr__(self) -> str:  # the base URLs without credentials or query string (a gateway's key)
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        urls = shown["base_url"]
        shown["base_url"] = shown_url(urls) if urls is None or isinstance(urls, str) else [shown_url(u) for u in urls]
        return f"RunConfig({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    def __post_init__(self) -> None:
        if self.base_url is not None and not isinstance(self.base_url, str):
            urls = list(self.base_url) if isinstance(self.base_url, Sequence) else None
            if not urls or not all(isinstance(url, str) and url.strip() for url in urls):
                raise InvalidInputType(f"RunConfig(base_url={self.base_url!r}): give a URL, a non-empty list of "
                                       "URLs (replicas of one judge) or None")
            object.__setattr__(self, "base_url", urls[0] if len(urls) == 1 else tuple(urls))
        for name in ("api_key", "endpoint_name") + (("base_url",) if isinstance(self.base_url, str) else ()):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputType(f"RunConfig({name}={_shown(name, value)}): give a non-empty string or None")
        if self.timeout is not None and (isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float))
                                         or not math.isfinite(self.timeout) or self.timeout <= 0):
            raise InvalidInputType(f"RunConfig(timeout={self.timeout!r}): give a positive number of seconds or None")
        check_int("RunConfig(max_concurrency)", self.max_concurrency, minimum=1)
        if self.limiter is not None and not callable(getattr(self.limiter, "acquire", None)):
            raise InvalidInputType(f"RunConfig(limiter={self.limiter!r}): give a metric_arena.RateLimiter or None")
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):
            raise InvalidInputType(f"RunConfig(retry={self.retry!r}): give a metric_arena.RetryPolicy or None")
        if self.cache_dir is not None and not isinstance(self.cache_dir, (str, os.PathLike)):
            raise InvalidInputType(f"RunConfig(cache_dir={self.cache_dir!r}): give a folder path or None")
        if self.deadline is not None and (isinstance(self.deadline, bool) or not isinstance(self.deadline, (int, float))
                                          or not math.isfinite(self.deadline) or self.deadline <= 0):
            raise InvalidInputType(f"RunConfig(deadline={self.deadline!r}): give a positive number of seconds or None")
        if not isinstance(self.use_cache, bool):
            raise InvalidInputType(f"RunConfig(use_cache={self.use_cache!r}): give True or False")

    @property
    def first_url(self) -> str | None:
        """The one URL, or the first of the replicas (None: the default)."""
        return self.base_url if self.base_url is None or isinstance(self.base_url, str) else self.base_url[0]


def _shown(name: str, value) -> str:
    return "<hidden>" if name == "api_key" and isinstance(value, str) else repr(value)


class RequestPool:
    """One set of request slots for every :class:`Session` opened inside ``with pool:`` (in this task and
    the tasks it starts): many runs at once (a tournament's matches) share ``max_concurrency`` requests
    in flight, so no slot idles while any of them has work. Each session keeps its own counters.

    >>> async def main():                                                   # doctest: +SKIP
    ...     with Session.pool(max_concurrency=64) as pool:
    ...         await pool.gather([ajudge_pairs(...), ajudge_pairs(...)])   # 64 requests at once, in all
    """

    def __init__(self, *, max_concurrency: int) -> None:
        check_int("RequestPool(max_concurrency)", max_concurrency, minimum=1)
        self.max_concurrency = max_concurrency
        self.slots: asyncio.Semaphore | None = None
        self._token: contextvars.Token | None = None

    def __enter__(self) -> RequestPool:
        self.slots = asyncio.Semaphore(self.max_concurrency)
        self._token = _POOL.set(self)
        return self

    def __exit__(self, *exc_info) -> None:
        _POOL.reset(self._token)
        self._token = None

    async def gather(self, coroutines: Iterable[Awaitable[T]]) -> list[T]:
        """The results of all ``coroutines`` (runs sharing this pool), run at once; the first error cancels
        the rest and is raised."""
        return await gather_or_cancel([asyncio.ensure_future(c) for c in coroutines])


_POOL: contextvars.ContextVar[RequestPool | None] = contextvars.ContextVar("request_pool", default=None)


@dataclass(frozen=True)
class Concurrency:
    """How many requests one :class:`Session` has in flight, decided once when it opens: ``limit``, the
    ``RunConfig``'s ``max_concurrency``, or the pool's when it is smaller (``shared``: the pool's limit,
    which every session in it shares; None outside a pool); ``slots``, what each request holds while it
    runs (the session's own slots and, in a pool, one of the pool's). The runner, :meth:`Session.run_all`
    and :meth:`Session.run_until` read these, and nothing else."""

    limit: int
    shared: int | None
    slots: object = field(repr=False, compare=False)

    @staticmethod
    def resolve(run: RunConfig, pool: RequestPool | None) -> Concurrency:
        """The concurrency of a session of ``run`` opened inside ``pool`` (None: none)."""
        if pool is None:
            return Concurrency(run.max_concurrency, None, asyncio.Semaphore(run.max_concurrency))
        if run.max_concurrency >= pool.max_concurrency:
            return Concurrency(pool.max_concurrency, pool.max_concurrency, pool.slots)
        return Concurrency(run.max_concurrency, pool.max_concurrency,
                           _BothSlots(asyncio.Semaphore(run.max_concurrency), pool.slots))


class _BothSlots:
    """One of a session's own slots, then one of its pool's: a run asking for fewer requests in flight than
    its pool allows keeps to its own number, and holds no pool slot while it waits for one of its own."""

    def __init__(self, own: asyncio.Semaphore, shared: asyncio.Semaphore) -> None:
        self.own, self.shared = own, shared

    async def __aenter__(self) -> None:
        await self.own.acquire()
        try:
            await self.shared.acquire()
        except BaseException:
            self.own.release()
            raise

    async def __aexit__(self, *exc_info) -> None:
        self.shared.release()
        self.own.release()


class Session:
    """The machinery of one run, opened and closed together: backends, cache, runner, progress bars.

    ``models``: a ``"<backend>:<model>"`` spec, a built :class:`Backend`, or a list of them;
    ``options``: the backends' own settings (see :func:`~metric_arena.llm.make_backend`);
    ``max_input_tokens``: requests with a longer prompt are refused (failed, never truncated).
    Inside ``async with``, ``backends`` and ``runner`` are ready; :meth:`ask` answers one request,
    :meth:`gather` and :meth:`run_until` run many, :meth:`progress` makes a bar closed with the
    session. On leaving, the backends this session built are closed, and so are the network clients of
    those handed in (a local model handed in stays loaded); then the cache.
    """

    def __init__(self, models: str | Backend | Sequence[str | Backend], run: RunConfig | None = None, *,
                 options: Mapping | None = None, max_input_tokens: int | None = None) -> None:
        self.run = run if run is not None else RunConfig()
        if not isinstance(self.run, RunConfig):
            raise InvalidInputType(f"run={run!r}: give a metric_arena.RunConfig (or None for the defaults)")
        items = [models] if isinstance(models, (str, Backend)) else list(models)
        self.backends: list[Backend] = make_backends(items, base_url=self.run.base_url, api_key=self.run.api_key,
                                                     endpoint_name=self.run.endpoint_name,
                                                     timeout=self.run.timeout, options=options)
        self._owned = [backend for item, backend in zip(items, self.backends) if not isinstance(item, Backend)]
        self._budgets = make_budgets(self.backends, max_input_tokens)
        self._bars: list[Progress] = []
        self.runner: Runner | None = None
        self.concurrency: Concurrency | None = None  # decided when the session opens (Concurrency.resolve)

    @staticmethod
    def pool(*, max_concurrency: int) -> RequestPool:
        """One set of ``max_concurrency`` request slots for every session opened inside ``with
        Session.pool(...)`` (see :class:`RequestPool`): many runs at once share one concurrency limit."""
        return RequestPool(max_concurrency=max_concurrency)

    @staticmethod
    def preload(models: Sequence[str | Backend] = ()) -> None:
        """Load now what a session of ``models`` would load when it opens or sends its first request: the HTTP
        client of the network backends (aiohttp) and the token encodings replies are counted with (once per
        process). For code that opens sessions later, on a clock (a reward called by a trainer), so that its
        first call costs what the next ones do."""
        if any(isinstance(m, str) and parse_spec(m)[0] == OPENAI for m in models):
            import aiohttp  # noqa: F401 - what an openai backend posts with

        load_encodings()

    @property
    def specs(self) -> list[str]:
        return [backend.spec for backend in self.backends]

    def endpoints(self) -> dict:
        """``{spec: backend.endpoints()}`` for the backends that reach a server: the endpoint name and each
        replica's URL (no credentials), its counts, and whether it was taken out for naming another model."""
        return {b.spec: found for b in self.backends if (found := b.endpoints()) is not None}

    def progress(self, total: int, show: bool, description: str) -> Progress:
        """A progress bar of ``total`` steps (shown when ``show``), closed with the session."""
        bar = Progress(total, show, description)
        self._bars.append(bar)
        return bar

    async def ask(self, backend: Backend, request: ChatRequest, *,
                  validate: Callable[[Completion], bool] | None = None, reask: int = 1) -> RequestResult:
        """One request through the runner (cache first, retries, re-asks), or refused when its prompt
        is over ``max_input_tokens`` (counted as ``over_budget``)."""
        refusal = self._budgets[backend.spec].refusal(request) if self._budgets else None
        if refusal:
            return self.runner.refuse(refusal)
        return await self.runner.run_one(backend, request, validate=validate, reask=reask)

    async def gather(self, coroutines: Iterable[Awaitable[T]]) -> list[T]:
        """The results of all ``coroutines``, run concurrently; the first error cancels the rest."""
        return await gather_or_cancel([asyncio.ensure_future(c) for c in coroutines])

    async def run_all(self, work: Callable[[int], Awaitable[None]], schedule: Sequence[int]) -> None:
        """``work(i)`` for every ``i`` of ``schedule``, pulled in order by twice ``max_concurrency`` workers
        (so a request always waits for each slot that frees): only the items being worked on exist at
        once, however long the schedule (bounded memory). The first error cancels the rest."""
        await run_until_stopped(work, schedule, lambda: False, 2 * self.concurrency.limit)

    async def run_until(self, work: Callable[[int], Awaitable[None]], schedule: Sequence[int],
                        should_stop: Callable[[], bool]) -> None:
        """``work(i)`` for ``schedule`` in order, ``max_concurrency`` at a time, starting no new one
        once ``should_stop()`` is true (those in flight finish)."""
        await run_until_stopped(work, schedule, should_stop, self.concurrency.limit)

    async def __aenter__(self) -> Session:
        # What the replies' handling needs (the encodings of token counts) is loaded now, once per process and
        # off the event loop's thread, so nothing loads while requests are in flight.
        if not encodings_loaded():
            await asyncio.to_thread(load_encodings)
        cache = CompletionCache(self.run.cache_dir) if self.run.use_cache else None
        self.concurrency = Concurrency.resolve(self.run, _POOL.get())
        self.runner = Runner(cache, max_concurrency=self.concurrency.limit, retry=self.run.retry,
                             limiter=self.run.limiter, slots=self.concurrency.slots, deadline=self.run.deadline)
        return self

    async def __aexit__(self, *exc_info) -> None:
        try:
            for bar in self._bars:
                bar.close()
            for backend in self.backends:
                if any(backend is owned for owned in self._owned) or not backend.batched:
                    await backend.aclose()
        finally:
            if self.runner is not None and self.runner.cache is not None:
                self.runner.cache.close()
