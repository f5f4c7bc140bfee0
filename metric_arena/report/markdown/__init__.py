"""Markdown views of results, fit for a GitHub job summary (``$GITHUB_STEP_SUMMARY``) or a pull-request
comment: a comparison of two runs (or its refusal) and the leaderboard with its per-domain rates."""

from lfrqa.exports import export_names
from metric_arena.report.markdown._tables import comparison_markdown, leaderboard_markdown, markdown_text, refusal_markdown

__all__ = ["comparison_markdown", "leaderboard_markdown", "markdown_text", "refusal_markdown"]

export_names(globals())
