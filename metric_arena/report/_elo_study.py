"""The paper's Elo study (Table 5): ratings from battles against LFRQA only, beside ratings with the
complete pairs (system against system), both with intervals, and whether neighbouring systems'
intervals are separated."""

from __future__ import annotations

from metric_arena.report._runs import Run
from metric_arena.stats import BattleCounts, bootstrap_bradley_terry

__all__ = ["elo_study"]


def _view(runs: list[Run], reference: str, *, n_boot: int, seed: int, confidence: float) -> dict:
    battles = [(run.system, run.opponent, v["outcome"]) for run in runs for v in run.verdicts
               if v.get("outcome") is not None]
    players = sorted({p for run in runs for p in (run.system, run.opponent)})
    counts = BattleCounts.from_battles(battles, players)
    anchor = reference if reference in players else None
    ratings = bootstrap_bradley_terry(counts, anchor=anchor, n_boot=n_boot, seed=seed, confidence=confidence)
    ranked = sorted((p for p in players if ratings[p]["n_battles"]), key=lambda p: (-ratings[p]["rating"], p))
    neighbours = [{"upper": upper, "lower": lower,
                   "separated": ratings[upper]["rating_ci"][0] > ratings[lower]["rating_ci"][1]}
                  for upper, lower in zip(ranked, ranked[1:])]
    return {
        "n_battles": int(counts.n_battles),
        "ratings": {p: {"rating": ratings[p]["rating"], "rating_ci": ratings[p]["rating_ci"]} for p in ranked},
        "ranking": ranked,
        "neighbours": neighbours,
        "all_separated": all(n["separated"] for n in neighbours),
    }


def elo_study(runs: list[Run], reference: str, *, n_boot: int, seed: int, confidence: float) -> dict | None:
    """Both views, or None when there are no system-against-system runs (the views would be the same)."""
    against_reference = [run for run in runs if run.opponent == reference]
    if len(against_reference) == len(runs) or not against_reference:
        return None
    stats = dict(n_boot=n_boot, seed=seed, confidence=confidence)
    return {"against_reference_only": _view(against_reference, reference, **stats),
            "with_complete_pairs": _view(runs, reference, **stats)}
