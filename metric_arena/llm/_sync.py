"""Run a coroutine to completion from synchronous code, also where an event loop already runs.

The synchronous entry points (:func:`~metric_arena.judge_pairs`,
:func:`~metric_arena.generate_answers`, :func:`~metric_arena.llm._runner.run_requests`) are thin
wrappers over their ``async`` forms. In a plain script the coroutine runs with
:func:`asyncio.run`; inside a running loop (a Jupyter notebook) it runs in a fresh loop in
another thread, and its result or exception comes back to the caller.

>>> async def answer():
...     return 42
>>> run_sync(answer())
42
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

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
