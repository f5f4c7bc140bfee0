"""Judge throughput against a local OpenAI-compatible server with a fixed latency.

Judges N synthetic pairs (answers of LFRQA-like length, the paper's full prompt) at several
concurrency levels, each with a fresh cache, then re-runs one level from its warm cache, and
prints wall times, requests/s, the speed-up over one request at a time and the requests the
cached re-run sent (it must be 0). The server runs in this process (a conservative set-up: it
competes with the client for the interpreter).

    python benchmarks/judge_throughput.py                     # 240 pairs, 0.25 s, concurrency 1/8/32/128
    python benchmarks/judge_throughput.py --levels 32 128 --pairs 1000 --latency 0.5
    python benchmarks/judge_throughput.py --rerun-pairs 14020 # also time a warm-cache re-run of 14,020 pairs

Needs the pinned benchmark files ($LFRQA_DATA_DIR, e.g. ../shared/lfrqa) or network access.
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from metric_arena import RunConfig, judge_pairs  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402

WORDS = ("the fund index market cost tax plan rate risk bond stock cash year account return fee "
         "water heat light energy cell gene protein theory model data code server network user").split()


def synthetic_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    questions = [text(rng.randint(6, 14)).rstrip(".") + "?" for _ in range(n)]
    predictions = [text(rng.randint(60, 140)) for _ in range(n)]
    references = [text(rng.randint(80, 180)) for _ in range(n)]
    return predictions, references, questions


def reply(body: dict, attempt: int) -> str:
    rating = len(body["messages"][-1]["content"]) % 3
    return f"<thinking>Both answers address the query; one is more complete.</thinking><rating>{rating}</rating>"


def timed_run(server: OpenAIServer, data, concurrency: int, cache_dir: str) -> tuple[float, dict, int]:
    server.clear()
    start = time.perf_counter()
    run = RunConfig(base_url=server.base_url, api_key="sk-bench", max_concurrency=concurrency, cache_dir=cache_dir)
    result = judge_pairs(*data, judge="openai:bench-judge", run=run, progress=False, n_boot=200)
    return time.perf_counter() - start, result, len(server.requests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=240, help="pairs judged at each level (default 240)")
    parser.add_argument("--latency", type=float, default=0.25, help="server latency in seconds (default 0.25)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 8, 32, 128], help="concurrency levels")
    parser.add_argument("--cached-level", type=int, default=32, help="level whose warm cache is re-run (default 32)")
    parser.add_argument("--rerun-pairs", type=int, default=0,
                        help="also fill a cache with this many pairs (latency 0) and time a warm re-run")
    args = quick_args(parser, pairs=20, latency=0.01, levels=[1, 8], cached_level=8)

    data = synthetic_pairs(args.pairs)
    walls: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(reply, latency=args.latency) as server:
        # warm up imports, the prompt files and the HTTP client outside the timings
        judge_pairs(["a"], ["b"], ["q"], judge="openai:warm-up",
                    run=RunConfig(base_url=server.base_url, api_key="sk-bench", cache_dir=f"{tmp}/warm"),
                    progress=False, n_boot=10)
        print(f"{args.pairs} pairs, server latency {args.latency:.2f} s, one judge request per pair (order 'paper')")
        print(f"{'concurrency':>11} {'wall s':>8} {'req/s':>8} {'speed-up':>9} {'requests':>9} {'failed':>7}")
        for level in args.levels:
            wall, result, sent = timed_run(server, data, level, f"{tmp}/cache-{level}")
            walls[level] = wall
            base = walls.get(1)
            speedup = f"{base / wall:8.1f}x" if base else f"{'-':>9}"
            print(f"{level:>11} {wall:8.2f} {sent / wall:8.1f} {speedup} {sent:>9} {result['n_failed']:>7}")
        if args.cached_level in walls:
            wall, result, sent = timed_run(server, data, args.cached_level, f"{tmp}/cache-{args.cached_level}")
            print(f"re-run at concurrency {args.cached_level} from its warm cache: {wall:.3f} s, "
                  f"{sent} requests sent, {result['n_cached']} answered from the cache")
        if 1 in walls and 32 in walls:
            ratio = walls[1] / walls[32]
            verdict = "OK" if ratio >= 16 else "BELOW TARGET"
            print(f"speed-up at concurrency 32 vs one at a time: {ratio:.1f}x (target >= 16x: {verdict})")

        if args.rerun_pairs:
            big = synthetic_pairs(args.rerun_pairs, seed=1)
            server.latency = 0.0
            fill, _, sent = timed_run(server, big, 64, f"{tmp}/cache-big")
            wall, result, resent = timed_run(server, big, 64, f"{tmp}/cache-big")
            print(f"{args.rerun_pairs:,} pairs: filled the cache in {fill:.1f} s ({sent:,} requests, latency 0); "
                  f"warm re-run {wall:.2f} s, {resent} requests sent, {result['n_cached']:,} from the cache")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this process): {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
