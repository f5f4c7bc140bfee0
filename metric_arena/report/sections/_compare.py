"""``compare --metric NAME``: the CI gate for any registered metric, a paired bootstrap on its per-item values."""

from __future__ import annotations

import os
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.report._compare import ComparisonRefused, refuse_other_scoring, run_scoring
from metric_arena.report.sections._registry import metric_named
from metric_arena.stats import Intervals, paired_bootstrap

__all__ = ["compare_metric"]


def compare_metric(base: str | os.PathLike, new: str | os.PathLike, metric: str, *, min_delta: float = 0.0,
                   intervals: Intervals = Intervals(), allow_judge_change: bool = False,
                   allow_setting_change: bool = False) -> dict:
    """The runs ``base`` and ``new`` compared on every field of the registered ``metric``: on the items both
    hold, the paired bootstrap of new − base (:func:`~metric_arena.stats.paired_bootstrap`). A field is
    *significantly worse* when its whole interval lies beyond ``min_delta`` on the bad side (below
    ``−min_delta`` for a field where higher is better, above ``min_delta`` otherwise).

    Refused (:class:`~metric_arena.report.ComparisonRefused`): the same folder twice (``same_run``), a run
    without the metric's rows (``empty_run``), runs scored by other judges or with other settings (as
    :func:`~metric_arena.report.compare_runs` refuses them: a judge run folder's judges, order and parse, and
    the metric's own ``settings``, keys of the folders' ``summary.json``; ``different_judges`` unless
    ``allow_judge_change``, ``setting_changed`` unless ``allow_setting_change``), no shared item
    (``no_shared_questions``). An unknown name raises :class:`~metric_arena.report.sections.UnknownMetric`.

    Returns ``{"status": "worse" | "not_worse", "metric", "base": {"run", "n"}, "new": {...}, "n_shared",
    "min_delta", "confidence", "fields": {field: paired result + "label", "higher_is_better",
    "significantly_worse"}, "worse", "worse_on", "warnings"}``.
    """
    chosen = metric_named(metric)
    if not (min_delta >= 0.0):
        raise RagQaArenaError(f"min_delta must be >= 0 (a difference such as 0.02), got {min_delta!r}")
    if Path(base).resolve() == Path(new).resolve():
        raise ComparisonRefused("same_run", f"{base} and {new} are the same run folder: give the base run and the "
                                            "new version's run")
    values = {}
    for role, run in (("BASE", base), ("NEW", new)):
        if not chosen.present(Path(run)):
            raise ComparisonRefused("empty_run", f"{role} {run} holds no rows of the metric {metric!r}: give a run "
                                                 "folder that does")
        values[role] = chosen.item_values(chosen.read_rows(Path(run)))
    names = tuple(getattr(chosen, "settings", ()))
    warnings = refuse_other_scoring({"BASE": run_scoring(base, names), "NEW": run_scoring(new, names)},
                                    allow_judge_change=allow_judge_change, allow_setting_change=allow_setting_change)
    shared = set(values["BASE"]) & set(values["NEW"])
    if not shared:
        raise ComparisonRefused("no_shared_questions", f"{base} and {new} share no item of the metric {metric!r}: "
                                "score both on the same questions")
    fields, worse_on = {}, []
    for f in chosen.fields:
        new_values = {q: v[f.name] for q, v in values["NEW"].items() if f.name in v}
        base_values = {q: v[f.name] for q, v in values["BASE"].items() if f.name in v}
        result = paired_bootstrap(new_values, base_values, intervals=intervals)
        low, high = result["difference_ci"]
        worse = bool(result["n"]) and (high < -min_delta if f.higher_is_better else low > min_delta)
        fields[f.name] = {**result, "label": f.label, "higher_is_better": f.higher_is_better,
                          "significantly_worse": worse}
        if worse:
            worse_on.append(f.name)
    return {"status": "worse" if worse_on else "not_worse", "metric": metric,
            "base": {"run": str(base), "n": len(values["BASE"])}, "new": {"run": str(new), "n": len(values["NEW"])},
            "n_shared": len(shared), "min_delta": min_delta, "confidence": intervals.confidence, "fields": fields,
            "worse": bool(worse_on), "worse_on": worse_on, "warnings": warnings}
