"""The arena's win/tie/loss against the opponent, as a :class:`~metric_arena.metrics.Metric`: the first
implementation of the contract, read from a run folder's ``verdicts.jsonl``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from lfrqa.kernel import written_rows
from metric_arena.metrics._types import Estimate, Field, MetricSummary
from metric_arena.stats import Intervals, bootstrap_interval
from metric_arena.records import REFERENCE, VERDICTS_FILE, check_verdict

__all__ = ["ARENA", "ArenaMetric", "share_estimates"]

#: The file of a run folder the arena metric reads.
_VERDICTS = VERDICTS_FILE
_UNKNOWN_DOMAIN = "unknown"


class ArenaMetric:
    """Win, tie and loss rates of ``system_a`` against ``system_b``, one item per judged pair (failed
    pairs are in no rate and counted in a note). A run against ``reference`` is summarized under its
    system's name, another under ``"A vs B"``."""

    name = "arena"
    fields = (
        Field(name="win_rate", label="win rate"),
        Field(name="win_tie_rate", label="win+tie rate"),
        Field(name="tie_rate", label="tie rate", higher_is_better=False),
        Field(name="loss_rate", label="loss rate", higher_is_better=False),
    )

    def __init__(self, reference: str = REFERENCE) -> None:
        self.reference = reference

    def present(self, run_dir: Path) -> bool:
        return (Path(run_dir) / _VERDICTS).is_file()

    def read_rows(self, run_dir: Path) -> list[Mapping]:
        """One row per qid (a resumed run's later line wins): ``qid``, ``system``, ``domain``, ``outcome``."""
        return self.rows_of(check_verdict(line, where) for where, line in
                            written_rows(Path(run_dir) / _VERDICTS, [], writer="the judge", fix="re-run the judge"))

    def rows_of(self, verdicts: Iterable[Mapping]) -> list[Mapping]:
        """:meth:`read_rows` of verdicts already read (a report's loaded runs: their files are not read again)."""
        rows: dict[tuple[str, str], dict] = {}
        for verdict in verdicts:
            a, b = verdict["system_a"], verdict["system_b"]
            system = a if b == self.reference else f"{a} vs {b}"
            rows[(system, verdict["qid"])] = {"qid": verdict["qid"], "system": system,
                                              "domain": verdict.get("domain") or _UNKNOWN_DOMAIN,
                                              "outcome": verdict.get("outcome")}
        return list(rows.values())

    def item_values(self, rows: Sequence[Mapping]) -> dict[str, dict[str, float]]:
        values = {}
        for row in rows:
            outcome = row["outcome"]
            if outcome is not None:
                values[row["qid"]] = {"win_rate": float(outcome == "win"), "win_tie_rate": float(outcome != "loss"),
                                      "tie_rate": float(outcome == "tie"), "loss_rate": float(outcome == "loss")}
        return values

    def summarize(self, rows: Sequence[Mapping], *, intervals: Intervals) -> list[MetricSummary]:
        summaries = []
        for system in sorted({row["system"] for row in rows}):
            mine = [row for row in rows if row["system"] == system]
            per_domain = {domain: share_estimates(self.item_values([r for r in mine if r["domain"] == domain]),
                                                  self.fields, intervals)
                          for domain in sorted({r["domain"] for r in mine})}
            failed = sum(row["outcome"] is None for row in mine)
            notes = [f"{failed:,} of {len(mine):,} pairs failed (in no rate)"] if failed else []
            summaries.append(MetricSummary(metric=self.name, system=system, notes=notes, per_domain=per_domain,
                                           fields=share_estimates(self.item_values(mine), self.fields, intervals)))
        return summaries


def share_estimates(items: Mapping[str, Mapping[str, float]], fields: Sequence[Field],
                    intervals: Intervals) -> dict[str, Estimate]:
    """Each field's mean over ``items`` (qid -> field -> a 0/1 value) with its bootstrap interval
    (:func:`~metric_arena.stats.bootstrap_interval`: Wilson's below ten items or when all are equal)."""
    estimates = {}
    for f in fields:
        values = np.array([item[f.name] for item in items.values() if f.name in item], dtype=float)
        if values.size == 0:
            estimates[f.name] = Estimate(value=None, low=None, high=None, n=0)
            continue
        low, high = bootstrap_interval(values, n_boot=intervals.n_boot, seed=intervals.seed,
                                       confidence=intervals.confidence)
        finite = bool(np.isfinite(low) and np.isfinite(high))
        estimates[f.name] = Estimate(value=float(values.mean()), low=float(low) if finite else None,
                                     high=float(high) if finite else None, n=int(values.size))
    return estimates


#: The arena metric against LFRQA, as ``report`` registers it.
ARENA = ArenaMetric()
