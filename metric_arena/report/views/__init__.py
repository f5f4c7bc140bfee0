"""What the report page shows beyond the leaderboard's tables: the verdict viewer's data (every judged pair
with the texts that can be found) and the data behind its pictures (win rate against the length ratio,
the win matrix, an adaptive tournament's unseparated pairs) and a run's anchored rates."""

from lfrqa.exports import export_names
from metric_arena.report.views._anchored import ANCHORED_JSON, anchored_entries, read_anchored
from metric_arena.report.views._figures import RATIO_EDGES, adaptive_pairs, length_ratio_curves, win_matrix
from metric_arena.report.views._verdicts import ViewerOptions, verdict_view, viewer_json

__all__ = ["ANCHORED_JSON", "RATIO_EDGES", "anchored_entries", "read_anchored", "ViewerOptions", "adaptive_pairs", "length_ratio_curves", "verdict_view", "viewer_json",
           "win_matrix"]

export_names(globals())
