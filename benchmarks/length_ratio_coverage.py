"""Coverage of the length-ratio picture's per-bin intervals on simulated verdicts of known truth.

A system's answers have a log-normal length ratio to LFRQA's (median ``--median-ratio``, sd ``--sd`` in
log2 units); the judge's chance of a win rises with the ratio (log-odds ``--slope`` per doubling) and a
tie has a fixed chance. Each run draws ``--n`` verdicts, bins them as ``report`` does
(:func:`metric_arena.report.views.length_ratio_curves`) and checks whether each bin's 95% Wilson interval
holds the bin's true win rate and win+tie rate (computed from 2 million draws). Prints the coverage per
bin (bins with under 5 verdicts in a run are not counted for that run).

    python benchmarks/length_ratio_coverage.py --n 500 --runs 1000
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path
from _setup import quick_args  # noqa: E402
import numpy as np


def draw(rng, n, args):
    ratio = 2.0 ** rng.normal(math.log2(args.median_ratio), args.sd, n)
    p_win = (1 - args.tie) / (1 + np.exp(-(args.intercept + args.slope * np.log2(ratio))))
    u = rng.random(n)
    outcome = np.where(u < p_win, "win", np.where(u < p_win + args.tie, "tie", "loss"))
    return ratio, outcome, p_win


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--median-ratio", type=float, default=1.1)
    parser.add_argument("--sd", type=float, default=0.8)
    parser.add_argument("--slope", type=float, default=0.8)
    parser.add_argument("--intercept", type=float, default=-0.2)
    parser.add_argument("--tie", type=float, default=0.15)
    args = quick_args(parser, runs=20)
    from metric_arena.report import Run
    from metric_arena.report.views import RATIO_EDGES, length_ratio_curves

    rng = np.random.default_rng(0)
    ratio, _, p_win = draw(rng, 2_000_000, args)
    edges = list(zip(RATIO_EDGES, RATIO_EDGES[1:]))
    truth = []
    for low, high in edges:
        inside = (ratio >= low) & (ratio < high)
        truth.append((p_win[inside].mean(), (p_win[inside] + args.tie).mean()))
    hits = np.zeros((len(edges), 2))
    counted = np.zeros(len(edges))
    for _ in range(args.runs):
        r, outcome, _ = draw(rng, args.n, args)
        words_b = 200
        verdicts = [{"qid": str(k), "outcome": str(o), "style_a": {"words": max(1, int(round(x * words_b)))},
                     "style_b": {"words": words_b}} for k, (x, o) in enumerate(zip(r, outcome))]
        run = Run(Path("sim"), "sys", "LFRQA", [], {}, verdicts)
        for k, b in enumerate(length_ratio_curves([run], reference="LFRQA")["sys"]["bins"]):
            if b["n"] < 5:
                continue
            counted[k] += 1
            for j, key in enumerate(("win_rate", "win_tie_rate")):
                low, high = b[f"{key}_ci"]
                hits[k, j] += low <= truth[k][j] <= high
    print(f"{args.runs} runs of {args.n} verdicts; 95% Wilson intervals per bin (true rate from 2M draws)")
    for k, (low, high) in enumerate(edges):
        name = f"{low:g}-{high:g}x" if high != math.inf else f"{low:g}x+"
        if counted[k]:
            print(f"  {name:>10}: win rate {hits[k, 0] / counted[k]:.1%}, win+tie {hits[k, 1] / counted[k]:.1%} "
                  f"({int(counted[k])} runs with >= 5 verdicts in the bin)")


if __name__ == "__main__":
    main()
