"""What the judge card concludes: the candidate's rates anchored on the reference's verdicts (PPI++), the
interval of each system's shift, and a plain reading — can the candidate rank systems, give absolute rates
only when anchored, or neither — from the kappa interval, the rank correlation and the shift intervals.

Thresholds (:data:`THRESHOLDS`):

- *can rank*: the kappa interval's lower end is at least 0.4 (at least "moderate" agreement, Landis & Koch)
  and, with 3 systems or more, Spearman's rho between the two judges' win rates is at least 0.8 (with fewer
  systems the ranking is not tested, and the candidate is not said to rank);
- *absolute rates without anchors*: every system's shift interval (win and win+tie rate, candidate minus
  reference on the pairs both judged, 95% normal interval) lies within +-3 points;
- *neither*: the kappa interval's lower end is below 0.4: the candidate says too little about the reference's
  verdicts; anchoring stays valid (unbiased, with a valid interval) but its interval is then hardly narrower
  than the reference's alone (the gain is about 1 - sqrt(1 - rho^2), rho the two judges' correlation).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from metric_arena.report import REFERENCE, Run
from metric_arena.stats import Intervals, anchored_rate

__all__ = ["THRESHOLDS", "anchored_figures", "plain_reading", "shift_intervals"]

THRESHOLDS = {"rank_kappa_low": 0.4, "rank_spearman": 0.8, "rank_min_systems": 3, "raw_shift_points": 3.0}
_WANTED = {"win_rate": ("win",), "win_tie_rate": ("win", "tie")}
_FLIP = {"win": "loss", "loss": "win", "tie": "tie", None: None}


def _name(system: str, opponent: str) -> str:
    return system if opponent == REFERENCE else f"{system} vs {opponent}"


def anchored_figures(reference: list[Run], candidate: list[Run], both: dict, *, confidence: float) -> dict:
    """Per system (as the card names it): the candidate's rates on all its pairs anchored on the reference's
    verdicts on the pairs both judged (``both``: ``{(system, opponent, qid): (reference, candidate)}``)."""
    out = {}
    for ref_run in reference:
        key = (ref_run.system, ref_run.opponent)
        cand_run = next((r for r in candidate if {r.system, r.opponent} == set(key)), None)
        if cand_run is None:
            continue
        flipped = cand_run.system != ref_run.system
        cheap = {q: _FLIP[o] if flipped else o for q, o in cand_run.outcomes().items() if o is not None}
        anchors = sorted(k[2] for k, (r, c) in both.items() if k[:2] == key and r is not None and c is not None)
        entry = {"n_anchors": len(anchors), "n_candidate": len(cheap)}
        for metric, wanted in _WANTED.items():
            r = anchored_rate([float(both[(*key, q)][0] in wanted) for q in anchors],
                              [float(cheap[q] in wanted) for q in anchors],
                              [float(o in wanted) for o in cheap.values()], intervals=Intervals(confidence=confidence))
            entry[metric] = {"estimate": r["estimate"], "ci": r["ci"], "raw": r["cheap"]["estimate"],
                             "reference_only": r["reference_only"]["estimate"], "n_effective": r["n_effective"]}
        out[_name(*key)] = entry
    return out


def shift_intervals(both: dict, judged: list, *, confidence: float) -> dict:
    """Per system: the normal interval of the candidate's shift (candidate minus reference, paired by pair)."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    out: dict[str, dict] = {}
    for key in sorted({k[:2] for k in judged}):
        keys = [k for k in judged if k[:2] == key]
        entry = {}
        for metric, wanted in _WANTED.items():
            d = [float(both[k][1] in wanted) - float(both[k][0] in wanted) for k in keys]
            mean = sum(d) / len(d)
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1)) if len(d) > 1 else float("inf")
            entry[metric] = [mean - z * sd / math.sqrt(len(d)), mean + z * sd / math.sqrt(len(d))]
        out[_name(*key)] = entry
    return out


def plain_reading(card: dict) -> dict:
    """``{"reading", "can_rank", "raw_rates_ok", "reasons", "thresholds"}`` from the card's ``kappa_ci``,
    ``rank_correlation`` and ``shift_ci`` (see the module's thresholds)."""
    t = THRESHOLDS
    low = card["kappa_ci"][0]
    rank = card["rank_correlation"]
    reasons = []
    agrees = low is not None and low >= t["rank_kappa_low"]
    reasons.append(f"kappa interval's lower end {'n/a' if low is None else f'{low:.2f}'} "
                   f"{'>=' if agrees else '<'} {t['rank_kappa_low']}")
    if rank["n_systems"] < t["rank_min_systems"]:
        ranks = False
        reasons.append(f"{rank['n_systems']} system(s): ranking not tested (needs {t['rank_min_systems']})")
    else:
        rho = rank["spearman"]
        ranks = rho is not None and rho >= t["rank_spearman"]
        reasons.append(f"Spearman {'n/a' if rho is None else f'{rho:.2f}'} {'>=' if ranks else '<'} {t['rank_spearman']}")
    limit = t["raw_shift_points"] / 100
    off = sorted(name for name, s in card["shift_ci"].items()
                 if any(ci[0] < -limit or ci[1] > limit for ci in s.values()))
    raw_ok = not off
    reasons.append("every shift interval within +-3 points" if raw_ok else
                   f"shift interval beyond +-3 points for {', '.join(off[:5])}")
    if agrees and ranks:
        reading = "can rank systems" + (" and give absolute rates" if raw_ok else "; absolute rates only when anchored")
    elif agrees:
        reading = "absolute rates only when anchored (cannot be trusted to rank systems alone)"
    else:
        reading = "neither: use the reference judge (anchoring stays valid but hardly narrows its interval)"
    return {"reading": reading, "can_rank": agrees and ranks, "raw_rates_ok": agrees and raw_ok,
            "reasons": reasons, "thresholds": dict(t)}
