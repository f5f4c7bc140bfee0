"""Peak memory of judging N pairs: a fixed pool of workers pulls the pairs, so it must not grow with N.

Each size runs in a fresh process (``ru_maxrss`` is a high-water mark): ``judge_pairs`` on N synthetic pairs of
LFRQA-like length (the paper's full prompt), a fresh cache and a run folder, against the fast asyncio server
(``benchmarks/_fast_server.py``, its own process) answering at once. Printed: the process's peak RSS, its
RSS once the inputs are built (before judging), and the wall time.

    python benchmarks/judge_memory.py                      # 14,020 and 100,000 pairs, concurrency 64
    python benchmarks/judge_memory.py --sizes 2000 20000 --concurrency 256
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one(n: int, concurrency: int, base_url: str) -> dict:
    from judge_throughput import synthetic_pairs
    from metric_arena import RunConfig, judge_pairs
    from metric_arena.judge import JudgeInputs, RunOutput
    from metric_arena.stats import Intervals

    predictions, references, questions = synthetic_pairs(n)
    data = JudgeInputs(predictions=predictions, references=references, questions=questions)
    before = rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        run = RunConfig(base_url=base_url, api_key="sk-bench", max_concurrency=concurrency, cache_dir=f"{tmp}/c")
        start = time.perf_counter()
        result = judge_pairs(data, judge="openai:bench-judge", run=run, out=f"{tmp}/run",
                             output=RunOutput(progress=False), intervals=Intervals(n_boot=100))
        wall = time.perf_counter() - start
    return {"pairs": n, "sent": result["n_sent"], "rss_inputs_mb": round(before), "wall_s": round(wall, 1),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[14020, 100000])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = quick_args(parser, sizes=[200])
    if args.one:
        print(json.dumps(one(args.one, args.concurrency, args.base_url)))
        return 0
    from _fast_server import fast_server

    print(f"{'pairs':>8} {'sent':>8} {'RSS with inputs MB':>18} {'peak RSS MB':>11} {'wall s':>7}")
    with fast_server(latency=0.0) as server:
        for n in args.sizes:
            out = subprocess.run([sys.executable, __file__, "--one", str(n), "--concurrency", str(args.concurrency),
                                  "--base-url", server.base_url], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{row['pairs']:>8,} {row['sent']:>8,} {row['rss_inputs_mb']:>18} {row['peak_mb']:>11} "
                  f"{row['wall_s']:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
