"""Reports of judged runs: the leaderboard (rates, Bradley–Terry ratings, paired tests), its analyses
(question sets, no-answer replies, retrieval-aware rates), its JSON, plots and self-contained HTML
page, and uploading a run folder to the Hub."""

from lfrqa.exports import export_names
from metric_arena.report._battles import battle_rows, write_battles
from metric_arena.report._compare import REFUSALS, ComparisonRefused, MinShared, compare_runs
from metric_arena.report._eval_results import (
    EVAL_RESULTS_DIR,
    ResultPin,
    build_eval_result_files,
    eval_result_entries,
    hub_user,
    judge_tag,
    push_eval_results,
    read_benchmark,
    task_coverage,
)
from metric_arena.report._leaderboard import Leaderboard, build_leaderboard
from metric_arena.report._no_answer import no_answer_analysis
from metric_arena.report._push import (
    build_push_files,
    dataset_card,
    push_run,
    verdicts_parquet,
)
from metric_arena.report._retrieval import retrieval_analysis
from metric_arena.report._runs import REFERENCE, Run, backfill_styles, load_run, load_runs, run_settings
from metric_arena.report._write import ReportAnalyses, write_report
from metric_arena.report.views import ViewerOptions

__all__ = [
    "EVAL_RESULTS_DIR",
    "REFERENCE",
    "REFUSALS",
    "ComparisonRefused",
    "Leaderboard",
    "ReportAnalyses",
    "MinShared",
    "ResultPin",
    "Run",
    "ViewerOptions",
    "backfill_styles",
    "battle_rows",
    "build_eval_result_files",
    "build_leaderboard",
    "build_push_files",
    "compare_runs",
    "dataset_card",
    "eval_result_entries",
    "hub_user",
    "judge_tag",
    "load_run",
    "load_runs",
    "no_answer_analysis",
    "push_eval_results",
    "push_run",
    "read_benchmark",
    "retrieval_analysis",
    "run_settings",
    "task_coverage",
    "verdicts_parquet",
    "write_battles",
    "write_report",
]

export_names(globals())
