"""The citation scores as a :class:`metric_arena.metrics.Metric`: what ``report`` and ``compare --metric citations``
read from a ``cite`` run folder."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfrqa.kernel import iter_records
from metric_arena.metrics import Estimate, Field, MetricSummary
from metric_arena.records import check_citations
from metric_arena.stats import Intervals, mean_interval

__all__ = ["CITATIONS", "CITATIONS_FILE", "CITATION_FIELDS", "CitationMetric"]

#: The run folder's per-answer rows.
CITATIONS_FILE = "citations.jsonl"

CITATION_FIELDS = (
    Field(name="reference_recall", label="reference-citation recall"),
    Field(name="reference_precision", label="reference-citation precision"),
    Field(name="gold_precision", label="gold-document precision"),
    Field(name="support", label="support (ALCE)"),
    Field(name="citation_recall", label="citation recall (ALCE)"),
    Field(name="citation_precision", label="citation precision (ALCE)"),
    Field(name="uncited", label="uncited sentences", higher_is_better=False),
    Field(name="invalid", label="invalid markers", higher_is_better=False),
)


def _estimate(values: list[float], intervals: Intervals) -> Estimate:
    if not values:
        return Estimate(value=None, low=None, high=None, n=0)
    low, high = mean_interval(values, n_boot=intervals.n_boot, seed=intervals.seed, confidence=intervals.confidence)
    return Estimate(value=sum(values) / len(values), low=None if math.isnan(low) else low,
                    high=None if math.isnan(high) else high, n=len(values))


class CitationMetric:
    """Per-answer citation scores (see :mod:`metric_arena.citations`), summarized as means with bootstrap
    intervals per system and domain. An answer where a field is undefined (no citations, no entailer) is
    left out of that field's mean and said in the notes."""

    name = "citations"
    fields: Sequence[Field] = CITATION_FIELDS
    #: What two runs must share to be compared (``compare --metric``): keys of a ``cite`` folder's summary.json.
    settings = ("entailment", "n_passages")

    def present(self, run_dir: Path) -> bool:
        return (Path(run_dir) / CITATIONS_FILE).is_file()

    def read_rows(self, run_dir: Path) -> list[Mapping]:
        path = Path(run_dir) / CITATIONS_FILE
        return [check_citations(row, where) for where, row in
                iter_records(path, hint="Each line must be one object of `rag-qa-arena cite`")]

    def item_values(self, rows: Sequence[Mapping]) -> dict[str, dict[str, float]]:
        return {row["qid"]: {k: float(v) for k, v in row["scores"].items() if v is not None} for row in rows}

    def summarize(self, rows: Sequence[Mapping], *, intervals: Intervals) -> list[MetricSummary]:
        by_system: dict[str, list[Mapping]] = {}
        for row in rows:
            by_system.setdefault(row["system"], []).append(row)
        return [self._summary(system, items, intervals) for system, items in by_system.items()]

    def _fields(self, rows: Sequence[Mapping], intervals: Intervals) -> dict[str, Estimate]:
        return {f.name: _estimate([float(r["scores"][f.name]) for r in rows if r["scores"].get(f.name) is not None],
                                  intervals) for f in self.fields}

    def _summary(self, system: str, rows: list[Mapping], intervals: Intervals) -> MetricSummary:
        domains: dict[str, list[Mapping]] = {}
        for row in rows:
            domains.setdefault(row.get("domain") or "unknown", []).append(row)
        return MetricSummary(metric=self.name, system=system, fields=self._fields(rows, intervals),
                             per_domain={d: self._fields(items, intervals) for d, items in sorted(domains.items())},
                             notes=citation_notes(rows))


def citation_notes(rows: Sequence[Mapping]) -> list[str]:
    """What a reader must see beside one system's citation numbers."""
    notes = []
    failed = sum(bool(r.get("failed")) for r in rows)
    uncited = sum(not r.get("failed") and not r.get("has_citations") for r in rows)
    if failed:
        notes.append(f"{failed} of {len(rows)} answers failed to generate: not scored")
    if uncited:
        notes.append(f"{uncited} of {len(rows) - failed} answers carry no citations: left out of the citation "
                     "scores (not counted as zeros)")
    invalid = sum(r.get("n_invalid", 0) for r in rows)
    if invalid:
        notes.append(f"{invalid} citation markers name no passage the answer was given (counted as invalid)")
    if rows and all(r.get("entailment") is None for r in rows if not r.get("failed")):
        notes.append("no entailment model given: support and ALCE's citation recall/precision need "
                     "`cite --entailment nli:... | llm:...`")
    undecided = sum(r.get("n_no_verdict", 0) for r in rows)
    if undecided:
        notes.append(f"{undecided} cited sentences got no entailment verdict: left out of the ALCE scores")
    no_reference = sum(bool(r.get("has_citations")) and not r.get("reference_docs") for r in rows)
    if no_reference:
        notes.append(f"{no_reference} questions have no LFRQA citations (e.g. BioASQ): no reference recall for them")
    return notes


#: The citation metric (name ``"citations"``), for ``report`` and ``compare --metric citations``.
CITATIONS = CitationMetric()
