"""Error rates of ``compare --metric``'s gate (:func:`metric_arena.stats.paired_bootstrap`) on simulated runs
of known truth.

Each simulated pair of runs scores the same N items twice: a per-item difficulty shared by both runs (what
makes the test paired) plus noise, the new run shifted by a known ``delta``. The gate calls NEW worse when the
whole 95% interval of new − base lies below 0. Printed per N and delta: the share of runs called worse (the
false-alarm rate where delta >= 0, the power where delta < 0) with its Monte Carlo standard error, and the
coverage of the interval (share holding the true delta). Values are graded scores in [0, 1] (the kind a
non-win/tie/loss metric gives) and 0/1 outcomes.

Run: python benchmarks/metric_gate.py [--runs 1000] [--n 30 100 500] [--quick]
``--quick`` (CI): 120 runs at N = 60, and exits 1 when the no-difference false-alarm rate exceeds 6% or the
power against a graded drop of 0.15 is below 80%.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from metric_arena.stats import Intervals, paired_bootstrap


def simulate(n: int, delta: float, kind: str, rng: np.random.Generator) -> tuple[dict, dict]:
    difficulty = rng.beta(2, 2, size=n)
    if kind == "binary":
        base = (rng.random(n) < difficulty).astype(float)
        new = (rng.random(n) < np.clip(difficulty + delta, 0, 1)).astype(float)
    else:
        base = np.clip(difficulty + rng.normal(0, 0.1, n), 0, 1)
        new = np.clip(difficulty + delta + rng.normal(0, 0.1, n), 0, 1)
    qids = [f"q{i}" for i in range(n)]
    return dict(zip(qids, base)), dict(zip(qids, new))


def true_difference(delta: float, kind: str) -> float:
    """The population mean of new − base (clipping to [0, 1] moves it off ``delta``), from a million draws."""
    base, new = simulate(1_000_000, delta, kind, np.random.default_rng(12345))
    return float(np.mean(np.fromiter(new.values(), float)) - np.mean(np.fromiter(base.values(), float)))


def rates(n: int, delta: float, kind: str, runs: int, n_boot: int, rng: np.random.Generator) -> tuple[float, float]:
    """(share of runs the gate calls worse, share of intervals holding the true difference)."""
    truth = true_difference(delta, kind)
    worse = held = 0
    for run in range(runs):
        base, new = simulate(n, delta, kind, rng)
        low, high = paired_bootstrap(new, base, intervals=Intervals(n_boot=n_boot, seed=run))["difference_ci"]
        worse += high < 0
        held += low <= truth <= high
    return worse / runs, held / runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--n", type=int, nargs="+", default=[30, 100, 500])
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.0, -0.05, -0.15])
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    if args.quick:
        args.runs, args.n_boot, args.n, args.deltas = 120, 300, [60], [0.0, -0.15]
    rng = np.random.default_rng(0)
    print(f"{'values':>7} {'N':>5} {'delta':>6} {'called worse':>12} {'± MC se':>8} {'CI coverage':>11}")
    found = {}
    for kind in ("graded", "binary"):
        for n in args.n:
            for delta in args.deltas:
                share, coverage = rates(n, delta, kind, args.runs, args.n_boot, rng)
                se = math.sqrt(share * (1 - share) / args.runs)
                found[(kind, n, delta)] = share
                print(f"{kind:>7} {n:>5} {delta:>6.2f} {share:>12.1%} {se:>8.1%} {coverage:>11.1%}")
    if args.quick:
        alarms = [share for (kind, n, delta), share in found.items() if delta == 0.0]
        power = [share for (kind, n, delta), share in found.items() if delta == -0.15 and kind == "graded"]
        if max(alarms) > 0.06 or min(power) < 0.8:
            print(f"FAILED: false alarms {max(alarms):.1%} (at most 6%), power {min(power):.1%} (at least 80%)")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
