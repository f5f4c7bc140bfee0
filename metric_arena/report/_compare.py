"""A CI gate: two judged runs of one system (a base and a new version), compared on the questions
both answered, with the paired test of :func:`metric_arena.stats.paired_comparison`.

For the win rate and the win+tie rate (both against LFRQA): the difference new − base on the
shared questions, its paired bootstrap interval and the exact sign-test p-value. The new run is
*significantly worse* when, for either rate, the p-value is below ``1 − confidence`` and the whole
interval lies below ``−min_delta`` (a drop larger than ``min_delta`` that chance does not explain).

Bad input is an error (:class:`~lfrqa.errors.RagQaArenaError`): runs without a shared question,
runs against different opponents, and runs by different judges (unless ``allow_judge_change``:
verdicts of different judges are not comparable question by question).
"""

from __future__ import annotations

import os
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.records import injection_counts
from metric_arena.report._runs import load_run
from metric_arena.stats import paired_comparison

__all__ = ["COMPARED_METRICS", "compare_runs"]

COMPARED_METRICS = ("win_rate", "win_tie_rate")


def compare_runs(
    base: str | os.PathLike,
    new: str | os.PathLike,
    *,
    min_delta: float = 0.0,
    allow_judge_change: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Paired comparison of the run folders ``base`` and ``new`` (see the module notes).

    Returns ``{"base", "new", "judges", "n_shared", "min_delta", "confidence", "metrics":
    {metric: paired result with difference = new − base}, "worse": bool, "worse_on": [metrics],
    "injection": {"base": counts, "new": counts}}``: the counts of :func:`~metric_arena.records.injection_counts`
    for each run's system on the shared questions (answers addressing the judge, defused prompt tags).
    """
    if not (min_delta >= 0.0):
        raise RagQaArenaError(f"min_delta must be >= 0 (a rate difference such as 0.02), got {min_delta!r}")
    runs = {"base": load_run(Path(base)), "new": load_run(Path(new))}
    base_run, new_run = runs["base"], runs["new"]
    if base_run.opponent != new_run.opponent:
        raise RagQaArenaError(f"{base} is judged against {base_run.opponent!r} and {new} against "
                              f"{new_run.opponent!r}: compare runs against the same opponent (LFRQA)")
    if sorted(base_run.judges) != sorted(new_run.judges) and not allow_judge_change:
        raise RagQaArenaError(
            f"The runs have different judges ({', '.join(base_run.judges) or 'unknown'} vs "
            f"{', '.join(new_run.judges) or 'unknown'}): a change of judge moves the rates by itself. Judge both with "
            "the same --judge, or pass --allow-judge-change"
        )
    base_outcomes, new_outcomes = base_run.outcomes(), new_run.outcomes()
    shared = set(base_outcomes) & set(new_outcomes)
    if not shared:
        raise RagQaArenaError(f"{base} and {new} share no question: judge both on the same questions (the same "
                              "--sample N and --seed give the same questions)")
    metrics = {}
    worse_on = []
    alpha = 1.0 - confidence
    for metric in COMPARED_METRICS:
        result = paired_comparison(new_outcomes, base_outcomes, metric=metric, names=(new_run.system, base_run.system),
                                   n_boot=n_boot, seed=seed, confidence=confidence)
        result["significantly_worse"] = bool(result["n"]) and result["p_value"] < alpha \
            and result["difference_ci"][1] < -min_delta
        metrics[metric] = result
        if result["significantly_worse"]:
            worse_on.append(metric)
    injection = {side: injection_counts([v for v in run.verdicts if v["qid"] in shared],
                                        [run.system])[run.system] for side, run in runs.items()}
    return {
        "injection": injection,
        "base": {"run": str(base), "system": base_run.system, "judges": base_run.judges},
        "new": {"run": str(new), "system": new_run.system, "judges": new_run.judges},
        "n_shared": len(shared),
        "min_delta": min_delta,
        "confidence": confidence,
        "metrics": metrics,
        "worse": bool(worse_on),
        "worse_on": worse_on,
    }
