"""Judging at high concurrency: the SDK's aiohttp transport against its default httpx one, and a hand-written loop.

``--pairs`` synthetic pairs (the paper's full prompt) are judged in process by ``judge_pairs`` against a fast
asyncio server (its own process: ``benchmarks/_fast_server.py``) that answers after ``--latency`` seconds, once
per transport (``transport=`` of the openai backend), each with a fresh cache and a run folder; then the same
request bodies go through a hand-written ``AsyncOpenAI`` + semaphore loop on the aiohttp transport (no cache,
no run folder). The ideal is ceil(pairs / concurrency) × latency.

    python benchmarks/judge_transport.py                        # 2,000 pairs, concurrency 256, latency 0.5 s
    python benchmarks/judge_transport.py --pairs 4000 --concurrency 512 --transports aiohttp
"""

from __future__ import annotations

import argparse
import asyncio
import math
import resource
import tempfile
import time

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from _fast_server import fast_server  # noqa: E402
from judge_throughput import synthetic_pairs  # noqa: E402
from metric_arena import JudgeConfig, RunConfig, judge_pairs  # noqa: E402
from metric_arena.judge import JudgeInputs, RunOutput, judge_batch_requests  # noqa: E402
from metric_arena.stats import Intervals  # noqa: E402


async def hand_written(bodies: list[dict], *, base_url: str, concurrency: int) -> None:
    import openai

    async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0,
                                  http_client=openai.DefaultAioHttpClient()) as client:
        semaphore = asyncio.Semaphore(concurrency)

        async def one(body: dict) -> None:
            async with semaphore:
                await client.chat.completions.create(**body)

        await asyncio.gather(*(one(body) for body in bodies))


def request_bodies(data) -> list[dict]:
    """The chat-completion bodies the package sends for these pairs (its public Batch API planner)."""
    plans = judge_batch_requests(data, judge=JudgeConfig("openai:bench-judge"), run=RunConfig(use_cache=False))
    return [body for _, body in next(iter(plans.values()))["requests"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--transports", nargs="+", default=["aiohttp", "httpx"], choices=["aiohttp", "httpx"])
    parser.add_argument("--repeat", type=int, default=1, help="runs per transport (the best and all are shown)")
    args = quick_args(parser, pairs=40, concurrency=16, latency=0.01)
    n, c, lat = args.pairs, args.concurrency, args.latency
    best = math.ceil(n / c) * lat
    predictions, references, questions = synthetic_pairs(n)
    data = JudgeInputs(predictions=predictions, references=references, questions=questions)
    print(f"{n} pairs, concurrency {c}, latency {lat} s: ideal {best:.2f} s")
    print(f"{'client':<26} {'wall s (runs)':>26} {'of ideal':>8} {'x ideal':>8}")
    with tempfile.TemporaryDirectory() as tmp, fast_server(latency=lat) as server:
        for transport in args.transports:
            walls = []
            for k in range(args.repeat):
                judge = JudgeConfig("openai:bench-judge", options={"transport": transport})
                run = RunConfig(base_url=server.base_url, api_key="sk-bench", max_concurrency=c,
                                cache_dir=f"{tmp}/{transport}-{k}")
                start = time.perf_counter()
                result = judge_pairs(data, judge=judge, run=run, out=f"{tmp}/run-{transport}-{k}",
                                     output=RunOutput(progress=False), intervals=Intervals(n_boot=100))
                walls.append(time.perf_counter() - start)
                assert result["n_sent"] == n and result["n_failed"] == 0, result
            shown = " ".join(f"{w:.2f}" for w in walls)
            print(f"{'judge_pairs, ' + transport:<26} {shown:>26} {best / min(walls):8.0%} {min(walls) / best:8.2f}")
        bodies = request_bodies(data)
        start = time.perf_counter()
        asyncio.run(hand_written(bodies, base_url=server.base_url, concurrency=c))
        wall = time.perf_counter() - start
        print(f"{'hand-written loop, aiohttp':<26} {wall:26.2f} {best / wall:8.0%} {wall / best:8.2f}")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this process): {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
