"""The task plumbing of a run: gathering tasks (the first error cancels the rest), running a
schedule until told to stop, a coroutine from synchronous code, grouping requests for a batched
backend, and the progress bar."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lfrqa.checks import check_int
from metric_arena.llm._types import Backend, ChatRequest, Completion

__all__ = ["Batcher", "Progress", "SerialThread", "call_outcome", "gather_or_cancel", "run_sync", "run_until_stopped",
           "synchronous"]


class SerialThread:
    """Synchronous calls run one at a time, in the order made, on a thread of their own, awaited by
    async code (:meth:`call`). Calls made while the thread is busy queue up and are drained in one go,
    their outcomes handed back to the loop together: one wake-up of each side for many calls. A call
    made still runs when its awaiting task is cancelled (its outcome, an error too, is then dropped).
    ``idle``: run on the thread once the calls made are drained (work that is done best in one go after
    them); an error of it is dropped (it is called again after the next calls). ``together``: runs calls
    drained together at once (in one transaction, say), at most ``TOGETHER_AT_MOST`` of them, and returns
    each one's outcome, ``(True, value)`` or ``(False, error)``, in order."""

    #: Seconds of calls after which the outcomes so far go back to the loop before the next call.
    HAND_BACK_AFTER = 0.002
    #: The most calls handed to ``together`` at once (their outcomes go back to the loop when all are made).
    TOGETHER_AT_MOST = 64

    def __init__(self, name: str, *, idle: Callable[[], Any] | None = None,
                 together: Callable[[list[Callable[[], Any]]], list[tuple[bool, Any]]] | None = None):
        self.name = name
        self._idle = idle
        self._together = together
        self._lock = threading.Lock()  # guards the queue; never held while a call runs
        self._queue: list = []
        self._draining = False
        self._executor: ThreadPoolExecutor | None = None

    async def call(self, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            self._queue.append((fn, loop, future))
            if not self._draining:
                self._draining = True
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.name)
                self._executor.submit(self._drain)
        return await future

    def _drain(self) -> None:
        tidied = False
        while True:
            with self._lock:
                calls, self._queue = self._queue, []
                if not calls and (tidied or self._idle is None):
                    self._draining = False
                    return
            if not calls:  # drained: the idle work, then a last look for calls made meanwhile
                tidied = True
                with contextlib.suppress(Exception):
                    self._idle()
                continue
            tidied = False
            if self._together is not None:
                self._drain_together(calls)
                continue
            done: list = []
            since = time.monotonic()
            for fn, loop, future in calls:
                done.append((loop, future, *call_outcome(fn)))
                if time.monotonic() - since > self.HAND_BACK_AFTER:  # a slow call delays no other's answer
                    _hand_back(done)
                    done, since = [], time.monotonic()
            _hand_back(done)

    def _drain_together(self, calls: list) -> None:
        for start in range(0, len(calls), self.TOGETHER_AT_MOST):
            chunk = calls[start : start + self.TOGETHER_AT_MOST]
            try:
                outcomes = self._together([fn for fn, _, _ in chunk])
            except BaseException as error:  # (its own failure: every call of the chunk gets it)
                outcomes = [(False, error)] * len(chunk)
            _hand_back([(loop, future, ok, value) for (_, loop, future), (ok, value) in zip(chunk, outcomes)])

    def close(self) -> None:
        """Wait for the calls made, then stop the thread (a later call starts a new one)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


def call_outcome(fn: Callable[[], Any]) -> tuple[bool, Any]:
    """``(True, fn())``, or ``(False, error)`` when it raises: an outcome to hand to the awaiting task."""
    try:
        return True, fn()
    except BaseException as error:
        return False, error


def _hand_back(done: list) -> None:
    by_loop: dict = {}
    for loop, future, ok, value in done:
        by_loop.setdefault(loop, []).append((future, ok, value))
    for loop, outcomes in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_resolve, outcomes)


def _resolve(outcomes: list) -> None:
    for future, ok, value in outcomes:
        if not future.cancelled():
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


@dataclass
class Batcher:
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
        await _settle(tasks)


async def _settle(tasks: list[asyncio.Future]) -> None:
    """Cancel the tasks still running, wait for them, and mark every task's exception as seen (the
    first one is raised; the others, often the same error, would each print "Task exception was
    never retrieved" when collected)."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()


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
    check_int("max_in_flight", max_in_flight, minimum=1)
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
        await _settle(workers)
    return started


T = TypeVar("T")

#: Python's young-generation collection threshold while a blocking call runs (:func:`run_sync`), when it is
#: lower (and collection is on): at the default 700 allocations a collection starts every few requests, which
#: took ~20% of the client's CPU at 256 in flight (benchmarks/judge_throughput.py). Restored at the end.
YOUNG_COLLECTION_AFTER = 10_000


class _FewerCollections:
    """The young-generation threshold raised to ``YOUNG_COLLECTION_AFTER`` while at least one blocking call
    runs (calls from several threads share it), restored when the last one ends unless changed meanwhile."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.saved: tuple[int, ...] | None = None

    def __enter__(self) -> None:
        with self.lock:
            if not self.depth:
                threshold = gc.get_threshold()
                self.saved = None
                if 0 < threshold[0] < YOUNG_COLLECTION_AFTER:
                    self.saved = threshold
                    gc.set_threshold(YOUNG_COLLECTION_AFTER, *threshold[1:])
            self.depth += 1

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.depth -= 1
            if not self.depth and self.saved is not None:
                if gc.get_threshold()[0] == YOUNG_COLLECTION_AFTER:  # not changed by the caller meanwhile
                    gc.set_threshold(*self.saved)
                self.saved = None


_fewer_collections = _FewerCollections()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of ``coroutine``, run in a fresh event loop (in another thread when one runs here), with
    fewer garbage collections meanwhile (:data:`YOUNG_COLLECTION_AFTER`)."""
    with _fewer_collections:
        return _run_in_a_loop(coroutine)


def _run_in_a_loop(coroutine: Coroutine[Any, Any, T]) -> T:
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


def synchronous(coroutine_function: Callable[..., Coroutine[Any, Any, T]], *, name: str,
                doc: str | None = None) -> Callable[..., T]:
    """The blocking twin of an ``async def`` entry point: the same parameters (one list, read from
    the async function by ``inspect.signature``), run to the end with :func:`run_sync`; its docstring
    is ``doc``, or the async function's own."""

    @functools.wraps(coroutine_function)
    def blocking(*args, **kwargs):
        return run_sync(coroutine_function(*args, **kwargs))

    blocking.__name__ = blocking.__qualname__ = name
    blocking.__doc__ = doc if doc is not None else coroutine_function.__doc__
    return blocking


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
