"""The data behind the report's pictures: win rate and win+tie rate against the length ratio to the
reference's answer (per system, Wilson intervals per bin), the system x system win matrix of all
battles, and an adaptive tournament's neighbouring pairs not yet separated (from ``tournament.json``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from lfrqa.kernel import loads_json
from metric_arena.report._runs import Run
from metric_arena.stats import wilson_interval
from metric_arena.records import TOURNAMENT_FILE

__all__ = ["RATIO_EDGES", "adaptive_pairs", "length_ratio_curves", "win_matrix"]

#: Edges of the length-ratio bins (system words / reference words), even on a log scale around 1.
RATIO_EDGES = (0.0, 0.5, 0.67, 0.8, 1.0, 1.25, 1.5, 2.0, math.inf)


def _rate(k: int, n: int, confidence: float) -> tuple[float | None, list[float] | None]:
    if not n:
        return None, None
    low, high = wilson_interval(k, n, confidence)
    return k / n, [low, high]


def length_ratio_curves(runs: Sequence[Run], *, reference: str, confidence: float = 0.95) -> dict:
    """Per system judged against ``reference``: its judged verdicts that record both lengths, binned by
    words / reference words (:data:`RATIO_EDGES`); each bin ``range`` ([low, high], high None for the
    last), ``ratio`` (the bin's median ratio), ``n``, ``win_rate``, ``win_tie_rate`` and their Wilson
    ``_ci`` at ``confidence`` (each verdict is one question, so the bins' questions are independent
    draws). Systems without lengths are left out; ``{}`` when none has them."""
    curves = {}
    for run in runs:
        if run.opponent != reference:
            continue
        points = []
        for v in run.verdicts:
            a, b = v.get("style_a") or {}, v.get("style_b") or {}
            words_a, words_b = a.get("words"), b.get("words")
            if v.get("outcome") is None or not isinstance(words_a, int) or not isinstance(words_b, int) or words_b <= 0:
                continue
            points.append((words_a / words_b, v["outcome"]))
        if not points:
            continue
        bins = []
        for low, high in zip(RATIO_EDGES, RATIO_EDGES[1:]):
            inside = sorted((r, o) for r, o in points if low <= r < high)
            n = len(inside)
            wins = sum(o == "win" for _, o in inside)
            win_ties = sum(o != "loss" for _, o in inside)
            win_rate, win_ci = _rate(wins, n, confidence)
            wt_rate, wt_ci = _rate(win_ties, n, confidence)
            bins.append({"range": [low, None if high == math.inf else high], "n": n,
                         "ratio": inside[n // 2][0] if n else None, "win_rate": win_rate, "win_rate_ci": win_ci,
                         "win_tie_rate": wt_rate, "win_tie_rate_ci": wt_ci})
        curves[run.system] = {"n": len(points), "bins": bins}
    return curves


def win_matrix(runs: Sequence[Run], *, order: Sequence[str] | None = None, confidence: float = 0.95) -> dict:
    """Every pair of players that met: ``cells[a][b]`` holds a's ``wins``, ``ties``, ``losses`` against b,
    ``n`` and ``win_rate`` (wins / n) with its Wilson ``win_rate_ci`` and ``score`` ((wins + ties / 2) / n),
    from both runs' sides (a run of b against a counts too). ``systems``: the players in ``order`` (e.g. the
    leaderboard's), others after them by name."""
    counts: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        for v in run.verdicts:
            outcome = v.get("outcome")
            if outcome is None:
                continue
            k = {"win": 0, "tie": 1, "loss": 2}[outcome]
            counts.setdefault((run.system, run.opponent), [0, 0, 0])[k] += 1
            counts.setdefault((run.opponent, run.system), [0, 0, 0])[2 - k] += 1
    players = {p for pair in counts for p in pair}
    systems = [p for p in order or () if p in players] + sorted(players - set(order or ()))
    cells: dict[str, dict[str, dict]] = {}
    for (a, b), (wins, ties, losses) in counts.items():
        n = wins + ties + losses
        rate, ci = _rate(wins, n, confidence)
        cells.setdefault(a, {})[b] = {"wins": wins, "ties": ties, "losses": losses, "n": n, "win_rate": rate,
                                      "win_rate_ci": ci, "score": (wins + ties / 2) / n}
    return {"systems": systems, "cells": cells}


def adaptive_pairs(runs: Sequence[Run], *, reference: str) -> dict | None:
    """An adaptive tournament's state when it stopped, from the ``tournament.json`` beside the runs (one
    folder holding every pair run): ``stopped``, ``alpha``, ``rounds``, ``pair_judgments``,
    ``max_judgments``, ``neighbours`` (``upper``, ``lower``, ``n``, ``win_rate``: upper's share with a tie
    as half, ``interval``: its anytime-valid confidence sequence, ``separated``) and ``unseparated`` (the
    neighbours whose interval still holds 1/2). None when the runs are not one adaptive tournament."""
    pair_runs = [run for run in runs if run.opponent != reference]
    folders = {run.path.resolve().parent for run in runs}
    if not pair_runs or len(folders) != 1:
        return None
    try:
        record = loads_json((folders.pop() / TOURNAMENT_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("neighbours"), list):
        return None
    neighbours = [row for row in record["neighbours"] if isinstance(row, dict) and {"upper", "lower"} <= set(row)
                  and _interval(row.get("interval"))]
    return {"stopped": record.get("stopped"), "alpha": record.get("alpha"), "rounds": record.get("rounds"),
            "pair_judgments": record.get("pair_judgments"), "max_judgments": record.get("max_judgments"),
            "neighbours": neighbours, "unseparated": [row for row in neighbours if not row.get("separated")]}


def _interval(value) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value))
