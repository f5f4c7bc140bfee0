"""Agreement between the LLM judge and human pairwise labels (the paper's Tables 4 and 8).

Human labels file (JSONL), one row per annotator judgment::

    {"qid": "fiqa-12", "system_a": "gpt-4o", "system_b": "LFRQA", "label": 1, "annotator": "w3"}

``label`` says which answer the annotator preferred, from ``system_a``'s side:

* ``1`` or ``"win"``: system_a's answer is better;
* ``2`` or ``"loss"``: system_b's answer is better;
* ``0`` or ``"tie"``: neither is better.

(1 and 2 read as in the judge's ``<rating>``, with system_a as Answer 1.) ``annotator`` is
optional. Several rows for the same query and pair of systems (in either order) are merged by
majority vote: the label with strictly more votes than any other wins, otherwise the pair is a
tie, as in the paper's majority rule.

Each verdict's outcome and each human label is turned into a score from the verdict's
``system_a`` side (win = 1, tie = 0, loss = -1); over the pairs both have judged we report
Cohen's kappa (three classes, unweighted), Pearson's r of the scores (with a p-value when scipy
is installed), raw agreement, and the confusion matrix.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_jsonl
from metric_arena.stats._rates import percentile_interval
from metric_arena.stats._settings import OUTCOMES

_LABELS = {0: "tie", 1: "win", 2: "loss", "tie": "tie", "win": "win", "loss": "loss"}
_FLIP = {"win": "loss", "loss": "win", "tie": "tie"}
_SCORE = {"win": 1, "tie": 0, "loss": -1}


def load_human_labels(path: str | Path) -> list[dict]:
    """Read and check a human labels JSONL file (format in the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Human labels file {str(path)!r} not found: give a JSONL file of {{qid, system_a, system_b, label}} rows")
    hint = 'Each line must be one {"qid", "system_a", "system_b", "label"} object'
    return [_check_label_row(row, f"{path}:{line_no}") for line_no, row in iter_jsonl(path, hint=hint)]


def majority_labels(rows: Iterable[Mapping]) -> dict[tuple[str, str, str], str]:
    """Merge annotators: ``{(qid, system_a, system_b): "win"|"tie"|"loss"}``, oriented as the
    first row seen for that query and pair."""
    votes: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    orientation: dict[tuple[str, frozenset], tuple[str, str, str]] = {}
    for k, row in enumerate(rows):
        row = _check_label_row(row, f"row {k}")
        label = _LABELS[row["label"]]
        key = (row["qid"], frozenset((row["system_a"], row["system_b"])))
        oriented = orientation.setdefault(key, (row["qid"], row["system_a"], row["system_b"]))
        votes[oriented].append(label if oriented[1] == row["system_a"] else _FLIP[label])
    return {key: majority_vote(vote) for key, vote in votes.items()}


def majority_vote(outcomes: Sequence[str | None]) -> str | None:
    """The strict-plurality outcome among the votes that are not None (failed judges do not vote);
    a tie for the top is a tie, and no votes at all is None.

    >>> majority_vote(["win", "win", "loss"]), majority_vote(["win", "loss", "tie"]), majority_vote([None, None])
    ('win', 'tie', None)
    """
    ranked = Counter(o for o in outcomes if o is not None).most_common()
    if not ranked:
        return None
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return "tie"
    return ranked[0][0]


def reference_vote(outcomes: Sequence[str | None]) -> str | None:
    """The authors' vote (``get_majority_vote`` of the reference's ``code/compute_correlation.py``): a
    failed judge (None) votes a tie; when every vote differs (1, 2, 0 from three judges, or two judges
    that disagree) the pair is a tie; otherwise the most frequent vote, the one seen first winning a
    tie of counts (``Counter(votes).most_common()[0]``). No judges at all is None.

    >>> reference_vote(["win", "win", "loss", "loss"]), reference_vote(["loss", "win"])
    ('win', 'tie')
    >>> reference_vote(["win", "loss", "tie"]), reference_vote([None, None, "win"]), reference_vote([])
    ('tie', 'tie', None)
    """
    votes = ["tie" if o is None else o for o in outcomes]
    if len(votes) > 1 and len(set(votes)) == len(votes):
        return "tie"
    return Counter(votes).most_common()[0][0] if votes else None


def judge_outcome(judgments: Sequence[Mapping], judge: str) -> tuple[str | None, bool]:
    """One judge's outcome for a pair from its judgments (one per order shown), and whether the
    orders disagreed. A failed judgment fails the judge; two orders that disagree are a tie."""
    outcomes = [j["outcome"] for j in judgments if j["judge"] == judge]
    if not outcomes or any(o is None for o in outcomes):
        return None, False
    if len(set(outcomes)) == 1:
        return outcomes[0], False
    return "tie", True


def judge_outcomes(verdicts: Iterable[Mapping], judge: str | None = None) -> dict[tuple[str, str, str], str]:
    """``{(qid, system_a, system_b): outcome}`` from verdict rows.

    With ``judge=None`` the verdict's own ``outcome`` (the majority of its judges) is used; with a
    judge name (``"openai:gpt-4o"``) only that judge's judgments count, merged by :func:`majority_vote`
    when it judged a pair more than once (both answer orders). Failed pairs are left out.
    """
    result = {}
    for verdict in verdicts:
        key = (verdict["qid"], verdict["system_a"], verdict["system_b"])
        if judge is None:
            outcome = verdict.get("outcome")
        else:
            votes = [
                j["outcome"] for j in verdict.get("judgments") or [] if j.get("judge") == judge and j.get("outcome") is not None
            ]
            outcome = majority_vote(votes) if votes else None
        if outcome is not None:
            result[key] = outcome
    return result


def agreement(
    human: Iterable[Mapping] | Mapping[tuple[str, str, str], str],
    verdicts: Iterable[Mapping],
    *,
    judge: str | None = None,
) -> dict:
    """Cohen's kappa, Pearson's r and raw agreement of a judge with human labels.

    ``human``: label rows (as read by :func:`load_human_labels`) or the output of
    :func:`majority_labels`. ``verdicts``: verdict rows of one or more run folders.

    >>> human = [{"qid": "q1", "system_a": "A", "system_b": "LFRQA", "label": 1},
    ...          {"qid": "q2", "system_a": "LFRQA", "system_b": "A", "label": "win"},
    ...          {"qid": "q3", "system_a": "A", "system_b": "LFRQA", "label": 0}]
    >>> verdicts = [{"qid": q, "system_a": "A", "system_b": "LFRQA", "outcome": o}
    ...             for q, o in [("q1", "win"), ("q2", "loss"), ("q3", "win")]]
    >>> r = agreement(human, verdicts)
    >>> r["n"], round(r["accuracy"], 3), round(r["kappa"], 3)
    (3, 0.667, 0.5)
    """
    labels = human if isinstance(human, Mapping) else majority_labels(human)
    by_pair = {(q, frozenset((a, b))): ((a, b), label) for (q, a, b), label in labels.items()}
    judged = judge_outcomes(verdicts, judge)
    human_scores, judge_scores, pair_names = [], [], []
    matched = set()
    for (qid, a, b), outcome in sorted(judged.items()):
        hit = by_pair.get((qid, frozenset((a, b))))
        if hit is None:
            continue
        (ha, _), label = hit
        matched.add((qid, frozenset((a, b))))
        human_scores.append(_SCORE[label if ha == a else _FLIP[label]])
        judge_scores.append(_SCORE[outcome])
        pair_names.append(f"{a} vs {b}")
    result = _scores_agreement(human_scores, judge_scores)
    result.update(judge=judge or "majority of the run's judges", n_human=len(labels), n_unmatched_human=len(labels) - len(matched))
    per_pair: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for name, h, j in zip(pair_names, human_scores, judge_scores):
        per_pair[name][0].append(h)
        per_pair[name][1].append(j)
    result["per_pair"] = {name: _scores_agreement(h, j) for name, (h, j) in sorted(per_pair.items())}
    return result


def cohen_kappa(a: list, b: list) -> float:
    """Unweighted Cohen's kappa of two equally long label lists (nan when undefined).

    >>> round(cohen_kappa([1, 1, 0, -1], [1, 0, 0, -1]), 3)
    0.636
    """
    return float(_kappa_of_counts(_confusion_counts(a, b)))


def kappa_interval(a: list, b: list, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95) -> list[float]:
    """Percentile bootstrap interval ``[low, high]`` of :func:`cohen_kappa` over items (pairs), seeded.

    Resampling the items with replacement is one multinomial draw over the cells of their
    confusion table, so each round costs the size of the table, not the number of items. Rounds
    where kappa is undefined (every resampled label the same) are left out; NaNs when there are
    no items, ``n_boot=0`` or no defined round.

    >>> low, high = kappa_interval([1, 1, 0, -1] * 25, [1, 0, 0, -1] * 25, n_boot=200)
    >>> low < cohen_kappa([1, 1, 0, -1], [1, 0, 0, -1]) < high
    True
    """
    counts = _confusion_counts(a, b)
    n = int(counts.sum())
    if n == 0 or n_boot < 1:
        return [float("nan"), float("nan")]
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts.ravel() / n, size=n_boot).reshape(n_boot, *counts.shape)
    return percentile_interval(_kappa_of_counts(draws), confidence)


def _confusion_counts(a: list, b: list) -> np.ndarray:
    """The square table of label counts (rows: ``a``'s label, columns: ``b``'s), labels in first-seen order."""
    if len(a) != len(b):
        raise RagQaArenaError(f"Label lists differ in length ({len(a)} vs {len(b)}): give one label per item in both")
    index = {label: k for k, label in enumerate(dict.fromkeys([*a, *b]))}
    counts = np.zeros((len(index), len(index)), dtype=np.int64)
    for x, y in zip(a, b):
        counts[index[x], index[y]] += 1
    return counts


def _kappa_of_counts(counts: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion tables (the last two axes): 1.0 when chance agreement is 1 and every
    item agrees; nan when it is 1 otherwise, and for no items."""
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(counts, axis1=-2, axis2=-1) / n
        expected = (counts.sum(axis=-1) * counts.sum(axis=-2)).sum(axis=-1) / (n * n)
        kappa = (observed - expected) / (1.0 - expected)
    certain = np.isclose(expected, 1.0)
    return np.where(certain, np.where(np.isclose(observed, 1.0), 1.0, np.nan), kappa)


def _scores_agreement(human: list[int], judged: list[int]) -> dict:
    n = len(human)
    h = np.asarray(human, dtype=float)
    j = np.asarray(judged, dtype=float)
    pearson = pearson_p = float("nan")
    if n >= 2 and h.std() > 0 and j.std() > 0:
        pearson = float(np.corrcoef(h, j)[0, 1])
        pearson_p = _pearson_p_value(pearson, n)
    confusion = {hl: {jl: 0 for jl in OUTCOMES} for hl in OUTCOMES}
    by_score = {v: k for k, v in _SCORE.items()}
    for x, y in zip(human, judged):
        confusion[by_score[x]][by_score[y]] += 1
    return {
        "n": n,
        "kappa": cohen_kappa(human, judged),
        "pearson": pearson,
        "pearson_p": pearson_p,
        "accuracy": float((h == j).mean()) if n else float("nan"),
        "confusion": confusion,
    }


def _pearson_p_value(r: float, n: int) -> float | None:
    """Two-sided p-value of Pearson's r (t test with n-2 degrees of freedom); None without scipy."""
    if n < 3:
        return float("nan")
    try:
        from scipy import stats
    except ImportError:
        return None
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 2) / (1.0 - r * r))
    return float(2.0 * stats.t.sf(abs(t), n - 2))


def _check_label_row(row: Mapping, where: str) -> dict:
    if not isinstance(row, Mapping):
        raise RagQaArenaError(f"{where}: expected a JSON object with qid, system_a, system_b, label; got {type(row).__name__}")
    missing = [k for k in ("qid", "system_a", "system_b", "label") if k not in row]
    if missing:
        raise RagQaArenaError(f"{where}: missing field(s) {', '.join(missing)}; each row needs qid, system_a, system_b, label")
    label = row["label"]
    if isinstance(label, bool) or label not in _LABELS:
        raise RagQaArenaError(
            f"{where}: unknown label {label!r}. Allowed: 1 or 'win' (system_a better), 2 or 'loss' (system_b better), 0 or 'tie'"
        )
    if row["system_a"] == row["system_b"]:
        raise RagQaArenaError(f"{where}: system_a and system_b are both {row['system_a']!r}; a label compares two systems")
    return {**row, "qid": str(row["qid"])}
