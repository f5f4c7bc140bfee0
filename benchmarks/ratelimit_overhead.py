"""What the client-side rate limiter costs, and how close it holds the rate to the target.

    python benchmarks/ratelimit_overhead.py

1. Overhead: microseconds per ``acquire`` when the limit never binds (no limits, and limits far
   above the call rate), against an empty ``await`` loop.
2. Achieved rate: many concurrent coroutines acquire as fast as they can for a few seconds;
   the steady-state rate (after the initial burst) is compared with the target.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time

from _setup import quick_args
from metric_arena.llm import RateLimiter


async def _noop(_n: int) -> None:
    return None


async def _per_call_us(acquire, n_calls: int) -> float:
    start = time.perf_counter()
    for _ in range(n_calls):
        await acquire(1_000)
    return (time.perf_counter() - start) / n_calls * 1e6


async def _achieved(limiter: RateLimiter, tokens: int, n_workers: int, seconds: float) -> dict:
    times: list[float] = []
    stop_at = time.monotonic() + seconds

    async def worker() -> None:
        while time.monotonic() < stop_at:
            await limiter.acquire(tokens)
            times.append(time.monotonic())

    start = time.monotonic()
    tasks = [asyncio.create_task(worker()) for _ in range(n_workers)]
    await asyncio.sleep(seconds)
    for task in tasks:  # waiters still queued give their reservations back
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    times.sort()
    # steady state: skip the first second (the burst allowance goes at once)
    steady = [t for t in times if t - start >= 1.0]
    span = steady[-1] - steady[0] if len(steady) > 1 else float("nan")
    rate_per_min = (len(steady) - 1) / span * 60 if len(steady) > 1 else float("nan")
    return {"requests": len(times), "steady_rpm": rate_per_min, "steady_tpm": rate_per_min * tokens}


async def main(args) -> None:
    n = args.calls
    base = await _per_call_us(_noop, n)
    free = await _per_call_us(RateLimiter(None, None).acquire, n)
    high = await _per_call_us(RateLimiter(rpm=1e12, tpm=1e15).acquire, n)
    print(f"overhead per acquire ({n:,} calls, one coroutine):")
    print(f"  empty await          {base:6.2f} us")
    print(f"  no limits            {free:6.2f} us  (+{free - base:.2f})")
    print(f"  rpm+tpm, not binding {high:6.2f} us  (+{high - base:.2f})")

    print(f"achieved vs target ({args.seconds:g} s each, first second of burst excluded):")
    print(f"  {'target':<34} {'workers':>7} {'requests':>8} {'achieved':>22} {'error':>7}")
    cases = [
        ("rpm=600", RateLimiter(rpm=600, tpm=None), 0, 50, "rpm", 600),
        ("rpm=6000", RateLimiter(rpm=6_000, tpm=None), 0, 200, "rpm", 6_000),
        ("rpm=30000", RateLimiter(rpm=30_000, tpm=None), 0, 500, "rpm", 30_000),
        ("tpm=450000 at 1890 tok/req", RateLimiter(rpm=10_000, tpm=450_000), 1_890, 100, "tpm", 450_000),
        # bucket = 0.01 s of 3M tpm = 500 tokens < 2,146: every request goes "alone"
        ("tpm=3M at 2146 tok/req (>bucket)", RateLimiter(rpm=None, tpm=3_000_000, burst_seconds=0.01), 2_146, 20, "tpm",
         3_000_000),
    ]
    for label, limiter, tokens, workers, which, target in cases:
        result = await _achieved(limiter, tokens, workers, args.seconds)
        got = result["steady_rpm"] if which == "rpm" else result["steady_tpm"]
        unit = "req" if which == "rpm" else "tok"
        print(f"  {label:<34} {workers:>7} {result['requests']:>8} {got:>13,.0f} {unit}/min    {100 * (got - target) / target:+6.2f}%")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000, help="acquire calls timed for the overhead")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per achieved-rate case")
    asyncio.run(main(quick_args(parser, calls=2_000, seconds=1.5)))
    print(f"peak memory (max RSS of this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
