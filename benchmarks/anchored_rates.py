"""Coverage and width of anchored rates (PPI++), reference-only and raw cheap estimates, on simulated judges.

A system's true win rate against the reference judge is p (0.2 to 0.8). Each of N = 3,000 pairs has a true
outcome Y ~ Bernoulli(p) (what the reference judge says); a cheap judge of known behaviour gives its own:

- ``shifted``:  agrees, except that it calls losses wins often enough to add 10 points (p + 0.10);
- ``length``:   agrees 70% of the time, otherwise picks the longer answer (the system's answers are longer
                 than its opponent's 69% of the time);
- ``position``: agrees 70% of the time, otherwise picks the answer shown first (shown first: 50%);
- ``noisy``:    agrees 75% of the time, otherwise a coin flip.

A seeded simple random subset of n pairs (100, 300, 1000) gets the reference's verdict. Per run, three 95%
intervals are checked against p: the anchored one (:func:`metric_arena.stats.anchored_rate`), the
reference-only Wilson interval on the n anchors and the raw cheap judge's Wilson interval on all N. Printed
per judge and n: coverage (worst and mean over the p's), mean widths, how much narrower the anchored interval
is than the reference-only one, and the two judges' Cohen's kappa.

Run: python benchmarks/anchored_rates.py [--runs 1000] [--quick]
Exits 1 when, at n >= 300, the anchored coverage over all runs of a judge falls below 93% (88% with --quick),
when the raw cheap interval of the shifted judge covers p in 20% of runs or more, or when, with kappa >= 0.6
and n <= N/10, the anchored interval is not 20% narrower than the reference-only one. (With n a large share
of N the gain is bounded: Var(anchored) / Var(reference-only) = n/N + (1 - n/N)(1 - rho^2), rho the two
judges' correlation; at n = 1,000 of 3,000 and rho^2 = 0.45 the interval is at best 16% narrower.)
--quick: 60 runs, n = 300, p in {0.2, 0.5, 0.8}.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from metric_arena.stats import Intervals, anchored_difference, anchored_rate, cohen_kappa

JUDGES = ("shifted", "length", "position", "noisy")


def cheap_verdicts(kind: str, truth: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """The cheap judge's 0/1 verdicts on pairs whose true outcomes are ``truth``."""
    n = truth.size
    if kind == "shifted":
        flip = rng.random(n) < 0.10 / (1.0 - p)
        return np.where(truth == 0, flip.astype(float), truth)
    if kind == "length":
        longer = (rng.normal(0.5, 1.0, n) > 0).astype(float)  # the system's answer is the longer one
        return np.where(rng.random(n) < 0.70, truth, longer)
    if kind == "position":
        first = (rng.random(n) < 0.5).astype(float)  # the system's answer is shown first
        return np.where(rng.random(n) < 0.70, truth, first)
    if kind == "noisy":
        return np.where(rng.random(n) < 0.75, truth, (rng.random(n) < 0.5).astype(float))
    raise ValueError(kind)


def one_setting(kind: str, p: float, n: int, big_n: int, runs: int, rng: np.random.Generator) -> dict:
    hits = {"anchored": 0, "reference_only": 0, "cheap": 0}
    widths = {key: [] for key in hits}
    kappas = []
    intervals = Intervals(confidence=0.95)
    for _ in range(runs):
        truth = (rng.random(big_n) < p).astype(float)
        cheap = cheap_verdicts(kind, truth, p, rng)
        anchors = rng.choice(big_n, size=n, replace=False)
        result = anchored_rate(truth[anchors], cheap[anchors], cheap, intervals=intervals)
        for key, ci in (("anchored", result["ci"]), ("reference_only", result["reference_only"]["ci"]),
                        ("cheap", result["cheap"]["ci"])):
            hits[key] += ci[0] <= p <= ci[1]
            widths[key].append(ci[1] - ci[0])
        kappas.append(cohen_kappa(truth[anchors].tolist(), cheap[anchors].tolist()))
    return {"coverage": {k: v / runs for k, v in hits.items()}, "width": {k: float(np.mean(v)) for k, v in widths.items()},
            "kappa": float(np.mean(kappas))}


def gate_setting(drop: float, n: int, big_n: int, runs: int, rng: np.random.Generator) -> dict:
    """How often ``compare --anchored`` calls NEW worse (its rule: the anchored difference's 95% interval wholly
    below 0) when NEW's true rate is ``drop`` below BASE's 0.5. The cheap judge is merely noisy on BASE and
    shifted +10 points in NEW's favour: the raw cheap rates' gate would miss real drops and hide regressions."""
    called, raw_called = 0, 0
    for _ in range(runs):
        sides = []
        for p, kind in ((0.5, "noisy"), (0.5 - drop, "shifted")):
            truth = (rng.random(big_n) < p).astype(float)
            cheap = cheap_verdicts(kind, truth, p, rng)
            anchors = rng.choice(big_n, size=n, replace=False)
            sides.append((anchored_rate(truth[anchors], cheap[anchors], cheap), cheap.mean()))
        (base, raw_base), (new, raw_new) = sides
        called += anchored_difference(base, new)["difference_ci"][1] < 0
        raw_half = 1.96 * np.sqrt(raw_base * (1 - raw_base) / big_n + raw_new * (1 - raw_new) / big_n)
        raw_called += raw_new - raw_base + raw_half < 0
    return {"anchored": called / runs, "raw": raw_called / runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=3000, help="N, the pairs the cheap judge judges")
    parser.add_argument("--anchors", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.2, 0.35, 0.5, 0.65, 0.8])
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    if args.quick:
        args.runs, args.anchors, args.rates = 60, [300], [0.2, 0.5, 0.8]
    rng = np.random.default_rng(29)
    started = time.perf_counter()
    print(f"{args.runs} runs per (judge, true rate, n); N = {args.pairs:,}; true rates {args.rates}; nominal 95%")
    print(f"{'judge':<9} {'n':>5} {'kappa':>6} | {'coverage: anchored':>18} {'ref-only':>9} {'raw cheap':>9} | "
          f"{'width: anchored':>15} {'ref-only':>9} {'raw':>6} | {'narrower':>8}")
    failures = []
    for kind in JUDGES:
        for n in args.anchors:
            rows = [one_setting(kind, p, n, args.pairs, args.runs, rng) for p in args.rates]
            cov = {k: [r["coverage"][k] for r in rows] for k in ("anchored", "reference_only", "cheap")}
            wid = {k: float(np.mean([r["width"][k] for r in rows])) for k in ("anchored", "reference_only", "cheap")}
            kappa = float(np.mean([r["kappa"] for r in rows]))
            narrower = 1.0 - wid["anchored"] / wid["reference_only"]

            def cell(values):
                return f"{min(values):.3f}/{np.mean(values):.3f}"

            print(f"{kind:<9} {n:>5} {kappa:>6.2f} | {cell(cov['anchored']):>18} {cell(cov['reference_only']):>9} "
                  f"{cell(cov['cheap']):>9} | {wid['anchored']:>15.3f} {wid['reference_only']:>9.3f} "
                  f"{wid['cheap']:>6.3f} | {narrower:>8.0%}")
            if np.mean(cov["anchored"]) < (0.88 if args.quick else 0.93) and n >= 300:
                failures.append(f"{kind} n={n}: anchored coverage {np.mean(cov['anchored']):.3f} over all runs")
            if kind == "shifted" and max(cov["cheap"]) >= 0.20:
                failures.append(f"shifted n={n}: the raw cheap interval covers p in {max(cov['cheap']):.0%} of runs")
            if kappa >= 0.6 and narrower < 0.20 and n <= args.pairs // 10:  # with n/N large, the gain is bounded
                failures.append(f"{kind} n={n}: kappa {kappa:.2f} but the anchored interval only {narrower:.0%} narrower")
    print("coverage cells: worst/mean over the true rates; width: mean over runs and rates; narrower: 1 - anchored "
          "width / reference-only width.")
    print(f"compare --anchored --fail-if-worse (NEW truly 0 / 5 / 10 points below BASE's 0.5; cheap judge noisy on "
          f"BASE, +10 points for NEW; one-sided limit 2.5%), n = 300 of N = {args.pairs:,}:")
    for drop in (0.0, 0.05, 0.10):
        gate = gate_setting(drop, 300, args.pairs, args.runs, rng)
        print(f"  drop {drop:.2f}: called worse in {gate['anchored']:.1%} of runs (the raw cheap rates' gate: "
              f"{gate['raw']:.1%})")
        if drop == 0.0 and gate["anchored"] > (0.06 if args.quick else 0.035):
            failures.append(f"the anchored gate calls an equal NEW worse in {gate['anchored']:.1%} of runs")
    print(f"{time.perf_counter() - started:.1f} s")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
