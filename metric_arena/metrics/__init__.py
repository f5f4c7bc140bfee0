"""The metric contract: what ``report`` and ``compare`` need from a metric, whatever it measures.

A metric turns a run folder's per-item rows into summary fields with intervals, per system and per
domain. The arena's win/tie/loss against the reference is the first implementation; the citation
scores are the second. ``report`` renders every metric it finds in a run folder through this
contract alone, and ``compare --metric NAME`` runs a paired test on :meth:`Metric.item_values`.

==========================  =====================================================================
name                        what it is
==========================  =====================================================================
:class:`Metric`             the protocol a metric implements
:class:`Field`              one summary field: its name, label, direction and how it prints
:class:`Estimate`           a value with its interval and the number of items behind it
:class:`MetricSummary`      one system's fields, overall and per domain, plus notes
:class:`ArenaMetric`        the first implementation: win/tie/loss against the opponent (``ARENA``)
:func:`share_estimates`     means of 0/1 item values with their bootstrap intervals
==========================  =====================================================================

Where metrics are found: :data:`metric_arena.report.sections.METRICS` (the registry ``report`` and
``compare`` read; :func:`~metric_arena.report.sections.register_metric` adds one).
"""

from lfrqa.exports import export_names
from metric_arena.metrics._types import Estimate, Field, Metric, MetricSummary
from metric_arena.metrics._arena import ARENA, ArenaMetric, share_estimates

__all__ = ["ARENA", "ArenaMetric", "Estimate", "Field", "Metric", "MetricSummary", "share_estimates"]

export_names(globals())
