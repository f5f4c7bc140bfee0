"""Statistics of pairwise verdicts: rates with intervals, stratified sampling and early stopping,
paired tests, Bradley–Terry ratings on the Elo scale, agreement (with human labels or another judge:
Cohen's kappa and its bootstrap interval) and rank correlations.
Pure numpy; nothing here sends a request or reads a run folder.

>>> from metric_arena.stats import summarize
>>> summarize(["win", "tie", "loss", None], n_boot=0)["win_rate"]
0.3333333333333333
"""

from lfrqa.exports import export_names
from metric_arena.stats._agreement import (
    agreement,
    cohen_kappa,
    judge_outcome,
    judge_outcomes,
    kappa_interval,
    load_human_labels,
    majority_labels,
    majority_vote,
    reference_vote,
)
from metric_arena.stats._correlation import kendall_tau, spearman_rho
from metric_arena.stats._length import (
    LENGTH_BINS,
    length_views,
    logistic_fit,
    normalized_difference,
    style_controlled_bradley_terry,
)
from metric_arena.stats._length_control import LengthControl, length_controlled_rates
from metric_arena.stats._ppi import MIN_ANCHORS, anchor_size, anchored_difference, anchored_rate
from metric_arena.stats._paired import paired_bootstrap, paired_comparison, sign_test
from metric_arena.stats._rates import bootstrap_interval, mean_interval, percentile_interval, summarize
from metric_arena.stats._ratings import (
    BASE,
    INITIAL,
    MIN_BATTLES_FOR_INTERVAL,
    SCALE,
    BattleCounts,
    bootstrap_bradley_terry,
    expected_score,
    fit_bradley_terry,
    intervals_separated,
    style_controlled_ratings,
)
from metric_arena.stats._sampling import (
    IntervalStopper,
    pair_schedule,
    stratified_sample,
    wilson_interval,
)
from metric_arena.stats._settings import DEFAULT_ALPHA, INTERVAL_KEYWORDS, OUTCOMES, Intervals
from metric_arena.stats._sequential import RoundPlan, SequentialRanking, confidence_sequence

__all__ = [
    "BASE",
    "DEFAULT_ALPHA",
    "INTERVAL_KEYWORDS",
    "OUTCOMES",
    "INITIAL",
    "LENGTH_BINS",
    "SCALE",
    "BattleCounts",
    "IntervalStopper",
    "Intervals",
    "LengthControl",
    "MIN_ANCHORS",
    "RoundPlan",
    "SequentialRanking",
    "agreement",
    "anchor_size",
    "anchored_difference",
    "anchored_rate",
    "MIN_BATTLES_FOR_INTERVAL",
    "bootstrap_bradley_terry",
    "intervals_separated",
    "bootstrap_interval",
    "cohen_kappa",
    "confidence_sequence",
    "expected_score",
    "fit_bradley_terry",
    "judge_outcome",
    "judge_outcomes",
    "kappa_interval",
    "kendall_tau",
    "length_controlled_rates",
    "length_views",
    "logistic_fit",
    "load_human_labels",
    "majority_labels",
    "majority_vote",
    "mean_interval",
    "normalized_difference",
    "paired_bootstrap",
    "paired_comparison",
    "percentile_interval",
    "reference_vote",
    "pair_schedule",
    "sign_test",
    "spearman_rho",
    "stratified_sample",
    "style_controlled_bradley_terry",
    "style_controlled_ratings",
    "summarize",
    "wilson_interval",
]

export_names(globals())
