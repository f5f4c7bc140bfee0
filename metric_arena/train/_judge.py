"""The judge a training loop calls again and again: built once, the same settings every call.

Every call is a :func:`~metric_arena.judge.judge_pairs` run (the paper's prompt and order rule, the
cache, concurrency, rate limits and retries), each in its own event loop. An openai judge's HTTP
client belongs to one loop, so it is closed after each call and made again on the next; a judge
that runs on this machine (hf, vllm) keeps its model loaded between calls.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from lfrqa.errors import RagQaArenaError
from metric_arena.judge import ORDERS, judge_pairs
from metric_arena.llm import Backend, ChatRequest, Completion, RateLimiter, RetryPolicy, make_backends, run_sync

__all__ = ["ArenaJudge", "KeptBackend"]


class KeptBackend(Backend):
    """A judge kept across runs: closing it closes a network client (made again when next used) but
    leaves a model that runs here (``batched``: hf, vllm) loaded; :meth:`release` frees it."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name, self.model = inner.name, inner.model

    async def complete(self, request: ChatRequest) -> Completion:
        return await self.inner.complete(request)

    async def complete_many(self, requests: list[ChatRequest]) -> list[Completion]:
        return await self.inner.complete_many(requests)

    @property
    def batched(self) -> bool:
        return self.inner.batched

    @property
    def batch_size(self) -> int | None:
        return getattr(self.inner, "batch_size", None)

    def identity(self) -> dict:
        return self.inner.identity()

    @property
    def spec(self) -> str:
        return self.inner.spec

    async def aclose(self) -> None:
        if not self.inner.batched:
            await self.inner.aclose()

    async def release(self) -> None:
        await self.inner.aclose()


class ArenaJudge:
    """The judge settings of a reward or a callback, and one method to judge a list of pairs."""

    def __init__(
        self,
        *,
        judge: str | Backend | Sequence[str | Backend],
        base_url: str | None,
        api_key: str | None,
        order: str,
        seed: int,
        max_concurrency: int,
        cache_dir: str | os.PathLike | None,
        use_cache: bool,
        limiter: RateLimiter | None,
        retry: RetryPolicy | None,
        timeout: float | None,
        max_input_tokens: int | None,
        data_dir: str | os.PathLike | None,
        backend_options: dict | None,
    ) -> None:
        if order not in ORDERS:
            raise RagQaArenaError(f"Unknown order {order!r}. Available: {', '.join(ORDERS)}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RagQaArenaError(f"seed must be an integer, got {seed!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise RagQaArenaError(f"max_concurrency must be a positive integer, got {max_concurrency!r}")
        built = make_backends(judge, base_url=base_url, api_key=api_key, timeout=timeout, options=backend_options)
        self.backends = [KeptBackend(backend) for backend in built]
        self.order, self.seed, self.max_concurrency = order, seed, max_concurrency
        self.cache_dir, self.use_cache, self.limiter, self.retry = cache_dir, use_cache, limiter, retry
        self.max_input_tokens, self.data_dir = max_input_tokens, data_dir

    @property
    def specs(self) -> list[str]:
        return [backend.spec for backend in self.backends]

    def __call__(self, predictions: list[str], references: list[str], questions: list[str], *, ids: list[str],
                 domains: list[str] | None = None, generation_failed: list[bool] | None = None,
                 system: str = "system", n_boot: int = 1000) -> dict:
        """:func:`~metric_arena.judge.judge_pairs` on these pairs with the judge's settings."""
        return judge_pairs(
            predictions, references, questions, ids=ids, domains=domains, judge=self.backends, order=self.order,
            seed=self.seed, max_concurrency=self.max_concurrency, cache_dir=self.cache_dir, use_cache=self.use_cache,
            limiter=self.limiter, retry=self.retry, max_input_tokens=self.max_input_tokens, data_dir=self.data_dir,
            generation_failed=generation_failed, system=system, progress=False, n_boot=n_boot,
        )

    def close(self) -> None:
        """Free what the judges hold (a local judge model)."""

        async def release() -> None:
            for backend in self.backends:
                await backend.release()

        run_sync(release())
