"""The judge card: how far a candidate judge agrees with a reference judge on the same pairs, and how each
leans (longer answers, the answer shown first), fails, costs and takes time."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfrqa.kernel import package_version
from metric_arena.calibrate._inputs import answer_words, price_and_time
from metric_arena.calibrate._match import ROLES, Matched, candidate_outcome, check_judges, load_side, match_pairs
from metric_arena.calibrate._reading import anchored_figures, plain_reading, shift_intervals
from metric_arena.report import REFERENCE, Run, run_settings
from metric_arena.stats import OUTCOMES, cohen_kappa, kappa_interval, kendall_tau, spearman_rho

__all__ = ["build_card", "setting_remarks"]

Key = tuple[str, str, str]


def build_card(
    *,
    reference: Sequence[str | os.PathLike | Run],
    candidate: Sequence[str | os.PathLike | Run],
    predictions: Mapping[str, str | os.PathLike] | None = None,
    data_dir: str | os.PathLike | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    allow_same_judge: bool = False,
) -> tuple[dict, list[dict]]:
    """The judge card (a JSON-ready dict) and the matched verdict rows it was computed on; refused when both
    sides are one judge (the same judges, or copied replies) unless ``allow_same_judge``."""
    sides = {"reference": load_side(reference, "reference"), "candidate": load_side(candidate, "candidate")}
    matched = match_pairs(sides["reference"], sides["candidate"])
    check_judges(sides["reference"], sides["candidate"], matched, allow_same_judge=allow_same_judge)
    both = {key: (ref.get("outcome"), candidate_outcome(cand, flipped))
            for key, (ref, cand, flipped) in matched.rows.items()}
    judged = sorted(key for key, (r, c) in both.items() if r is not None and c is not None)
    ref_out = [both[k][0] for k in judged]
    cand_out = [both[k][1] for k in judged]
    decisive = [k for k in judged if "tie" not in both[k]]
    lengths = answer_words(judged, {k: matched.rows[k][0] for k in judged}, predictions, data_dir)
    card = {
        "card_version": 1,
        "n_pairs": len(judged),
        "n_matched": len(matched.rows),
        "n_matched_failed": len(matched.rows) - len(judged),
        "unmatched": matched.unmatched(),
        "agreement": sum(r == c for r, c in zip(ref_out, cand_out)) / len(judged) if judged else None,
        "kappa": cohen_kappa(ref_out, cand_out),
        "kappa_ci": kappa_interval(ref_out, cand_out, n_boot=n_boot, seed=seed, confidence=confidence),
        "kappa_decisive": cohen_kappa([both[k][0] for k in decisive], [both[k][1] for k in decisive]),
        "n_decisive": len(decisive),
        "confusion": {r: {c: sum(1 for k in judged if both[k] == (r, c)) for c in OUTCOMES} for r in OUTCOMES},
        "win_rate_shift": _shifts(judged, both),
        "judges": {role: _judge_info(sides[role]) for role in ROLES},
        "n_failed": {role: sum(v.get("outcome") is None for run in sides[role] for v in run.verdicts) for role in ROLES},
        "p_prefer_longer": {}, "n_prefer_longer": {}, "p_prefer_first": {}, "n_prefer_first": {},
        "cost": {role: price_and_time(sides[role], predictions, data_dir) for role in ROLES},
        "settings": {"n_boot": n_boot, "seed": seed, "confidence": confidence,
                     "pairs": "verdicts matched by system, opponent and qid; statistics on the pairs both judges "
                              "judged (failed pairs left out)",
                     "answer_length": "whitespace words after the reference implementation's cleanup",
                     "lengths": None if lengths is None else "verdict rows (style_a, style_b)"
                                if judged and "style_a" in matched.rows[judged[0]][0] else
                                "prediction files and LFRQA answers"},
        "package_version": package_version(),
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    card["rank_correlation"] = _rank_correlation(card["win_rate_shift"])
    card["shift_ci"] = shift_intervals(both, judged, confidence=confidence)
    card["anchored"] = anchored_figures(sides["reference"], sides["candidate"], both, confidence=confidence)
    card["reading"] = plain_reading(card)
    card["remarks"] = setting_remarks(card["judges"])
    for role, index in (("reference", 0), ("candidate", 1)):
        outcomes = {k: both[k][index] for k in judged}
        card["p_prefer_longer"][role], card["n_prefer_longer"][role] = _prefer_longer(outcomes, lengths)
        judgments = [(j, flipped) for k in judged for j, flipped in _judgments(matched, k, index)]
        card["p_prefer_first"][role], card["n_prefer_first"][role] = _prefer_first(judgments)
    card["kappa"] = _finite_or_none(card["kappa"])
    card["kappa_decisive"] = _finite_or_none(card["kappa_decisive"])
    card["kappa_ci"] = [_finite_or_none(v) for v in card["kappa_ci"]]
    rows = [_matched_row(k, matched.rows[k], both[k]) for k in sorted(matched.rows)]
    return card, rows


def _finite_or_none(value):
    return None if value is None or value != value else float(value)


def _rate(outcomes: list[str], *wanted: str) -> float | None:
    return sum(o in wanted for o in outcomes) / len(outcomes) if outcomes else None


def _shifts(judged: list[Key], both: dict) -> dict[str, dict]:
    """Per system (``A vs B`` for a run between two systems): rates under each judge and the candidate's shift."""
    names = sorted({(s, o) for s, o, _ in judged})
    shifts = {}
    for system, opponent in names:
        keys = [k for k in judged if k[:2] == (system, opponent)]
        entry = {"opponent": opponent, "n": len(keys)}
        for metric, wanted in (("win_rate", ("win",)), ("win_tie_rate", ("win", "tie"))):
            ref = _rate([both[k][0] for k in keys], *wanted)
            cand = _rate([both[k][1] for k in keys], *wanted)
            entry[f"reference_{metric}"], entry[f"candidate_{metric}"], entry[metric] = ref, cand, cand - ref
        shifts[system if opponent == REFERENCE else f"{system} vs {opponent}"] = entry
    return shifts


def _rank_correlation(shifts: dict[str, dict]) -> dict:
    """Spearman and Kendall between the systems' win rates under the two judges (against the same opponent)."""
    names = sorted(shifts)
    ref = [shifts[n]["reference_win_rate"] for n in names]
    cand = [shifts[n]["candidate_win_rate"] for n in names]
    result = {"n_systems": len(names), "systems": names, "spearman": _finite_or_none(spearman_rho(ref, cand)),
              "kendall": _finite_or_none(kendall_tau(ref, cand))}
    if len(names) < 3:
        result["note"] = f"only {len(names)} system(s): a rank correlation needs at least 3 to say anything"
    elif result["spearman"] is None:
        result["note"] = "undefined: every system has the same win rate under one of the judges"
    return result


def _prefer_longer(outcomes: dict[Key, str], lengths: dict[Key, tuple[int, int]] | None) -> tuple[float | None, int]:
    """Among decisive verdicts on answers of different lengths, the share won by the longer answer."""
    if lengths is None:
        return None, 0
    won = n = 0
    for key, outcome in outcomes.items():
        words_a, words_b = lengths[key]
        if outcome == "tie" or words_a == words_b:
            continue
        n += 1
        won += (outcome == "win") == (words_a > words_b)
    return (won / n if n else None), n


def _judgments(matched: Matched, key: Key, index: int) -> list[tuple[dict, bool]]:
    verdict = matched.rows[key][index]
    flipped = matched.rows[key][2] and index == 1
    return [(j, flipped) for j in verdict.get("judgments") or []]


def _prefer_first(judgments: list[tuple[dict, bool]]) -> tuple[float | None, int]:
    """Among decisive judgments, the share won by the answer shown first (``a_position`` 1 and a win,
    or 2 and a loss, from the judgment's own ``system_a`` side)."""
    decisive = [j for j, _ in judgments if j.get("outcome") in ("win", "loss") and j.get("a_position") in (1, 2)]
    first = sum((j["outcome"] == "win") == (j["a_position"] == 1) for j in decisive)
    return (first / len(decisive) if decisive else None), len(decisive)


def _judge_info(runs: list[Run]) -> dict:
    """The judges' specs, parse and order settings, versions and run folders of one side."""
    def found(key: str) -> list:
        return sorted({str(run.summary[key]) for run in runs if run.summary.get(key) is not None})

    settings = [run_settings(run) for run in runs]
    return {"specs": sorted({j for run in runs for j in run.judges}),
            "parse": sorted({s["parse"] for s in settings if s["parse"]}) or ["strict"],
            "order": sorted({s["order"] for s in settings if s["order"]}), "package_version": found("package_version"),
            "runs": [str(Path(run.path)) for run in runs], "n_verdicts": sum(len(run.verdicts) for run in runs)}


def setting_remarks(judges: dict) -> list[str]:
    """What differs between the sides besides the judge, each a line of the card: the parse (the same replies
    are counted otherwise, so agreement and shifts mix a judge change with a parse change) and the order."""
    ref, cand = judges["reference"], judges["candidate"]
    remarks = []
    if ref["parse"] != cand["parse"]:
        remarks.append(f"parse differs: reference {', '.join(ref['parse'])}, candidate {', '.join(cand['parse'])}; the "
                       "sides count replies differently (a reply without a valid rating fails under strict, reads as a "
                       "tie or a digit under reference), so agreement and win-rate shifts mix the change of judge with "
                       "the change of parse: judge both sides with the same --parse")
    if ref["order"] and cand["order"] and ref["order"] != cand["order"]:
        remarks.append(f"order differs: reference {', '.join(ref['order'])}, candidate {', '.join(cand['order'])} "
                       "(P(prefer first) and agreement are read under different orders)")
    return remarks


def _matched_row(key: Key, row: tuple[dict, dict, bool], outcomes: tuple) -> dict:
    ref, cand, flipped = row
    return {"system": key[0], "opponent": key[1], "qid": key[2], "domain": ref.get("domain"),
            "reference_outcome": outcomes[0], "candidate_outcome": outcomes[1], "candidate_flipped": flipped,
            "reference_judgments": ref.get("judgments") or [], "candidate_judgments": cand.get("judgments") or []}
