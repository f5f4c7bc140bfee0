"""The two sides of a calibration: run folders of the same pairs judged by two judges, matched pair by pair."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.report import Run, load_run

__all__ = ["ROLES", "Matched", "check_judges", "load_side", "match_pairs"]

ROLES = ("reference", "candidate")
_FLIP = {"win": "loss", "loss": "win", "tie": "tie", None: None}
#: How many unmatched pairs the card names (all are counted).
_NAMED = 20


@dataclass
class Matched:
    """Pairs judged on both sides, keyed ``(system, opponent, qid)`` as the reference runs name them.

    ``rows[key] = (reference verdict, candidate verdict, flipped)``: ``flipped`` when the candidate's
    run judged the pair the other way round (its ``system_a`` is the reference's ``system_b``); its
    outcomes are then turned to the reference's side before they are compared.
    """

    rows: dict[tuple[str, str, str], tuple[dict, dict, bool]]
    reference_only: list[tuple[str, str, str]]
    candidate_only: list[tuple[str, str, str]]

    def unmatched(self) -> dict:
        """Counts of the pairs judged on one side only, and the first of them named."""
        def named(keys):
            return [{"system": s, "opponent": o, "qid": q} for s, o, q in sorted(keys)[:_NAMED]]

        return {"reference_only": len(self.reference_only), "candidate_only": len(self.candidate_only),
                "reference_only_pairs": named(self.reference_only), "candidate_only_pairs": named(self.candidate_only)}


def candidate_outcome(verdict: dict, flipped: bool) -> str | None:
    """The candidate's outcome from the reference's side."""
    return _FLIP[verdict.get("outcome")] if flipped else verdict.get("outcome")


def load_side(paths: Sequence[str | os.PathLike | Run], role: str) -> list[Run]:
    """The run folders of one side, checked: at least one, each a run folder, each pair of systems once."""
    if not paths:
        raise RagQaArenaError(f"No {role} run folders given: pass the folders `rag-qa-arena judge --out` wrote for "
                              f"the {role} judge (--{role} RUN...)")
    runs = [path if isinstance(path, Run) else load_run(path) for path in paths]
    seen: dict[frozenset, Run] = {}
    for run in runs:
        key = frozenset((run.system, run.opponent))
        if key in seen:
            same = Path(seen[key].path).resolve() == Path(run.path).resolve()
            raise RagQaArenaError(
                f"--{role} {run.path}: " + ("given twice" if same else f"judges {run.system!r} against "
                                            f"{run.opponent!r} like {seen[key].path}")
                + ": pass one run folder per pair of systems on each side")
        seen[key] = run
    return runs


def check_sides(reference: list[Run], candidate: list[Run]) -> None:
    """One folder on both sides compares a judge with itself: refused."""
    mine = {Path(r.path).resolve(): r.path for r in reference}
    for run in candidate:
        if Path(run.path).resolve() in mine:
            raise RagQaArenaError(f"{run.path} is given as both --reference and --candidate: the candidate side needs "
                                  "the same pairs judged by the other judge (its own run folders)")


def match_pairs(reference: list[Run], candidate: list[Run]) -> Matched:
    """Match verdicts by system, opponent and qid (either way round); raise when nothing matches."""
    check_sides(reference, candidate)
    theirs: dict[tuple[str, str, str], dict] = {}
    for run in candidate:
        for verdict in run.verdicts:
            theirs[(run.system, run.opponent, verdict["qid"])] = verdict
    rows: dict[tuple[str, str, str], tuple[dict, dict, bool]] = {}
    reference_only = []
    for run in reference:
        for verdict in run.verdicts:
            key = (run.system, run.opponent, verdict["qid"])
            swapped = (run.opponent, run.system, verdict["qid"])
            if key in theirs:
                rows[key] = (verdict, theirs.pop(key), False)
            elif swapped in theirs:
                rows[key] = (verdict, theirs.pop(swapped), True)
            else:
                reference_only.append(key)
    if not rows:
        raise RagQaArenaError(_nothing_matched(reference, candidate))
    return Matched(rows, reference_only, sorted(theirs))


def _nothing_matched(reference: list[Run], candidate: list[Run]) -> str:
    def pairs(runs):
        return sorted({f"{r.system} vs {r.opponent}" for r in runs})

    ref_pairs, cand_pairs = pairs(reference), pairs(candidate)
    if not {frozenset((r.system, r.opponent)) for r in reference} & {frozenset((r.system, r.opponent)) for r in candidate}:
        why = f"the reference runs judge {', '.join(ref_pairs)} and the candidate runs {', '.join(cand_pairs)}"
    else:
        why = "the runs judge the same systems on different questions (no shared qid)"
    return (f"No pair is judged on both sides: {why}. Judge the same prediction files (the same --sample and "
            "--seed) with both judges, then calibrate")


def check_judges(reference: list[Run], candidate: list[Run], matched: Matched, *, allow_same_judge: bool = False) -> None:
    """A card of a judge against itself says nothing about the candidate: refused (unless ``allow_same_judge``,
    e.g. to see what another parse or order does to one judge) when both sides name the same judges, or when
    the candidate's replies are the reference's, word for word, on every matched pair (a copy of the run)."""
    if allow_same_judge:
        return
    judges = {role: sorted({j for run in runs for j in run.judges}) for role, runs in zip(ROLES, (reference, candidate))}
    copied = _copied_replies(matched)
    if judges["reference"] == judges["candidate"]:
        why = f"both sides were judged by {', '.join(judges['reference']) or 'an unknown judge'}"
        if copied:
            why += " with the same replies on every matched pair (a copy of the reference run)"
    elif copied:
        why = (f"the candidate ({', '.join(judges['candidate'])}) gives the reference's replies, word for word, on "
               f"every one of the {len(matched.rows):,} matched pairs: a copy of the reference run under another name")
    else:
        return
    raise RagQaArenaError(f"calibrate refused (same judge): {why}. Give the candidate judge's own runs of the same "
                          "pairs (--candidate), or pass --allow-same-judge to compare a judge with itself (e.g. "
                          "another --parse or --order)")


def _copied_replies(matched: Matched) -> bool:
    """Whether every matched pair's candidate judgments hold exactly the reference's reply texts (not all empty)."""
    def replies(verdict: dict) -> list[str]:
        return sorted(str(j.get("raw") or "") for j in verdict.get("judgments") or [] if isinstance(j, dict))

    pairs = [(replies(ref), replies(cand)) for ref, cand, _ in matched.rows.values()]
    return any(any(ref) for ref, _ in pairs) and all(ref == cand for ref, cand in pairs)
