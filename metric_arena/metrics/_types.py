"""The metric contract's types (re-exported by :mod:`metric_arena.metrics`)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from metric_arena.stats import Intervals

__all__ = ["Estimate", "Field", "Metric", "MetricSummary"]


@dataclass(frozen=True, kw_only=True)
class Field:
    """One summary field of a metric, e.g. ``Field(name="win_rate", label="win rate")``."""

    name: str
    label: str
    higher_is_better: bool = True
    kind: Literal["share", "number"] = "share"  # a share prints as a percentage


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """A field's value with its interval (``None`` where none can be computed) over ``n`` items."""

    value: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True, kw_only=True)
class MetricSummary:
    """One system's summary under one metric: ``fields`` over all items, ``per_domain`` by domain, and
    ``notes`` a reader must see beside the numbers (e.g. "12 answers carry no citations")."""

    metric: str
    system: str
    fields: Mapping[str, Estimate]
    per_domain: Mapping[str, Mapping[str, Estimate]] = field(default_factory=dict)
    notes: Sequence[str] = ()


@runtime_checkable
class Metric(Protocol):
    """What a metric provides. ``name`` is what ``compare --metric`` and the report's sections use. A metric
    may also name ``settings``: keys of its run folders' ``summary.json`` that two runs must share for
    ``compare --metric`` to compare them (the citation scores: their entailment model and passages)."""

    name: str
    fields: Sequence[Field]

    def present(self, run_dir: Path) -> bool:
        """Whether ``run_dir`` holds this metric's rows."""

    def read_rows(self, run_dir: Path) -> list[Mapping]:
        """The per-item rows of ``run_dir`` (each with ``qid``, ``system`` and ``domain``)."""

    def item_values(self, rows: Sequence[Mapping]) -> dict[str, dict[str, float]]:
        """``qid -> field name -> that item's value``: what a paired comparison of two runs resamples."""

    def summarize(self, rows: Sequence[Mapping], *, intervals: Intervals) -> list[MetricSummary]:
        """One :class:`MetricSummary` per system in ``rows``."""
