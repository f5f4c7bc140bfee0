"""The metrics ``report`` and ``compare`` know, and each metric's section of a report."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.citations import CITATIONS
from metric_arena.metrics import ARENA, Estimate, Metric, MetricSummary
from metric_arena.records import VERDICTS_FILE
from metric_arena.stats import Intervals

__all__ = ["METRICS", "UnknownMetric", "attach_metrics", "metric_named", "metric_only_folders", "metric_sections",
           "register_metric", "summary_dict"]

#: The registry: metric name -> :class:`~metric_arena.metrics.Metric`. The arena's win/tie/loss is first,
#: the citation scores (a ``cite`` run folder) second.
METRICS: dict[str, Metric] = {ARENA.name: ARENA, CITATIONS.name: CITATIONS}


class UnknownMetric(RagQaArenaError):
    """A metric name no registered metric has; the message names the known ones."""


def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add ``metric`` to :data:`METRICS` (``report`` then renders its section wherever a run folder holds
    its rows, and ``compare --metric NAME`` gates on it); a name taken by another metric is refused unless
    ``replace``. Returns ``metric``."""
    if not isinstance(metric, Metric):
        raise RagQaArenaError(f"{metric!r} is not a metric: give an object with name, fields, present, read_rows, "
                              "item_values and summarize (metric_arena.metrics.Metric)")
    if metric.name in METRICS and METRICS[metric.name] is not metric and not replace:
        raise RagQaArenaError(f"A metric named {metric.name!r} is registered already: give another name, or "
                              "replace=True")
    METRICS[metric.name] = metric
    return metric


def metric_named(name: str) -> Metric:
    """The registered metric called ``name``; :class:`UnknownMetric` names the known ones."""
    if name not in METRICS:
        raise UnknownMetric(f"Unknown metric {name!r}. Known: {', '.join(sorted(METRICS))}")
    return METRICS[name]


def metric_only_folders(runs: Sequence) -> tuple[list, list[Path]]:
    """``runs`` split into what the leaderboard reads (judge run folders, and anything else, which is
    named there) and the folders that hold only a registered metric's rows (no ``verdicts.jsonl``, e.g.
    a ``cite`` folder), which add to that metric's section alone. Only such folders, with no judge run
    beside them, are refused in one line."""
    judged, scored = [], []
    for run in runs:
        path = Path(run) if isinstance(run, (str, os.PathLike)) else None
        if (path is not None and path.is_dir() and not (path / VERDICTS_FILE).is_file()
                and any(metric.present(path) for metric in METRICS.values())):
            scored.append(path)
        else:
            judged.append(run)
    if scored and not judged:
        raise RagQaArenaError(f"{scored[0]} holds a metric's rows but no verdicts: a report needs at least one "
                              "judge run folder (`rag-qa-arena judge --out DIR`); give it beside this one")
    return judged, scored


def metric_sections(runs: Sequence[str | os.PathLike], *, intervals: Intervals = Intervals(),
                    metrics: Sequence[Metric] | None = None,
                    rows_read: Mapping[str, Mapping[Path, list[Mapping]]] | None = None) -> list[dict]:
    """One section per metric (registered, or ``metrics``) present in at least one of the ``runs`` folders:
    its fields and, per system, :func:`summary_dict` of its summary over the rows of every such run.
    ``rows_read``: metric name -> folder -> the rows the caller has already read (not read again)."""
    sections = []
    for metric in metrics if metrics is not None else list(METRICS.values()):
        holding = [Path(run) for run in runs if metric.present(Path(run))]
        if not holding:
            continue
        known = (rows_read or {}).get(metric.name, {})
        rows = [row for run in holding for row in (known[run] if run in known else metric.read_rows(run))]
        sections.append({
            "name": metric.name,
            "fields": [{"name": f.name, "label": f.label, "higher_is_better": f.higher_is_better, "kind": f.kind}
                       for f in metric.fields],
            "runs": [str(run) for run in holding],
            "systems": [summary_dict(s) for s in metric.summarize(rows, intervals=intervals)],
        })
    return sections


def _estimate(estimate: Estimate) -> dict:
    return {"value": estimate.value, "low": estimate.low, "high": estimate.high, "n": estimate.n}


def summary_dict(summary: MetricSummary) -> dict:
    """A :class:`~metric_arena.metrics.MetricSummary` as strict-JSON-ready data."""
    return {"system": summary.system,
            "fields": {name: _estimate(e) for name, e in summary.fields.items()},
            "per_domain": {domain: {name: _estimate(e) for name, e in fields.items()}
                           for domain, fields in summary.per_domain.items()},
            "notes": list(summary.notes)}


def attach_metrics(entries: Sequence[dict], sections: list[dict]) -> list[dict]:
    """Give each leaderboard entry ``metrics``: ``{metric name: its system's summary}`` for every section
    that summarizes the entry's system (as ``leaderboard.json`` holds them); returns ``sections``."""
    for entry in entries:
        mine = {section["name"]: summary for section in sections for summary in section["systems"]
                if summary["system"] == entry.get("system")}
        if mine:
            entry["metrics"] = {name: {k: v for k, v in summary.items() if k != "system"} for name, summary in mine.items()}
    return sections
