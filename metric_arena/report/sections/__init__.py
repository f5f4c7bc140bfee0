"""The report's metric sections: the registry of metrics (:data:`METRICS`, the arena's win/tie/loss first),
one section per metric present in the run folders (:func:`metric_sections`, in ``leaderboard.json``,
``report.json``, the HTML page, the Markdown and the terminal), and the gate of ``compare --metric``
(:func:`compare_metric`). A metric is anything that keeps the contract of :mod:`metric_arena.metrics`.

>>> from metric_arena.report.sections import METRICS
>>> list(METRICS)[0]
'arena'
"""

from lfrqa.exports import export_names
from metric_arena.report.sections._compare import compare_metric
from metric_arena.report.sections._registry import (
    METRICS,
    UnknownMetric,
    attach_metrics,
    metric_named,
    metric_only_folders,
    metric_sections,
    register_metric,
    summary_dict,
)
from metric_arena.report.sections._render import (
    SHOWN_BY_THE_LEADERBOARD,
    comparison_lines,
    estimate_text,
    sections_markdown,
    sections_text,
)

__all__ = ["METRICS", "SHOWN_BY_THE_LEADERBOARD", "UnknownMetric", "attach_metrics", "compare_metric", "comparison_lines", "estimate_text", "metric_named",
           "metric_only_folders", "metric_sections",
           "register_metric", "sections_markdown", "sections_text", "summary_dict"]

export_names(globals())
