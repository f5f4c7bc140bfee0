"""Coverage of the judge card's bootstrap interval for Cohen's kappa, on simulated judges of known kappa.

The reference judge draws win/tie/loss from fixed shares; the candidate copies the reference's
outcome with probability ``rho`` and otherwise draws independently from the same shares. With equal
shares the true kappa is exactly ``rho`` (observed agreement ``rho + (1 - rho) * e``, chance agreement
``e``). For each setting, many runs are simulated and the share of 95% intervals
(:func:`metric_arena.stats.kappa_interval`, the one ``calibrate`` uses) that hold the true kappa is
printed, with its Monte Carlo standard error, the mean width, and the raw agreement expected.

Run: python benchmarks/kappa_coverage.py [--runs 1000] [--n-boot 1000] [--pairs 50 200 1000] [--rho 0.3 0.6 0.9]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from metric_arena.stats import cohen_kappa, kappa_interval

SHARES = np.array([0.45, 0.20, 0.35])  # win, tie, loss: a system a bit better than LFRQA, some ties
LABELS = np.array(["win", "tie", "loss"])


def simulate(n: int, rho: float, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    reference = rng.choice(3, size=n, p=SHARES)
    fresh = rng.choice(3, size=n, p=SHARES)
    candidate = np.where(rng.random(n) < rho, reference, fresh)
    return list(LABELS[reference]), list(LABELS[candidate])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--pairs", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--rho", type=float, nargs="+", default=[0.3, 0.6, 0.9])
    parser.add_argument("--confidence", type=float, default=0.95)
    args = quick_args(parser, runs=20, n_boot=50, pairs=[50], rho=[0.6])
    rng = np.random.default_rng(20)
    chance = float((SHARES**2).sum())
    print(f"{args.runs} simulated runs per row, {args.n_boot} bootstrap rounds, nominal {args.confidence:.0%}")
    print(f"{'pairs':>6} {'true kappa':>10} {'agreement':>9} {'coverage':>9} {'± s.e.':>7} {'mean width':>10} "
          f"{'mean kappa':>10} {'s/run':>7}")
    for n in args.pairs:
        for rho in args.rho:
            started = time.perf_counter()
            hits, widths, kappas = 0, [], []
            for run in range(args.runs):
                a, b = simulate(n, rho, rng)
                low, high = kappa_interval(a, b, n_boot=args.n_boot, seed=run, confidence=args.confidence)
                hits += low <= rho <= high
                widths.append(high - low)
                kappas.append(cohen_kappa(a, b))
            coverage = hits / args.runs
            se = math.sqrt(coverage * (1 - coverage) / args.runs)
            per_run = (time.perf_counter() - started) / args.runs
            print(f"{n:>6} {rho:>10.2f} {rho + (1 - rho) * chance:>9.3f} {coverage:>9.3f} {se:>7.3f} "
                  f"{np.mean(widths):>10.3f} {np.mean(kappas):>10.3f} {per_run:>7.4f}")


if __name__ == "__main__":
    main()
