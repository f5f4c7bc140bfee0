"""The paper's Elo study (Table 5): ratings from battles against LFRQA only, beside ratings with the
complete pairs (system against system), both with intervals, and whether neighbouring systems'
intervals are separated.

When the pair runs come from one ``tournament`` whose ``tournament.json`` lists nested samples
(``--sample 700 --sample 1400``), there is one view per sample size, ``with_complete_pairs_<N>``: the
pairs' battles on the first ``N`` questions of the shared order (each pair was judged once, on the
largest sample), as the paper's columns B and C."""

from __future__ import annotations

from lfrqa.kernel import loads_json
from metric_arena.report._runs import Run
from metric_arena.report.views import adaptive_pairs, win_matrix
from metric_arena.stats import BattleCounts, Intervals, bootstrap_bradley_terry, intervals_separated
from metric_arena.records import TOURNAMENT_FILE

__all__ = ["elo_study"]



def _view(runs: list[Run], reference: str, *, n_boot: int, seed: int, confidence: float,
          keep: set[str] | None = None) -> dict:
    """Ratings from ``runs``' battles; ``keep``: the questions of the pair runs to count (all by default)."""
    battles = [(run.system, run.opponent, v["outcome"]) for run in runs for v in run.verdicts
               if v.get("outcome") is not None and (keep is None or run.opponent == reference or v["qid"] in keep)]
    players = sorted({p for run in runs for p in (run.system, run.opponent)})
    counts = BattleCounts.from_battles(battles, players)
    anchor = reference if reference in players else None
    ratings = bootstrap_bradley_terry(counts, anchor=anchor,
                                      intervals=Intervals(n_boot=n_boot, seed=seed, confidence=confidence))
    ranked = sorted((p for p in players if ratings[p]["n_battles"]), key=lambda p: (-ratings[p]["rating"], p))
    neighbours = [{"upper": upper, "lower": lower,
                   "separated": intervals_separated(ratings[upper]["rating_ci"], ratings[lower]["rating_ci"])}
                  for upper, lower in zip(ranked, ranked[1:])]
    return {
        "n_battles": int(counts.n_battles),
        "ratings": {p: {"rating": ratings[p]["rating"], "rating_ci": ratings[p]["rating_ci"]} for p in ranked},
        "ranking": ranked,
        "neighbours": neighbours,
        "all_separated": all(n["separated"] for n in neighbours),
    }


def _nested_samples(pair_runs: list[Run]) -> tuple[list[int], list[str]] | None:
    """The sample sizes and the shared order of the tournament the pair runs come from, or None (not one
    tournament, no samples recorded, or runs holding questions outside its largest sample)."""
    folders = {run.path.resolve().parent for run in pair_runs}
    if len(folders) != 1:
        return None
    try:
        record = loads_json((folders.pop() / TOURNAMENT_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    sizes, order = record.get("samples"), record.get("sample_qids")
    if not (isinstance(sizes, list) and sizes and all(isinstance(n, int) and n > 0 for n in sizes)
            and isinstance(order, list) and len(order) >= max(sizes)):
        return None
    largest = set(order[: max(sizes)])
    if any(v["qid"] not in largest for run in pair_runs for v in run.verdicts):
        return None
    return sorted(sizes), order


def elo_study(runs: list[Run], reference: str, *, n_boot: int, seed: int, confidence: float) -> dict | None:
    """The views, or None when there are no system-against-system runs (the views would be the same).

    ``against_reference_only``, ``with_complete_pairs`` (every battle), and for a tournament with
    recorded samples ``samples`` and one ``with_complete_pairs_<N>`` per size; ``win_matrix`` (every pair that
    met, :func:`~metric_arena.report.views.win_matrix`, in the ranking's order) and, for an adaptive
    tournament, ``adaptive`` (its neighbouring pairs and those not yet separated, from ``tournament.json``)."""
    against_reference = [run for run in runs if run.opponent == reference]
    if len(against_reference) == len(runs) or not against_reference:
        return None
    stats = dict(n_boot=n_boot, seed=seed, confidence=confidence)
    study = {"against_reference_only": _view(against_reference, reference, **stats),
             "with_complete_pairs": _view(runs, reference, **stats)}
    study["win_matrix"] = win_matrix(runs, order=study["with_complete_pairs"]["ranking"], confidence=confidence)
    adaptive = adaptive_pairs(runs, reference=reference)
    if adaptive is not None:
        study["adaptive"] = adaptive
    nested = _nested_samples([run for run in runs if run.opponent != reference])
    if nested is not None:
        sizes, order = nested
        study["samples"] = sizes
        for n in sizes:
            study[f"with_complete_pairs_{n}"] = _view(runs, reference, keep=set(order[:n]), **stats)
    return study

