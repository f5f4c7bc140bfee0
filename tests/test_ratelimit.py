"""RateLimiter: achieved rates with small windows, fairness, oversize requests, cancel, backoff."""

from __future__ import annotations

import asyncio
import time

import pytest

from metric_arena.llm import RateLimiter
from metric_arena.llm._ratelimit import estimate_tokens

SLACK = 0.35  # seconds of scheduling noise tolerated on a busy 2-core machine


async def _run_all(limiter: RateLimiter, tokens: list[int]) -> tuple[float, list[int], list[float]]:
    """Start one acquire per entry at once; return elapsed time, finishing order, finish times."""
    order: list[int] = []
    finished: list[float] = [0.0] * len(tokens)
    start = time.monotonic()

    async def one(i: int, n: int) -> None:
        await limiter.acquire(n)
        finished[i] = time.monotonic() - start
        order.append(i)

    await asyncio.gather(*(one(i, n) for i, n in enumerate(tokens)))
    return time.monotonic() - start, order, finished


def test_requests_per_minute_paces_and_is_fair():
    # rpm=600 -> 10/s with the default 1 s burst (10 at once): 18 requests need (18 - 10) / 10 = 0.8 s.
    limiter = RateLimiter(rpm=600, tpm=None)
    elapsed, order, finished = asyncio.run(_run_all(limiter, [0] * 18))
    assert 0.8 - 0.02 <= elapsed <= 0.8 + SLACK
    assert order == list(range(18))  # first come, first served
    assert max(finished[:10]) < 0.08  # the burst went at once
    gaps = [b - a for a, b in zip(finished[10:], finished[11:])]
    assert all(0.05 <= g <= 0.1 + SLACK for g in gaps)
    assert limiter.acquired == 18
    assert limiter.waited_s > 3.5  # 8 waiters, 0.1..0.8 s each = 3.6 s


def test_tokens_per_minute_paces():
    # tpm=60,000 -> 1,000 tokens/s, bucket 0.1 s = 100 tokens; 10 x 50 tokens -> (500 - 100) / 1000 = 0.4 s.
    limiter = RateLimiter(rpm=None, tpm=60_000, burst_seconds=0.1)
    elapsed, order, _ = asyncio.run(_run_all(limiter, [50] * 10))
    assert 0.4 - 0.02 <= elapsed <= 0.4 + SLACK
    assert order == list(range(10))


def test_the_tighter_limit_decides():
    # rpm 6,000 (100/s, 10 at once) would allow 20 requests in 0.1 s;
    # tpm 24,000 (400 tokens/s, 40 at once) needs (200 - 40) / 400 = 0.4 s.
    limiter = RateLimiter(rpm=6_000, tpm=24_000, burst_seconds=0.1)
    elapsed, _, _ = asyncio.run(_run_all(limiter, [10] * 20))
    assert 0.4 - 0.02 <= elapsed <= 0.4 + SLACK


def test_request_larger_than_bucket_goes_alone_without_deadlock():
    # Bucket 100 tokens; a 500-token request goes at once (bucket full) and leaves a debt of 400:
    # the next 10-token request waits until 10 tokens are back: (400 + 10) / 1000 = 0.41 s.
    limiter = RateLimiter(rpm=None, tpm=60_000, burst_seconds=0.1)
    elapsed, order, finished = asyncio.run(_run_all(limiter, [500, 10]))
    assert finished[0] < 0.05
    assert 0.41 - 0.02 <= finished[1] <= 0.41 + SLACK
    assert order == [0, 1]


def test_no_limits_is_free():
    limiter = RateLimiter(rpm=None, tpm=None)
    elapsed, _, _ = asyncio.run(_run_all(limiter, [10_000] * 2_000))
    assert elapsed < 1.0


def test_cancelled_waiter_gives_its_turn_back():
    limiter = RateLimiter(rpm=600, tpm=None, burst_seconds=0.1)  # 10/s, 1 at once

    async def scenario() -> float:
        await limiter.acquire()  # empties the bucket
        waiter = asyncio.create_task(limiter.acquire())  # would go at +0.1 s
        await asyncio.sleep(0.02)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        start = time.monotonic()
        await limiter.acquire()  # takes the freed slot, not the one after it (+0.2 s)
        return time.monotonic() - start

    waited = asyncio.run(scenario())
    assert waited < 0.1 + 0.05
    assert limiter.acquired == 2


def test_backoff_pauses_new_and_waiting_requests():
    limiter = RateLimiter(rpm=600, tpm=None, burst_seconds=0.1)

    async def scenario() -> tuple[float, float]:
        start = time.monotonic()
        await limiter.acquire()
        waiting = asyncio.create_task(limiter.acquire())  # due at +0.1 s
        await asyncio.sleep(0.01)
        limiter.backoff(0.3)  # a 429 said Retry-After: 0.3
        await waiting
        t_waiting = time.monotonic() - start
        await limiter.acquire()
        return t_waiting, time.monotonic() - start

    t_waiting, t_next = asyncio.run(scenario())
    assert 0.4 - 0.02 <= t_waiting <= 0.4 + SLACK  # its 0.1 s turn moved 0.3 s later
    assert t_next >= t_waiting + 0.1 - 0.02  # spacing kept after the pause


@pytest.mark.parametrize("kwargs", [{"rpm": 0, "tpm": None}, {"rpm": -5, "tpm": None}, {"rpm": None, "tpm": "10k"},
                                    {"rpm": True, "tpm": None}, {"rpm": float("inf"), "tpm": None},
                                    {"rpm": 10, "tpm": None, "burst_seconds": 0}])
def test_bad_limits_are_named(kwargs):
    with pytest.raises(ValueError) as err:
        RateLimiter(**kwargs)
    bad = next(k for k, v in kwargs.items() if v not in (None, 10))
    assert bad in str(err.value)


def test_bad_token_count_is_named():
    limiter = RateLimiter(rpm=60, tpm=None)
    with pytest.raises(ValueError, match="n_tokens must be a non-negative integer .*got -1"):
        asyncio.run(limiter.acquire(-1))
    with pytest.raises(ValueError, match="n_tokens must be a non-negative integer .*got 1.5"):
        asyncio.run(limiter.acquire(1.5))
    assert limiter.acquired == 0


def test_estimate_tokens():
    messages = [{"role": "system", "content": "a" * 100}, {"role": "user", "content": [{"type": "text", "text": "b" * 50}]}]
    # (100 + 6 + 50 + 4) chars / 4 = 40 tokens, plus max_tokens
    assert estimate_tokens(messages, max_tokens=256) == 40 + 256
    assert estimate_tokens([], max_tokens=0) == 0
