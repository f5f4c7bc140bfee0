"""Coverage of the citation scores' intervals (:func:`metric_arena.stats.mean_interval`) on simulated per-answer
shares of known mean.

Per-answer scores such as reference recall are shares in [0, 1] with many exact 0s and 1s; each scenario draws
them from a mixture (a point mass at 0, one at 1, the rest Beta(a, b)) whose mean is known exactly, ``--runs``
times for each answer count n, and counts how often the 95% interval holds the true mean. Exits 1 when a
coverage falls below ``--floor`` (default 0.90).

    python benchmarks/mean_interval_coverage.py            # 1,000 runs per cell
    python benchmarks/mean_interval_coverage.py --quick    # 100 runs, two scenarios
"""

from __future__ import annotations

import argparse
import sys
import time

import _setup  # noqa: F401 - this checkout first on sys.path
from _setup import quick_args  # noqa: E402
import numpy as np

#: (name, share of 0s, share of 1s, Beta a, Beta b)
SCENARIOS = [
    ("mostly 1s (good citations)", 0.05, 0.70, 4.0, 2.0),
    ("spread out", 0.15, 0.15, 2.0, 2.0),
    ("mostly 0s (poor citations)", 0.60, 0.05, 1.0, 4.0),
    ("no point masses", 0.0, 0.0, 5.0, 3.0),
]


def draw(rng, n, zeros, ones, a, b):
    u = rng.random(n)
    values = rng.beta(a, b, n)
    values[u < zeros] = 0.0
    values[(u >= zeros) & (u < zeros + ones)] = 1.0
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--floor", type=float, default=0.90)
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    from metric_arena.stats import mean_interval

    runs = 100 if args.quick else args.runs
    scenarios = SCENARIOS[:2] if args.quick else SCENARIOS
    sizes = (10, 50) if args.quick else (5, 10, 30, 100, 500)
    rng = np.random.default_rng(0)
    started, ok = time.perf_counter(), True
    print(f"95% interval coverage, {runs} runs per cell (n: answers with the score defined)")
    print(f"{'scenario':<30} " + " ".join(f"{'n=' + str(n):>8}" for n in sizes))
    for name, zeros, ones, a, b in scenarios:
        truth = ones + (1 - zeros - ones) * a / (a + b)
        cells = []
        for n in sizes:
            hits = 0
            for _ in range(runs):
                low, high = mean_interval(draw(rng, n, zeros, ones, a, b), n_boot=500,
                                          seed=int(rng.integers(1 << 31)))
                hits += low <= truth <= high
            cells.append(hits / runs)
            ok &= hits / runs >= args.floor
        print(f"{name:<30} " + " ".join(f"{c:>8.1%}" for c in cells))
    print(f"elapsed {time.perf_counter() - started:.1f} s; {'ok' if ok else f'coverage under {args.floor:.0%}'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
