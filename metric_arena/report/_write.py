"""Writing the report folder: ``leaderboard.json``, ``report.json``, the plots and ``leaderboard.html``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, make_folder
from metric_arena.report._html import render_html
from metric_arena.report._leaderboard import (
    Leaderboard,
    ProgressCallback,
    build_leaderboard,
)
from metric_arena.report._plots import plot_length_ratio, plot_ratings, plot_win_matrix, plot_win_rates
from metric_arena.report._retrieval import RetrievedFiles
from metric_arena.report._runs import REFERENCE, Run, load_runs
from metric_arena.metrics import ARENA
from metric_arena.records import LEADERBOARD_FILE, REPORT_FILE, VERDICTS_FILE
from metric_arena.report.sections import attach_metrics, metric_only_folders, metric_sections
from metric_arena.report.views import ViewerOptions, anchored_entries, length_ratio_curves, verdict_view
from metric_arena.stats import INTERVAL_KEYWORDS, Intervals, agreement, load_human_labels

__all__ = ["ReportAnalyses", "write_report"]


@dataclass(frozen=True, kw_only=True)
class ReportAnalyses:
    """The analyses a report adds beside the leaderboard: the judge's agreement with ``human_labels``
    (JSONL, see :func:`metric_arena.stats.load_human_labels`; ``agreement_judge`` picks one judge of an
    ensemble), the retrieval-aware view of the ``retrieved`` files the systems answered from
    (``"SYSTEM=FILE"`` gives one system its own), the style-controlled ratings' ``style_features``
    (``"words"`` or ``"fastchat"``), the ``plots``, and the page's ``title``."""

    human_labels: str | Path | None = None
    agreement_judge: str | None = None
    retrieved: RetrievedFiles | None = None
    style_features: str = "words"
    plots: bool = True
    title: str = "RAG-QA Arena leaderboard"


@grouped_keywords("intervals", Intervals, INTERVAL_KEYWORDS)
@grouped_keywords("analyses", ReportAnalyses, ["human_labels", "agreement_judge", "retrieved", "style_features", "plots",
                                                    "title"])
def write_report(
    runs: Sequence[Run | str | Path],
    out: str | Path,
    *,
    reference: str = REFERENCE,
    intervals: Intervals | None = None,
    analyses: ReportAnalyses | None = None,
    progress: ProgressCallback | None = None,
    data_dir: str | os.PathLike | None = None,
    viewer: ViewerOptions | None = None,
) -> Leaderboard:
    """Build the leaderboard and write it to ``out``: ``leaderboard.json`` (the entries, each with its
    system's ``metrics``: every registered metric the run folders hold, :mod:`metric_arena.report.sections`),
    ``report.json`` (everything), ``win_rates.png``, ``ratings.png`` and a self-contained
    ``leaderboard.html``. ``analyses`` (:class:`ReportAnalyses`): the judge's agreement with human labels,
    the retrieval-aware analysis (gold documents from ``lfrqa.load(data_dir=data_dir)``), the style
    features, the plots; ``intervals``: resamples, seed and level (:class:`~metric_arena.stats.Intervals`).
    The loose keywords of earlier releases (``n_boot=``, ``seed=``, ``confidence=``, ``human_labels=``,
    ``agreement_judge=``, ``retrieved=``, ``style_features=``, ``plots=``, ``title=``) work for one release, with a
    ``DeprecationWarning``. Entries of ``runs`` that are not run folders (a stray file or folder in
    ``runs/*``) are skipped with a warning. ``viewer``: what the page's verdict viewer shows (:class:`~metric_arena.report.views.ViewerOptions`; by
    default the run folders' contents, without answer texts). Also written: ``length_ratio.png`` (win rate
    against the length ratio, into ``report.json``'s ``length.win_rate_by_length_ratio``) and, with
    system-against-system runs, ``win_matrix.png``.

    >>> board = write_report(["runs/gpt-4o", "runs/llama-3"], "leaderboard/")  # doctest: +SKIP
    """
    intervals = intervals if intervals is not None else Intervals()
    analyses = analyses if analyses is not None else ReportAnalyses()
    confidence, plots, human_labels = intervals.confidence, analyses.plots, analyses.human_labels
    out = Path(out)
    loaded, skipped, scored = _read_runs(runs, out)
    labels = load_human_labels(human_labels) if human_labels is not None else None
    board = build_leaderboard(loaded, reference=reference, intervals=intervals, progress=progress,
                              retrieved=analyses.retrieved, data_dir=data_dir, style_features=analyses.style_features)
    board.warnings[:0] = skipped
    _attach_anchored(board, loaded)
    board.metrics = attach_metrics(board.entries, metric_sections(  # every registered metric the runs hold
        [run.path for run in loaded] + scored, intervals=intervals,
        rows_read={ARENA.name: {run.path: ARENA.rows_of(run.verdicts) for run in loaded}}))  # read once, above
    if labels is not None:
        verdicts = [v for run in loaded for v in run.verdicts]
        board.agreement = agreement(labels, verdicts, judge=analyses.agreement_judge)
        if board.agreement["n"] == 0:
            board.warnings.append(
                f"none of the {board.agreement['n_human']} human-labelled pairs matches a judged pair "
                "(check qids and system names)"
            )
    if board.length is not None:
        board.length["win_rate_by_length_ratio"] = length_ratio_curves(loaded, reference=reference,
                                                                       confidence=confidence)
    make_folder(out)
    atomic_write(out / LEADERBOARD_FILE, dumps_json(board.entries))
    atomic_write(out / REPORT_FILE, dumps_json(board.to_dict()))
    images: dict[str, bytes] = {}
    if plots:
        if any(e["rating"] is not None for e in board.entries):
            images["ratings"] = plot_ratings(board.entries, reference=reference, confidence=confidence)
        if any(e.get("win_rate") is not None for e in board.entries):
            images["win_rates"] = plot_win_rates(board.entries, confidence=confidence)
        if board.length and board.length["win_rate_by_length_ratio"]:
            images["length_ratio"] = plot_length_ratio(board.length["win_rate_by_length_ratio"], confidence=confidence)
        if board.elo_study and len(board.elo_study["win_matrix"]["systems"]) > 1:
            images["win_matrix"] = plot_win_matrix(board.elo_study["win_matrix"])
        for name, png in images.items():
            atomic_write(out / f"{name}.png", png)
        if progress:
            progress("Plots", 1, 1)
    viewer = viewer or ViewerOptions()
    view = verdict_view(loaded, reference=reference, options=viewer, data_dir=data_dir) if viewer.enabled else None
    atomic_write(out / "leaderboard.html", render_html(board, images=images, title=analyses.title, verdicts=view))
    return board


def _read_runs(runs, out: Path) -> tuple[list[Run], list[str], list[Path]]:
    """The judge runs (read lean: what the report counts, not the judges' reply texts), the warnings of the
    entries skipped, and the folders holding only a registered metric's rows (e.g. a ``cite`` folder)."""
    # `report runs/* --out runs/leaderboard` run twice passes the report folder itself: skip it.
    runs = [r for r in runs if isinstance(r, Run) or os.path.realpath(r) != os.path.realpath(out)
            or (Path(r) / VERDICTS_FILE).is_file()]  # realpath: a symlink loop is no error here
    runs, scored = metric_only_folders(runs)
    loaded, skipped = load_runs(runs, lean=True)
    for run in loaded:
        if out.resolve() == run.path.resolve():
            raise RagQaArenaError(f"--out {str(out)!r} is a run folder: write the report to a folder of its own")
    return loaded, skipped, scored


def _attach_anchored(board: Leaderboard, loaded: list[Run]) -> None:
    """Each entry whose run folder holds ``anchored.json`` gets ``entry["anchored"]`` (anchored rates, labelled
    with the anchor and its n: :func:`~metric_arena.report.views.anchored_entries`)."""
    found = anchored_entries(loaded)
    for entry in board.entries:
        anchored = found.get(entry["system"])
        if anchored is not None and anchored["opponent"] == board.reference:  # rates against the reference only
            entry["anchored"] = anchored
