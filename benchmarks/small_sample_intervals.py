"""Coverage of the win-rate interval for few judged pairs, on simulated outcomes of known rate.

Below 10 pairs, or when every pair has the same outcome, :func:`metric_arena.stats.bootstrap_interval`
gives the Wilson score interval instead of a percentile bootstrap (which would have zero width). For each
number of pairs and true win rate, many runs of that many Bernoulli outcomes are drawn and the share of
95% intervals holding the true rate is printed (with its Monte Carlo standard error), beside the share the
plain percentile bootstrap would hold.

Run: python benchmarks/small_sample_intervals.py [--runs 2000] [--pairs 1 3 5 9 10 20] [--rates 0.1 0.5 0.9]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from metric_arena.stats import bootstrap_interval


def percentile_bootstrap(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[float, float]:
    means = rng.binomial(values.size, values.mean(), size=n_boot) / values.size
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--n-boot", type=int, default=500)
    parser.add_argument("--pairs", type=int, nargs="+", default=[1, 3, 5, 9, 10, 20, 50])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.3, 0.5, 0.7, 0.9])
    args = quick_args(parser, runs=50, n_boot=100, pairs=[3, 20], rates=[0.3])
    rng = np.random.default_rng(0)
    print(f"{'pairs':>5} {'true rate':>9} {'coverage':>9} {'± MC se':>8} {'plain bootstrap':>16} {'mean width':>10}")
    for n in args.pairs:
        for rate in args.rates:
            held = plain = 0
            widths = []
            for run in range(args.runs):
                values = (rng.random(n) < rate).astype(float)
                low, high = bootstrap_interval(values, n_boot=args.n_boot, seed=run)
                held += low <= rate <= high
                widths.append(high - low)
                p_low, p_high = percentile_bootstrap(values, args.n_boot, rng)
                plain += p_low <= rate <= p_high
            share = held / args.runs
            se = math.sqrt(share * (1 - share) / args.runs)
            print(f"{n:>5} {rate:>9.1f} {share:>9.1%} {se:>8.1%} {plain / args.runs:>16.1%} "
                  f"{float(np.mean(widths)):>10.2f}")


if __name__ == "__main__":
    main()
