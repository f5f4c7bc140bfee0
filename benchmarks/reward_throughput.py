"""Reward throughput: ``metric_arena.reward_function`` called as GRPOTrainer calls it, against a local
OpenAI-compatible server with a fixed latency.

Each call scores one GRPO batch: P prompts x G completions (LFRQA-length answers, the paper's full
judge prompt). Prints, per concurrency level, the wall time of a cold call (every distinct pair
asked), completions scored per second, and a warm call of the same batch (all from the cache: it
must send 0 requests). The server runs in this process (a conservative set-up: it competes with
the client for the interpreter).

    python benchmarks/reward_throughput.py                       # 32 prompts x 8, 0.25 s, concurrency 16/64/256
    python benchmarks/reward_throughput.py --prompts 64 --generations 4 --latency 0.5 --levels 64

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
from metric_arena import RunConfig, reward_function  # noqa: E402
from tests.openai_server import OpenAIServer  # noqa: E402

WORDS = ("the fund index market cost tax plan rate risk bond stock cash year account return fee "
         "water heat light energy cell gene protein theory model data code server network user").split()


def grpo_batch(prompts: int, generations: int, seed: int = 0) -> tuple[list, list, dict]:
    """What GRPOTrainer passes: each row repeated once per generation, distinct chat completions."""
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    rows = [{"qid": f"q{i}", "question": text(rng.randint(6, 14)).rstrip(".") + "?", "answer": text(rng.randint(80, 180))}
            for i in range(prompts)]
    columns: dict[str, list] = {"qid": [], "question": [], "answer": []}
    prompt_list, completions = [], []
    for row in rows:
        for _ in range(generations):
            for key in columns:
                columns[key].append(row[key])
            prompt_list.append([{"role": "user", "content": row["question"]}])
            completions.append([{"role": "assistant", "content": text(rng.randint(60, 140))}])
    return prompt_list, completions, columns


def reply(body: dict, attempt: int) -> str:
    rating = len(body["messages"][-1]["content"]) % 3
    return f"<thinking>Both answers address the query; one is more complete.</thinking><rating>{rating}</rating>"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=32, help="prompts per batch (default 32)")
    parser.add_argument("--generations", type=int, default=8, help="completions per prompt (default 8)")
    parser.add_argument("--latency", type=float, default=0.25, help="server latency in seconds (default 0.25)")
    parser.add_argument("--levels", type=int, nargs="+", default=[16, 64, 256], help="max_concurrency levels")
    args = quick_args(parser, prompts=4, generations=2, latency=0.01, levels=[16])

    prompts, completions, columns = grpo_batch(args.prompts, args.generations)
    n = len(completions)
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(reply, latency=args.latency) as server:
        warm = reward_function(judge="openai:warm-up",
                               run=RunConfig(base_url=server.base_url, api_key="sk-bench", cache_dir=f"{tmp}/warm"))
        warm(prompts[:1], completions[:1], **{k: v[:1] for k, v in columns.items()})  # imports, prompt files
        print(f"{args.prompts} prompts x {args.generations} completions = {n} per call, "
              f"server latency {args.latency:.2f} s")
        for level in args.levels:
            reward = reward_function(judge="openai:bench-judge",
                                     run=RunConfig(base_url=server.base_url, api_key="sk-bench", max_concurrency=level,
                                                   cache_dir=f"{tmp}/c{level}"))
            server.clear()
            start = time.perf_counter()
            scores = reward(prompts, completions, **columns)
            cold = time.perf_counter() - start
            sent = len(server.requests)
            server.clear()
            start = time.perf_counter()
            again = reward(prompts, completions, **columns)
            warm_s = time.perf_counter() - start
            assert again == scores and not server.requests, "the warm call must come from the cache"
            failed = sum(s is None for s in scores)
            print(f"  concurrency {level:4d}: cold {cold:6.2f} s ({n / cold:7.1f} completions/s, {sent} requests, "
                  f"{failed} failed); warm {warm_s:5.3f} s, 0 requests")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
