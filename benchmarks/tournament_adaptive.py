"""The adaptive tournament's stopping rule on simulated tournaments of known truth: its error rate, its
power, and the judgments it uses against the exhaustive complete-pairs schedule.

Systems of known Bradley–Terry strength (LFRQA at 1) play every question against LFRQA (as the
tournament does first), then the pairs are judged in rounds exactly as ``tournament(adaptive=True)``
judges them: :meth:`metric_arena.stats.SequentialRanking.look` ranks the systems by their
Bradley–Terry ratings on every battle and reads each pair's record, and
:meth:`~metric_arena.stats.SequentialRanking.plan` decides the next round or stops. Only the judge
is simulated: each pair judgment is a draw with the Bradley–Terry probability. No server, numpy only.

Measured, over ``--runs`` simulated tournaments per scenario (seeded; the same figures on every run):

- **equal**: two systems of equal strength, judged until the questions run out (no budget): the share
  of runs that ever declare them separated, at any look (the rule promises at most ``alpha``).
- **equal pair**: four systems, two of them equal: the same share for that pair, and the share of runs
  with any wrong declaration (the family-wise error).
- **separable, --max-judgments**: the same within a budget of half the shared questions: the most
  any run spends (never more than the budget).
- **separable**: five close systems of distinct strength (as in the paper: their ratings against
  LFRQA alone overlap): the share of runs that separate the whole ranking, and the pair judgments
  used against the exhaustive schedule (every pair on every shared question).

    python benchmarks/tournament_adaptive.py [--runs 200] [--questions 1400] [--round-size 100] [--alpha 0.05]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

import _setup  # noqa: F401 - this checkout first on sys.path
from _setup import quick_args  # noqa: E402
from metric_arena.stats import BattleCounts, SequentialRanking, wilson_interval  # noqa: E402

REFERENCE = "LFRQA"
SCENARIOS = {
    "equal": {"a": 1.5, "b": 1.5},
    "equal pair": {"s1": 3.0, "s2": 1.4, "s3": 1.4, "s4": 0.5},
    "separable": {"s1": 3.0, "s2": 2.0, "s3": 1.4, "s4": 0.7, "s5": 0.45},
}


class PeekingRule(SequentialRanking):
    """For contrast: the same rounds, but each look reads a fixed-sample 95% interval (no correction for
    repeated looks nor for several pairs): what peeking at ordinary intervals does."""

    def interval(self, record: tuple[float, float, float]) -> tuple[float, float]:
        wins, ties, losses = record
        n = int(round(wins + ties + losses))
        return wilson_interval(int(round(wins + ties / 2)), n) if n else (0.0, 1.0)


def simulate(strength: dict[str, float], *, questions: int, round_size: int, alpha: float, rng: np.random.Generator,
             max_judgments: int | None = None, peeking: bool = False) -> dict:
    """One adaptive tournament: what it stopped on, the pair judgments it used, and every wrong declaration
    it ever made (a pair separated the wrong way round, or two equal systems separated)."""
    systems = list(strength)
    players = [REFERENCE, *systems]
    index = {p: i for i, p in enumerate(players)}
    wins = np.zeros((len(players), len(players)))
    for s in systems:  # every system against LFRQA on every question, before the rounds
        p = strength[s] / (strength[s] + 1.0)
        won = rng.binomial(questions, p)
        wins[index[s], 0] += won
        wins[0, index[s]] += questions - won
    # each pair's judgments in question order, drawn up front: the first n are the pair's first n questions
    draws = {(a, b): rng.random(questions) < strength[a] / (strength[a] + strength[b])
             for a, b in itertools.combinations(systems, 2)}
    rule = (PeekingRule if peeking else SequentialRanking)(systems, alpha=alpha, tuned_n=min(200, questions))
    taken = dict.fromkeys(draws, 0)
    spent, rounds, wrong = 0, 0, set()
    while True:
        ranking, records = rule.look(BattleCounts(players, wins, np.zeros_like(wins)), anchor=REFERENCE)
        left = float("inf") if max_judgments is None else max_judgments - spent
        step = rule.plan(records, ranking, n_max=questions, round_size=round_size, budget_left=left, taken=taken)
        for a, b in draws:  # every look: is any pair declared separated the wrong way (or at all, if equal)?
            low, high = rule.interval(records[(a, b)])
            if (low > 0.5 and strength[a] <= strength[b]) or (high < 0.5 and strength[a] >= strength[b]):
                wrong.add((a, b))
        if step.stopped:
            break
        for (a, b), n in step.grown.items():
            won = int(draws[(a, b)][taken[(a, b)]:n].sum())
            wins[index[a], index[b]] += won
            wins[index[b], index[a]] += n - taken[(a, b)] - won
            spent += n - taken[(a, b)]
            taken[(a, b)] = n
        rounds += 1
    return {"stopped": step.stopped, "pair_judgments": spent, "rounds": rounds, "wrong": wrong}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--questions", type=int, default=1400, help="shared questions per pair (the paper's column C)")
    parser.add_argument("--round-size", type=int, default=100)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = quick_args(parser, runs=5, questions=200, round_size=50)
    rng = np.random.default_rng(args.seed)
    print(f"{args.runs} simulated tournaments per scenario, {args.questions} shared questions per pair, rounds of "
          f"{args.round_size}, alpha {args.alpha}")
    budget = args.questions // 2
    cases = [(name, strength, False, None) for name, strength in SCENARIOS.items()]
    cases += [(f"separable, --max-judgments {budget}", SCENARIOS["separable"], False, budget)]
    cases += [(f"{name}, peeking at fixed 95% intervals (for contrast)", SCENARIOS[name], True, None)
              for name in ("equal", "equal pair")]
    for name, strength, peeking, max_judgments in cases:
        start = time.perf_counter()
        runs = [simulate(strength, questions=args.questions, round_size=args.round_size, alpha=args.alpha, rng=rng,
                         peeking=peeking, max_judgments=max_judgments) for _ in range(args.runs)]
        seconds = time.perf_counter() - start
        exhaustive = len(list(itertools.combinations(strength, 2))) * args.questions
        used = np.array([r["pair_judgments"] for r in runs])
        equal = [pair for pair in itertools.combinations(strength, 2) if strength[pair[0]] == strength[pair[1]]]
        any_wrong = np.mean([bool(r["wrong"]) for r in runs])
        stops = {reason: sum(r["stopped"] == reason for r in runs) for reason in sorted({r["stopped"] for r in runs})}
        line = f"{name} ({', '.join(f'{s} {v:g}' for s, v in strength.items())}; LFRQA 1): "
        if equal:
            false = np.mean([any(pair in r["wrong"] for pair in equal) for r in runs])
            line += f"equal systems declared separated in {false:.1%} of runs; "
        separated = np.mean([r["stopped"] == "separated" for r in runs])
        sep_used = used[[r["stopped"] == "separated" for r in runs]]
        line += (f"any wrong declaration in {any_wrong:.1%}; ranking separated in {separated:.1%}; pair judgments "
                 f"median {np.median(used):,.0f} ({np.median(used) / exhaustive:.1%} of the exhaustive {exhaustive:,})")
        if len(sep_used):
            line += f", median when separated {np.median(sep_used):,.0f} ({np.median(sep_used) / exhaustive:.1%})"
        if max_judgments is not None:
            line += f"; most used {used.max():,} (budget {max_judgments:,})"
        line += f"; stopped {stops}; {seconds:.1f} s"
        print(line)


if __name__ == "__main__":
    main()
