"""Ensemble runs (several judges voting): how far each pair of judges agrees, from each judgment's own outcome."""

from __future__ import annotations

from itertools import combinations

from metric_arena.report._runs import Run
from metric_arena.stats import cohen_kappa, judge_outcomes

__all__ = ["judge_agreement"]


def judge_agreement(runs: list[Run]) -> dict | None:
    """Pairwise Cohen's kappa and raw agreement between the judges of ensemble runs; None without one.

    Each judge's outcome on a pair comes from its own judgments (both orders merged as the judge
    merges them); pairs a judge failed on are left out of that judge's comparisons.
    """
    verdicts = [v for run in runs if len(run.judges) > 1 for v in run.verdicts]
    judges = sorted({j for run in runs if len(run.judges) > 1 for j in run.judges})
    if len(judges) < 2:
        return None
    outcomes = {judge: judge_outcomes(verdicts, judge) for judge in judges}
    pairs = []
    for a, b in combinations(judges, 2):
        shared = sorted(set(outcomes[a]) & set(outcomes[b]))
        x, y = [outcomes[a][k] for k in shared], [outcomes[b][k] for k in shared]
        kappa = cohen_kappa(x, y)
        pairs.append({"judge_a": a, "judge_b": b, "n": len(shared),
                      "agreement": sum(p == q for p, q in zip(x, y)) / len(shared) if shared else None,
                      "kappa": None if kappa != kappa else kappa})
    return {"judges": judges, "runs": [str(run.path) for run in runs if len(run.judges) > 1], "pairs": pairs}
