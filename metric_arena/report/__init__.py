"""Reports of judged runs: the leaderboard (rates, Bradley–Terry ratings, paired tests), its JSON,
plots and self-contained HTML page, and uploading a run folder to the Hub."""

from metric_arena.report._battles import battle_rows, write_battles
from metric_arena.report._leaderboard import Leaderboard, build_leaderboard
from metric_arena.report._push import (
    build_push_files,
    dataset_card,
    push_run,
    verdicts_parquet,
)
from metric_arena.report._runs import REFERENCE, Run, load_run
from metric_arena.report._write import write_report

__all__ = [
    "REFERENCE",
    "Leaderboard",
    "Run",
    "battle_rows",
    "build_leaderboard",
    "build_push_files",
    "dataset_card",
    "load_run",
    "push_run",
    "verdicts_parquet",
    "write_battles",
    "write_report",
]
