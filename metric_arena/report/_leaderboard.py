"""Read judged run folders and turn them into the arena leaderboard.

A run folder is what ``rag-qa-arena judge --out DIR`` writes: ``verdicts.jsonl`` (one judged
pair per line, appended as the judge goes) and ``summary.json`` (written at the end). Only
``verdicts.jsonl`` is required, so a run that crashed half-way can still be reported; a torn
last line (a crash while writing it) is skipped with a warning.

The leaderboard has one entry per system, the reference (LFRQA) included:

* win / tie / loss and win+tie rates against the reference, overall and per domain, with seeded
  bootstrap intervals (:func:`metric_arena.stats.summarize`), from the system's run against the
  reference (the paper's Table 3); the reference's own rates are ``None``;
* a Bradley–Terry rating on the Elo scale fitted on *all* battles (every system vs LFRQA and
  every system vs system run), with the reference fixed at 1000 and bootstrap intervals
  (:func:`metric_arena.stats.bootstrap_bradley_terry`, the paper's Table 5);
* ``rank``: 1 + the number of systems whose rating interval lies entirely above this one's, so
  systems whose intervals overlap share a rank.

Entries are sorted by rating. Adjacent systems (both judged against the reference) are also
compared on their shared queries with :func:`metric_arena.stats.paired_comparison`.

Analyses (the end of this module): systems judged on different questions are grouped into
``question_sets`` and flagged (each entry's ``question_set``, and a warning); the no-answer view
(:mod:`metric_arena.report._no_answer`: shares, rates with and without those pairs, the leaderboard
without them; each entry's ``no_answer``); with ``retrieved`` files, the retrieval-aware analysis
(:mod:`metric_arena.report._retrieval`; each entry's ``retrieval``).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from itertools import combinations
from pathlib import Path

from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import package_version
from metric_arena.report._battles import battle_rows
from metric_arena.records import injection_counts
from metric_arena.report._elo_study import elo_study
from metric_arena.report._no_answer import (
    DENOMINATOR,
    RULE,
    VIEW_KEYS,
    no_answer_analysis,
    no_answer_qids,
    without_no_answers,
)
from metric_arena.report._retrieval import RetrievedFiles, retrieval_analysis
from metric_arena.report._runs import REFERENCE, Run, empty_rates, load_run, run_rates
from metric_arena.stats import (
    BASE,
    INITIAL,
    INTERVAL_KEYWORDS,
    SCALE,
    BattleCounts,
    Intervals,
    bootstrap_bradley_terry,
    cohen_kappa,
    judge_outcomes,
    paired_comparison,
    style_controlled_ratings,
)
from metric_arena.style import STYLE_FEATURE_SETS, check_style_features, fastchat_style_battles, has_style
from metric_arena.style import length_report, style_battles

__all__ = ["Leaderboard", "ProgressCallback", "build_leaderboard", "judge_agreement"]

ProgressCallback = Callable[[str, int, int], None]


@dataclass
class Leaderboard:
    """Leaderboard entries (sorted by rating) plus everything needed to report them."""

    entries: list[dict]
    reference: str
    judges: list[str]
    n_queries: int
    domains: list[str]
    head_to_head: list[dict]
    paired: list[dict]
    components: list[list[str]]
    settings: dict
    warnings: list[str]
    runs: list[str]
    agreement: dict | None = None
    elo_study: dict | None = None  # Table 5: ratings against LFRQA only, and with the complete pairs
    created_at: str = ""
    package_version: str = ""
    question_sets: list[dict] = field(default_factory=list)
    no_answer: dict | None = None
    retrieval: dict | None = None
    judge_agreement: dict | None = None  # ensemble runs: pairwise kappa between their judges
    length: dict | None = None  # length views: LFRQA's words per answer, style-controlled ratings' coefficients
    injection: dict | None = None  # per system: answers speaking to the judge (metric_arena.records.injection_counts)

    metrics: list[dict] = field(default_factory=list)  # one section per metric (metric_arena.report.sections)

    def to_dict(self) -> dict:
        """Everything as plain JSON-ready data: every field, in the order declared."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@grouped_keywords("intervals", Intervals, INTERVAL_KEYWORDS)
def build_leaderboard(
    runs: Sequence[Run | str | Path],
    *,
    reference: str = REFERENCE,
    intervals: Intervals | None = None,
    progress: ProgressCallback | None = None,
    retrieved: RetrievedFiles | None = None,
    data_dir: str | os.PathLike | None = None,
    no_answer_view: bool = True,
    style_features: str = "words",
) -> Leaderboard:
    """Leaderboard of the systems judged in ``runs`` (run folders or loaded :class:`Run`s).

    ``retrieved``: ``retrieve`` output files for the retrieval-aware analysis (gold documents from
    ``lfrqa.load(data_dir=data_dir)``); ``no_answer_view``: also rebuild it without no-answer pairs;
    ``style_features``: the style-controlled ratings' feature set (``"words"`` or ``"fastchat"``,
    :data:`metric_arena.style.STYLE_FEATURE_SETS`); ``intervals``: bootstrap resamples, seed and level of
    every interval (:class:`~metric_arena.stats.Intervals`; ``n_boot=``, ``seed=``, ``confidence=`` alone are
    deprecated).

    >>> board = build_leaderboard(["runs/gpt-4o", "runs/llama-3"])  # doctest: +SKIP
    >>> [(e["system"], round(e["rating"])) for e in board.entries]  # doctest: +SKIP
    [('gpt-4o', 1083), ('LFRQA', 1000), ('llama-3', 958)]
    """
    check_style_features(style_features)
    intervals = intervals if intervals is not None else Intervals()
    n_boot, seed, confidence = intervals.n_boot, intervals.seed, intervals.confidence
    loaded = _load_runs(runs, progress)
    warnings = [w for run in loaded for w in run.warnings] + _comparability_warnings(loaded)
    judges = sorted({j for run in loaded for j in run.judges})
    stats = dict(n_boot=n_boot, seed=seed, confidence=confidence)
    reference_runs = {run.system: run for run in loaded if run.opponent == reference}
    entries = {name: {"system": name, "reference": False, **run_rates(run, **stats)} for name, run in reference_runs.items()}
    if progress:
        progress("Win rates", 1, 1)
    anchor, components, ratings = _ratings(loaded, reference, warnings, progress, **stats)
    for player in sorted({p for run in loaded for p in (run.system, run.opponent)}):
        entry = entries.setdefault(player, {"system": player, "reference": player == reference, **empty_rates()})
        if player == reference:
            entry["judges"] = judges
            entry["n"] = len({v["qid"] for run in reference_runs.values() for v in run.verdicts})
        rating = ratings.get(player)
        played = rating is not None and rating["n_battles"] > 0
        entry["rating"] = rating["rating"] if played else None
        entry["rating_ci"] = rating["rating_ci"] if played else None
        entry["n_battles"] = rating["n_battles"] if rating else 0
    ordered = _ranked(list(entries.values()))
    head_to_head = [{"system_a": run.system, "system_b": run.opponent,
                     **{k: v for k, v in run_rates(run, **stats).items() if k != "per_domain"}}
                    for run in loaded if run.opponent != reference]
    paired = _paired(ordered, reference_runs, **stats)
    if progress:
        progress("Paired comparisons", 1, 1)
    board = Leaderboard(
        entries=ordered,
        reference=reference,
        judges=judges,
        n_queries=len({v["qid"] for run in loaded for v in run.verdicts}),
        domains=sorted({d for e in ordered for d in (e.get("per_domain") or {})}),
        head_to_head=head_to_head,
        paired=paired,
        components=components,
        settings=_settings(anchor, sorted({r.summary.get("order") for r in loaded if r.summary.get("order")}), **stats),
        warnings=warnings,
        runs=[str(run.path) for run in loaded],
        elo_study=elo_study(loaded, reference, **stats),
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        package_version=package_version(),
    )
    _add_analyses(board, loaded, reference_runs, retrieved=retrieved, data_dir=data_dir,
                  no_answer_view=no_answer_view, stats=stats, style_features=style_features)
    board.injection = injection_counts([v for run in loaded for v in run.verdicts], [e["system"] for e in ordered])
    for entry in ordered:
        entry["injection"] = board.injection.get(entry["system"])
    return board


def _load_runs(runs: Sequence[Run | str | Path], progress: ProgressCallback | None) -> list[Run]:
    """The runs loaded and checked: one run per pair of systems, system and opponent distinct."""
    if not runs:
        raise RagQaArenaError("No run folders given: pass at least one folder written by `rag-qa-arena judge --out DIR`")
    loaded: list[Run] = []
    for k, run in enumerate(runs):
        loaded.append(run if isinstance(run, Run) else load_run(run, lean=True))  # no reply texts: counts only
        if progress:
            progress("Reading runs", k + 1, len(runs))
    seen: dict[frozenset, Run] = {}
    for run in loaded:
        key = frozenset((run.system, run.opponent))
        if run.system == run.opponent:
            raise RagQaArenaError(f"{run.path}: system and opponent are both {run.system!r}; give the run a distinct --name")
        if key in seen:
            raise RagQaArenaError(
                f"{seen[key].path} and {run.path} both judge {run.system!r} against {run.opponent!r}: "
                "pass one run per pair of systems (rename one with the judge's --name if they differ)"
            )
        seen[key] = run
    return loaded


def _comparability_warnings(loaded: list[Run]) -> list[str]:
    warnings = []
    if len({tuple(run.judges) for run in loaded}) > 1:
        warnings.append(
            "runs were judged by different judges ("
            + "; ".join(f"{run.system} vs {run.opponent}: {', '.join(run.judges) or '?'}" for run in loaded)
            + "); their numbers are not strictly comparable"
        )
    orders = {run.summary.get("order") for run in loaded if run.summary.get("order")}
    if len(orders) > 1:
        warnings.append(f"runs used different answer orders ({', '.join(sorted(orders))}); their numbers are not strictly comparable")
    return warnings


def _ratings(loaded: list[Run], reference: str, warnings: list[str], progress: ProgressCallback | None, *,
             n_boot: int, seed: int, confidence: float) -> tuple[str | None, list[list[str]], dict[str, dict]]:
    """Bradley–Terry ratings from all battles: (anchor, connected groups, ratings by player)."""
    battles = [
        (run.system, run.opponent, v["outcome"]) for run in loaded for v in run.verdicts if v.get("outcome") is not None
    ]
    players = sorted({p for run in loaded for p in (run.system, run.opponent)})
    counts = BattleCounts.from_battles(battles, players)
    anchor = reference if reference in players else None
    if anchor is None:
        warnings.append(f"no run against {reference!r}: ratings are centred on a mean of {INITIAL:g} instead of anchored")
    components = counts.components() if counts.n_battles else [[p] for p in players]
    if len(components) > 1:
        warnings.append(
            "the systems fall into groups never compared with each other ("
            + " | ".join(", ".join(g) for g in components)
            + "); ratings are only comparable within a group"
        )
    if not counts.n_battles:
        return anchor, components, {}
    ratings = bootstrap_bradley_terry(
        counts, anchor=anchor, intervals=Intervals(n_boot=n_boot, seed=seed, confidence=confidence),
        progress=(lambda done, total: progress("Bootstrap ratings", done, total)) if progress else None,
    )
    return anchor, components, ratings


def _ranked(entries: list[dict]) -> list[dict]:
    """Entries sorted by rating; ``rank`` is 1 + the number of entries whose interval lies wholly above."""
    ordered = sorted(
        entries,
        key=lambda e: (e["rating"] is None, -(e["rating"] or 0.0), -(_nan_to(e.get("win_rate"), -1.0)), e["system"]),
    )
    for entry in ordered:
        if entry["rating_ci"] is None:
            entry["rank"] = None
            continue
        entry["rank"] = 1 + sum(
            1 for other in ordered if other["rating_ci"] is not None and other["rating_ci"][0] > entry["rating_ci"][1]
        )
    return ordered


def _paired(ordered: list[dict], reference_runs: dict[str, Run], *, n_boot: int, seed: int,
            confidence: float) -> list[dict]:
    """Paired tests of each pair of neighbours (both judged against the reference), on shared queries."""
    ranked = [e["system"] for e in ordered if e["system"] in reference_runs]
    return [
        paired_comparison(reference_runs[upper].outcomes(), reference_runs[lower].outcomes(), metric=metric,
                          names=(upper, lower), n_boot=n_boot, seed=seed, confidence=confidence)
        for upper, lower in zip(ranked, ranked[1:])
        for metric in ("win_rate", "win_tie_rate")
    ]


def _settings(anchor: str | None, orders: list[str], *, n_boot: int, seed: int, confidence: float) -> dict:
    return {
        "n_boot": n_boot,
        "seed": seed,
        "confidence": confidence,
        "rating_scale": SCALE,
        "rating_base": BASE,
        "rating_initial": INITIAL,
        "anchor": anchor,
        "ties": "half a win for each side",
        "rating_bootstrap": "multinomial resampling of each pair's win/tie/loss counts",
        "paired_test": "two-sided exact sign test (McNemar) on queries where the systems differ",
        "orders": orders,
    }


def _nan_to(value, default: float) -> float:
    return default if value is None or value != value else float(value)


# --------------------------------------------------------------------------------------------
# Analyses: question sets, the no-answer view, retrieval-aware rates
# --------------------------------------------------------------------------------------------
def _add_analyses(board: Leaderboard, loaded: list[Run], reference_runs: dict[str, Run], *,
                  retrieved: RetrievedFiles | None, data_dir, no_answer_view: bool, stats: dict,
                  style_features: str = "words") -> None:
    """Fill ``question_sets``, ``no_answer`` and ``retrieval`` and each entry's share of them."""
    board.question_sets = _question_sets(board, reference_runs)
    board.judge_agreement = judge_agreement(loaded)
    if no_answer_view:  # (not again for the leaderboard rebuilt without no-answer pairs)
        board.length = _length_views(board, loaded, reference_runs, stats, style_features)
    if no_answer_view:
        board.no_answer = _no_answer_view(board, loaded, reference_runs, stats)
    if retrieved is not None:
        board.retrieval = retrieval_analysis(reference_runs, retrieved, data_dir=data_dir, **stats)
        board.warnings.extend(board.retrieval["caveats"])
        by_system = {block["system"]: block for block in board.retrieval["systems"]}
        for entry in board.entries:
            if entry["system"] in by_system:
                entry["retrieval"] = {k: v for k, v in by_system[entry["system"]].items() if k != "system"}


def _question_sets(board: Leaderboard, reference_runs: dict[str, Run]) -> list[dict]:
    """Systems grouped by the exact questions they were judged on; a warning when there are several."""
    groups: dict[frozenset, list[str]] = {}
    for name, run in sorted(reference_runs.items()):
        groups.setdefault(frozenset(v["qid"] for v in run.verdicts), []).append(name)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[0]), item[1]))
    sets = []
    for number, (qids, names) in enumerate(ordered, 1):
        domains = sorted({v.get("domain") or "unknown" for v in reference_runs[names[0]].verdicts})
        sets.append({"id": number, "systems": names, "n": len(qids), "domains": domains})
        for entry in board.entries:
            if entry["system"] in names:
                entry["question_set"] = number
    if len(sets) > 1:
        shared = len(frozenset.intersection(*groups))
        board.warnings.append(
            "systems were judged on different questions, so they are not directly comparable: "
            + "; ".join(f"set {s['id']}: {', '.join(s['systems'])} ({s['n']:,} queries; {', '.join(s['domains'])})"
                        for s in sets)
            + f"; {shared:,} queries shared by all. Judge every system on the same questions "
            "(the same prediction qids, or the same --sample and --seed)"
        )
    return sets


def _no_answer_view(board: Leaderboard, loaded: list[Run], reference_runs: dict[str, Run], stats: dict) -> dict:
    """Shares and rates with/without no-answer pairs, and the leaderboard rebuilt without them."""
    flags = no_answer_qids(loaded)
    systems = no_answer_analysis(reference_runs, **stats)
    filtered = [without_no_answers(run, flags) for run in loaded]
    n_excluded = sum(len(run.verdicts) - len(kept.verdicts) for run, kept in zip(loaded, filtered))
    view = None
    if n_excluded:
        rebuilt = build_leaderboard(filtered, reference=board.reference, no_answer_view=False,
                                    intervals=Intervals(**stats))
        view = [{k: e.get(k) for k in VIEW_KEYS} for e in rebuilt.entries]
    by_system = {block["system"]: block for block in systems}
    ranks = {e["system"]: e for e in view or []}
    for entry in board.entries:
        block = by_system.get(entry["system"])
        if block is not None:
            excluded = ranks.get(entry["system"], {})
            entry["no_answer"] = {"n_no_answer": block["n_no_answer"], "no_answer_rate": block["no_answer_rate"],
                                  "without": block["without"], "rank_without": excluded.get("rank"),
                                  "rating_without": excluded.get("rating"),
                                  "rating_without_ci": excluded.get("rating_ci")}
    return {"rule": RULE, "denominator": DENOMINATOR, "n_pairs_excluded": n_excluded, "systems": systems,
            "leaderboard": view}


#: Bootstrap rounds of the style-controlled fit at most (one fit per round over every battle).
STYLE_ROUNDS = 200
LENGTH_KEYS = ("avg_words", "reference_avg_words", "p_longer_wins", "n_near_equal_length", "lc_win_rate",
               "lc_win_rate_ci", "lc_win_tie_rate", "lc_win_tie_rate_ci", "lc_note", "length_coef_win",
               "length_coef_win_ci", "length_coef_win_tie", "length_coef_win_tie_ci", "length_coef_significant")


def _length_views(board: Leaderboard, loaded: list[Run], reference_runs: dict[str, Run], stats: dict,
                  style_features: str = "words") -> dict | None:
    """Each entry's length figures (:func:`metric_arena.style.length_report`, flat ``LENGTH_KEYS`` and the
    whole block as ``length``) and style-controlled ratings; None when no verdict records lengths."""
    verdicts = [v for run in loaded for v in run.verdicts if has_style(v) and v.get("outcome") is not None]
    if not verdicts:
        if not any(has_style(v) for run in loaded for v in run.verdicts):
            board.warnings.append("no verdict records answer lengths (runs judged before lengths were recorded): "
                                  "pass --predictions NAME=FILE to back-fill them, or re-run the judge (cached)")
        return None
    reports = {name: length_report(run.verdicts, **stats) for name, run in reference_runs.items()}
    reference_words = {v["qid"]: v["style_b"]["words"] for run in reference_runs.values() for v in run.verdicts
                       if has_style(v)}
    if style_features == "fastchat":  # as FastChat reads the battles file: one row per order, shown first as a
        battles, features, names = fastchat_style_battles(battle_rows(loaded))
    else:
        battles, features = style_battles(verdicts)
        names = ["length", "markdown"]
    rounds = min(stats["n_boot"], STYLE_ROUNDS)
    fit = style_controlled_ratings(battles, features, feature_names=names, center=style_features == "fastchat",
                                   anchor=board.reference if any(board.reference in b[:2] for b in battles) else None,
                                   **{**stats, "n_boot": rounds})
    for entry in board.entries:
        block = reports.get(entry["system"])
        if block is not None and block["avg_words"] is not None:
            entry.update({k: block[k] for k in LENGTH_KEYS}, length=block)
            for note in (block["warning"], block["lc_note"] and f"length-controlled rates {block['lc_note']}"):
                if note:
                    board.warnings.append(f"{entry['system']}: {note}")
        elif entry["system"] == board.reference and reference_words:
            entry["avg_words"] = sum(reference_words.values()) / len(reference_words)
        rating = fit["ratings"].get(entry["system"])
        entry["style_controlled_rating"] = rating["rating"] if rating else None
        entry["style_controlled_rating_ci"] = rating["rating_ci"] if rating else None
    return {"reference_avg_words": sum(reference_words.values()) / len(reference_words) if reference_words else None,
            "n_battles_with_lengths": len(battles), "style_feature_set": style_features,
            "style_features": fit["features"], "style_features_dropped": fit["dropped"], "style_bootstrap_rounds": rounds,
            "style_coefficients": fit["coefficients"], "style_coefficients_ci": fit["coefficients_ci"],
            "style_features_note": STYLE_FEATURE_SETS[style_features] + (f"; {fit['note']}" if fit["note"] else "")}


def judge_agreement(runs: list[Run]) -> dict | None:
    """Pairwise Cohen's kappa and raw agreement between the judges of ensemble runs; None without one.

    Each judge's outcome on a pair comes from its own judgments (both orders merged as the judge
    merges them); pairs a judge failed on are left out of that judge's comparisons.
    """
    verdicts = [v for run in runs if len(run.judges) > 1 for v in run.verdicts]
    judges = sorted({j for run in runs if len(run.judges) > 1 for j in run.judges})
    if len(judges) < 2:
        return None
    outcomes = {judge: judge_outcomes(verdicts, judge) for judge in judges}
    pairs = []
    for a, b in combinations(judges, 2):
        shared = sorted(set(outcomes[a]) & set(outcomes[b]))
        x, y = [outcomes[a][k] for k in shared], [outcomes[b][k] for k in shared]
        kappa = cohen_kappa(x, y)
        pairs.append({"judge_a": a, "judge_b": b, "n": len(shared),
                      "agreement": sum(p == q for p, q in zip(x, y)) / len(shared) if shared else None,
                      "kappa": None if kappa != kappa else kappa})
    return {"judges": judges, "runs": [str(run.path) for run in runs if len(run.judges) > 1], "pairs": pairs}
