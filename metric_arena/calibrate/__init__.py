"""Trust the judge: calibrate a candidate judge against a reference judge on the same pairs.

Give run folders of the same systems' pairs judged by two judges (any order setting); pairs are
matched by system, opponent and qid. The judge card says how often they agree (raw agreement,
Cohen's kappa over win/tie/loss with a bootstrap interval, kappa on decisive pairs, the confusion
table), how each system's win rate shifts and whether the systems keep their ranks, how each judge
leans (towards longer answers, towards the answer shown first), how often it fails, and what it
costs and how long it takes per 1,000 judgments.

Anchored rates: a cheap judge's rates corrected by a reference judge (or human labels) on a random subset of
the same pairs (PPI++, :func:`metric_arena.stats.anchored_rate`): :func:`judge_anchored` judges both and
writes ``anchored.json`` into the run folder; :func:`anchored_from_run` and :func:`anchored_from_labels`
anchor a run already judged; :func:`anchored_comparison` is ``compare --anchored``.

>>> card = calibrate_judges(reference=["runs/gpt-4/a"], candidate=["runs/mini/a"], out="card/")  # doctest: +SKIP
>>> card["kappa"], card["kappa_ci"], card["win_rate_shift"]["a"]["win_rate"]  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from metric_arena.calibrate._anchor import (
    ANCHOR_FOLDER,
    anchored_comparison,
    anchored_from_labels,
    anchored_from_run,
    draw_anchors,
    write_anchored,
)
from metric_arena.calibrate._anchor_run import AnchorPlan, anchor_dry_run, judge_anchored
from lfrqa.checks import grouped_keywords
from metric_arena.calibrate._card import build_card
from metric_arena.calibrate._reading import THRESHOLDS, plain_reading
from metric_arena.calibrate._write import (
    CARD_JSON,
    CARD_MD,
    card_markdown,
    card_push_files,
    card_summary,
    push_card,
    write_card,
)
from metric_arena.report import Run
from metric_arena.stats import INTERVAL_KEYWORDS, Intervals

__all__ = ["ANCHOR_FOLDER", "CARD_JSON", "CARD_MD", "AnchorPlan", "anchor_dry_run", "anchored_comparison",
           "anchored_from_labels", "anchored_from_run", "calibrate_judges", "card_markdown", "card_push_files",
           "card_summary", "draw_anchors", "judge_anchored", "plain_reading", "push_card", "write_anchored", "THRESHOLDS"]


@grouped_keywords("intervals", Intervals, INTERVAL_KEYWORDS)
def calibrate_judges(
    *,
    reference: Sequence[str | os.PathLike | Run],
    candidate: Sequence[str | os.PathLike | Run],
    out: str | os.PathLike | None = None,
    predictions: Mapping[str, str | os.PathLike] | None = None,
    data_dir: str | os.PathLike | None = None,
    intervals: Intervals | None = None,
    allow_same_judge: bool = False,
) -> dict:
    """The judge card of ``candidate`` against ``reference`` (run folders of the same pairs, two judges).

    ``out``: also write ``judge_card.json``, ``judge_card.md`` and ``matched_verdicts.jsonl`` there.
    ``predictions``: ``{system: prediction file}`` of the judged systems, for answer lengths
    (P(prefer longer); LFRQA's answers come from ``lfrqa.load(data_dir=data_dir)``) and prices.
    ``intervals``: the bootstrap interval of kappa (:class:`~metric_arena.stats.Intervals`; ``n_boot=``,
    ``seed=``, ``confidence=`` alone are deprecated).

    Refused (:class:`~lfrqa.errors.RagQaArenaError`) when both sides are one judge: the same judges named on
    both, or the candidate's replies equal to the reference's on every matched pair (a copied run), unless
    ``allow_same_judge``. Other differences between the sides (the parse, the order) are named in
    ``card["remarks"]``.
    """
    intervals = intervals if intervals is not None else Intervals()
    card, rows = build_card(reference=reference, candidate=candidate, predictions=predictions, data_dir=data_dir,
                            n_boot=intervals.n_boot, seed=intervals.seed, confidence=intervals.confidence,
                            allow_same_judge=allow_same_judge)
    if out is not None:
        write_card(out, card, rows)
    return card
