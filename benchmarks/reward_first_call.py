"""The reward's first call in a fresh process against its later calls (new batches of the same size).

A child process builds ``reward_function`` and calls it on ``--calls`` distinct GRPO batches (P prompts x G
chat completions, LFRQA-length answers, nothing cached) against a fast asyncio server (``_fast_server.py``,
its own process) with a fixed latency; it prints each call's wall time and CPU (its rusage). Target: the
first call within 2x of the warm calls' (their median): nothing is loaded on the first call that the
construction could load.

    python benchmarks/reward_first_call.py            # 32 prompts x 8, latency 0.25 s, concurrency 64, 4 calls
    python benchmarks/reward_first_call.py --quick    # 8 x 4, latency 0.05 s, 3 calls; exits 1 when a call fails
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from judge_throughput import synthetic_pairs  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def batch(prompts: int, generations: int, seed: int) -> tuple[list, list, dict]:
    """What GRPOTrainer passes: each row once per generation, distinct chat completions."""
    answers, references, questions = synthetic_pairs(prompts * (generations + 1), seed=seed)
    columns: dict[str, list] = {"qid": [], "question": [], "answer": []}
    prompt_list, completions = [], []
    for p in range(prompts):
        for g in range(generations):
            columns["qid"].append(f"s{seed}q{p}")
            columns["question"].append(questions[p])
            columns["answer"].append(references[p])
            prompt_list.append([{"role": "user", "content": questions[p]}])
            completions.append([{"role": "assistant", "content": answers[p * generations + g]}])
    return prompt_list, completions, columns


def child(url: str, prompts: int, generations: int, concurrency: int, calls: int) -> None:
    start, cpu = time.perf_counter(), _cpu()
    from metric_arena import RunConfig, reward_function

    reward = reward_function(judge="openai:bench-judge",
                             run=RunConfig(base_url=url, api_key="sk-bench", max_concurrency=concurrency,
                                           use_cache=False))
    made = {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu}
    found = []
    for k in range(calls):
        prompt_list, completions, columns = batch(prompts, generations, seed=k)
        start, cpu = time.perf_counter(), _cpu()
        scores = reward(prompt_list, completions, **columns)
        found.append({"wall": time.perf_counter() - start, "cpu": _cpu() - cpu,
                      "failed": sum(score is None for score in scores)})
    print(json.dumps({"construction": made, "calls": found}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--prompts", type=int)
    parser.add_argument("--generations", type=int)
    parser.add_argument("--latency", type=float)
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--calls", type=int)
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    quick = {"prompts": 8, "generations": 4, "latency": 0.05, "concurrency": 16, "calls": 3}
    full = {"prompts": 32, "generations": 8, "latency": 0.25, "concurrency": 64, "calls": 4}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.child:
        child(args.child, args.prompts, args.generations, args.concurrency, args.calls)
        return 0
    from _fast_server import fast_server

    with fast_server(latency=args.latency) as server:
        done = subprocess.run([sys.executable, __file__, "--child", server.base_url, "--prompts", str(args.prompts),
                               "--generations", str(args.generations), "--concurrency", str(args.concurrency),
                               "--calls", str(args.calls)], capture_output=True, text=True, env=os.environ)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    found = json.loads(done.stdout.strip().splitlines()[-1])
    n = args.prompts * args.generations
    print(f"{args.prompts} prompts x {args.generations} completions ({n} judgments a call), latency "
          f"{args.latency:g} s, concurrency {args.concurrency}, a fresh process")
    made = found["construction"]
    print(f"reward_function(...) built in {made['wall']:.2f} s wall, {made['cpu']:.2f} s CPU (imports included)")
    for k, call in enumerate(found["calls"]):
        print(f"call {k + 1}: {call['wall']:.2f} s wall, {call['cpu']:.2f} s CPU, {call['failed']} failed")
    first, warm = found["calls"][0], found["calls"][1:]
    ratio = first["wall"] / statistics.median(c["wall"] for c in warm)
    cpu_ratio = first["cpu"] / statistics.median(c["cpu"] for c in warm)
    print(f"first call / warm calls (median): {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
          f"(target <= 2x: {'OK' if ratio <= 2 else 'ABOVE TARGET'})")
    return 1 if any(c["failed"] for c in found["calls"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
