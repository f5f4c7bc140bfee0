"""Bradley–Terry ratings with bootstrap intervals on 200k synthetic battles among 12 players.

Prints the seconds taken by each stage and the peak memory. Run: python benchmarks/bradley_terry.py
[--battles 200000] [--players 12] [--n-boot 1000]
"""

from __future__ import annotations

from _setup import quick_args

import argparse
import resource
import time
import tracemalloc

import numpy as np

from metric_arena.stats import (
    BattleCounts,
    bootstrap_bradley_terry,
    expected_score,
    fit_bradley_terry,
)


def synthetic_battles(n_battles: int, n_players: int, seed: int = 0, tie: float = 0.15):
    """Battles like a leaderboard's: every system vs LFRQA, plus some system vs system pairs."""
    rng = np.random.default_rng(seed)
    players = ["LFRQA", *[f"system-{k:02d}" for k in range(n_players - 1)]]
    truth = {"LFRQA": 1000.0, **{p: float(r) for p, r in zip(players[1:], rng.normal(1000, 120, n_players - 1))}}
    a = rng.integers(1, n_players, size=n_battles)
    b = np.where(rng.random(n_battles) < 0.7, 0, rng.integers(1, n_players, size=n_battles))  # 70% vs LFRQA
    b = np.where(a == b, 0, b)
    score = np.array([expected_score(truth[players[i]], truth[players[j]]) for i, j in zip(a, b)])
    u = rng.random(n_battles)
    outcome = np.where(u < tie, "tie", np.where(u < tie + (1 - tie) * score, "win", "loss"))
    return [(players[i], players[j], o) for i, j, o in zip(a, b, outcome)], truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--battles", type=int, default=200_000)
    parser.add_argument("--players", type=int, default=12)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = quick_args(parser, battles=2_000, players=6, n_boot=50)

    battles, truth = synthetic_battles(args.battles, args.players)
    t0 = time.perf_counter()
    counts = BattleCounts.from_battles(battles)
    t1 = time.perf_counter()
    point = fit_bradley_terry(counts, anchor="LFRQA")
    t2 = time.perf_counter()
    result = bootstrap_bradley_terry(counts, anchor="LFRQA", n_boot=args.n_boot, seed=0)
    t3 = time.perf_counter()
    # Memory measured on a second pass (tracemalloc slows Python code down, so not during timing).
    tracemalloc.start()
    bootstrap_bradley_terry(BattleCounts.from_battles(battles), anchor="LFRQA", n_boot=args.n_boot, seed=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"battles: {counts.n_battles:,}  players: {len(counts.players)}  bootstrap rounds: {args.n_boot}")
    print(f"aggregate battles into counts: {t1 - t0:.3f} s")
    print(f"maximum-likelihood fit:        {t2 - t1:.4f} s")
    print(f"bootstrap ({args.n_boot} fits):        {t3 - t2:.3f} s")
    print(f"total:                         {t3 - t0:.3f} s")
    print(f"peak traced memory (aggregation + bootstrap): {peak / 2**20:.1f} MiB")
    print(f"peak RSS of the process (includes the battle list):    {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    # Ties shrink the fitted gaps (a tie is half a win), so compare with the truth only by order.
    order_fit = sorted(point, key=point.get)
    order_true = sorted(truth, key=truth.get)
    rho = np.corrcoef([order_fit.index(p) for p in counts.players], [order_true.index(p) for p in counts.players])[0, 1]
    widths = [r["rating_ci"][1] - r["rating_ci"][0] for p, r in result.items() if p != "LFRQA"]
    print(f"rank correlation with the true ratings: {rho:.3f}; median 95% interval width: {np.median(widths):.1f} Elo")


if __name__ == "__main__":
    main()
