"""Anchored rates of a run folder: a cheap judge's verdicts on every pair, corrected by a reference (another
judge's run folder on a random subset of the same pairs, or human labels) with PPI++ (:mod:`metric_arena.stats`).

A run folder with anchors holds ``anchored.json``: what anchors it (the judge or the labels file, the seed and
qids of the subset) and the anchored rates overall and per domain, beside the raw cheap rate and the
reference-only estimate. ``report`` and ``compare --anchored`` read it.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json
from metric_arena.report import Run, load_run
from metric_arena.report.views import ANCHORED_JSON, read_anchored
from metric_arena.stats import Intervals, anchored_difference, anchored_rate, load_human_labels, majority_labels

__all__ = ["ANCHOR_FOLDER", "METRICS", "anchored_comparison", "anchored_from_labels", "anchored_from_run",
           "draw_anchors", "write_anchored"]

#: The reference judge's run folder on the anchor subset, inside the cheap run's folder.
ANCHOR_FOLDER = "anchor"
#: The rates anchored: a win, and a win or a tie (as ``summary.json`` names them).
METRICS = {"win_rate": ("win",), "win_tie_rate": ("win", "tie")}
_FLIP = {"win": "loss", "loss": "win", "tie": "tie", None: None}
#: The cheap judge's rate on the anchors this far (two-sided p-value) from its rate on all pairs: a warning.
_NOT_RANDOM_P = 0.001


def draw_anchors(qids: Sequence[str], n: int, seed: int) -> list[str]:
    """A simple random subset of ``n`` of ``qids`` (all of them when fewer), drawn with ``seed``: the same qids
    for the same set of qids and seed, whatever their order (sorted, then ``random.Random(seed).sample``).

    >>> draw_anchors(["q3", "q1", "q2", "q4"], 2, seed=7) == draw_anchors(["q4", "q2", "q1", "q3"], 2, seed=7)
    True
    """
    if n < 1:
        raise RagQaArenaError(f"--anchor-sample must be a positive number of pairs (e.g. 300), got {n}")
    pool = sorted(set(qids))
    return sorted(random.Random(seed).sample(pool, min(n, len(pool))))


def _rates(run: Run, anchors: dict[str, str], *, intervals: Intervals, domains: dict[str, str]) -> dict:
    """Anchored rates overall and per domain: ``anchors`` ``{qid: reference outcome}`` (judged pairs only)."""
    cheap = {q: o for q, o in run.outcomes().items() if o is not None}
    used = sorted(q for q in anchors if q in cheap)

    def block(qids_all: list[str], qids_anchor: list[str]) -> dict:
        out = {}
        for metric, wanted in METRICS.items():
            r = anchored_rate([float(anchors[q] in wanted) for q in qids_anchor],
                              [float(cheap[q] in wanted) for q in qids_anchor],
                              [float(cheap[q] in wanted) for q in qids_all], intervals=intervals)
            out[metric] = r
        return out

    result = block(sorted(cheap), used)
    result["per_domain"] = {}
    for domain in sorted({d for d in domains.values() if d}):
        in_domain = [q for q in sorted(cheap) if domains.get(q) == domain]
        result["per_domain"][domain] = block(in_domain, [q for q in used if domains.get(q) == domain])
    return result


def _check_random(run: Run, anchors: dict[str, str], warnings: list[str]) -> None:
    """Warn when the cheap judge's win+tie rate on the anchored pairs is far from its rate on all pairs: a
    subset picked by hand (or by outcome), not drawn at random, biases every anchored figure."""
    cheap = [float(o in ("win", "tie")) for o in run.outcomes().values() if o is not None]
    on = [float(run.outcomes().get(q) in ("win", "tie")) for q in anchors if run.outcomes().get(q) is not None]
    if len(on) < 10 or len(cheap) <= len(on):
        return
    p_all, p_on = sum(cheap) / len(cheap), sum(on) / len(on)
    se = math.sqrt(max(p_all * (1 - p_all), 1e-9) * (1 / len(on) - 1 / len(cheap)))
    p_value = 2 * (1 - NormalDist().cdf(abs(p_on - p_all) / se))
    if p_value < _NOT_RANDOM_P:
        warnings.append(f"the anchored pairs do not look drawn at random: the cheap judge's win+tie rate is "
                        f"{p_on:.1%} on them and {p_all:.1%} on all pairs (p = {p_value:.2g}); anchored rates are "
                        "valid only for a random subset: draw it with --anchor-sample and --anchor-seed")


def _check_subset(run: Run, qids: set[str], what: str) -> None:
    judged = {v["qid"] for v in run.verdicts}
    outside = sorted(qids - judged)
    if outside:
        raise RagQaArenaError(f"{what}: {len(outside):,} anchored pair(s) are not pairs of the cheap run {run.path} "
                              f"(e.g. qid {outside[0]!r}): anchors must be a subset of the run's pairs (the same "
                              "prediction files and questions)")


def anchored_from_run(run: Run | str | os.PathLike, anchor: Run | str | os.PathLike, *,
                      intervals: Intervals = Intervals(), seed: int | None = None, sample: int | None = None) -> dict:
    """Anchored rates of the cheap ``run`` from ``anchor``, a run folder of the same system and opponent judged by
    the reference judge on a subset of the pairs. ``seed`` (and ``sample``, the subset's size; default: the
    anchor run's): the subset was drawn by :func:`draw_anchors` over the run's pairs; the qids are checked
    against a fresh draw. Anchored pairs outside that draw (left from a run with another seed or size) are left
    out; drawn pairs missing from the anchor run, or a subset that is not the draw at all: a warning."""
    run = run if isinstance(run, Run) else load_run(run, lean=True)
    anchor = anchor if isinstance(anchor, Run) else load_run(anchor, lean=True)
    if {anchor.system, anchor.opponent} != {run.system, run.opponent}:
        raise RagQaArenaError(f"the anchor run {anchor.path} judges {anchor.system!r} against {anchor.opponent!r} but "
                              f"the cheap run {run.path} judges {run.system!r} against {run.opponent!r}: anchor a run "
                              "with the reference judge's verdicts on the same systems' pairs")
    flipped = anchor.system != run.system
    outcomes = {q: (_FLIP[o] if flipped else o) for q, o in anchor.outcomes().items()}
    _check_subset(run, set(outcomes), f"--anchor-run {anchor.path}")
    warnings: list[str] = []
    if seed is not None:
        redrawn = draw_anchors([v["qid"] for v in run.verdicts], sample or len(outcomes), seed)
        extra = sorted(set(outcomes) - set(redrawn))
        if sample is not None and extra and len(extra) < len(outcomes):
            warnings.append(f"{len(extra):,} anchored pair(s) in {anchor.path} are not in the draw of seed {seed} "
                            f"(--anchor-sample {sample}; left from another draw): left out")
            outcomes = {q: o for q, o in outcomes.items() if q in set(redrawn)}
        if sorted(outcomes) != redrawn:
            warnings.append(f"the anchored qids are not the random draw of seed {seed} from the run's "
                            f"{len(run.verdicts):,} pairs: the subset was changed or picked by hand")
    source = {"kind": "judge", "judges": list(anchor.judges), "run": str(anchor.path), "seed": seed,
              "n_drawn": len(outcomes)}
    return _result(run, outcomes, source, intervals, warnings)


def anchored_from_labels(run: Run | str | os.PathLike, labels: str | os.PathLike, *,
                         intervals: Intervals = Intervals()) -> dict:
    """Anchored rates of the cheap ``run`` from human labels (``report --human-labels`` JSONL: ``qid``,
    ``system_a``, ``system_b``, ``label``; several annotators of a pair are merged by majority). Labels of
    other systems are left out; none of the run's systems: refused."""
    run = run if isinstance(run, Run) else load_run(run, lean=True)
    merged = majority_labels(load_human_labels(labels))
    outcomes: dict[str, str | None] = {}
    for (qid, a, b), label in merged.items():
        if (a, b) == (run.system, run.opponent):
            outcomes[qid] = label
        elif (b, a) == (run.system, run.opponent):
            outcomes[qid] = _FLIP[label]
    if not outcomes:
        named = sorted({f"{a} vs {b}" for _, a, b in merged})[:3]
        raise RagQaArenaError(f"--human-labels {labels}: no label compares {run.system!r} with {run.opponent!r} "
                              f"(the labels compare {', '.join(named) or 'nothing'}): label the run's own pairs")
    _check_subset(run, set(outcomes), f"--human-labels {labels}")
    warnings = [f"{len(merged) - len(outcomes):,} labelled pair(s) of other systems left out"] \
        if len(merged) > len(outcomes) else []
    warnings.append("human labels carry no record of how their pairs were chosen: anchored rates are valid only "
                    "if they were drawn at random from the run's pairs")
    source = {"kind": "human", "labels": str(labels), "seed": None, "n_drawn": len(outcomes)}
    return _result(run, outcomes, source, intervals, warnings)


def _result(run: Run, outcomes: dict[str, str | None], source: dict, intervals: Intervals,
            warnings: list[str]) -> dict:
    judged = {q: o for q, o in outcomes.items() if o is not None}
    failed_cheap = sorted(q for q in judged if run.outcomes().get(q) is None)
    if len(judged) < len(outcomes) or failed_cheap:
        warnings.append(f"{len(outcomes) - len(judged) + len(failed_cheap):,} anchored pair(s) failed on a side and "
                        "are left out")
    _check_random(run, judged, warnings)
    domains = {v["qid"]: v.get("domain") for v in run.verdicts}
    rates = _rates(run, judged, intervals=intervals, domains=domains)
    if rates["win_rate"]["estimate"] is None:
        warnings.append(f"only {rates['win_rate']['n']} anchored pair(s) judged on both sides: too few for an "
                        "anchored interval")
    label = (f"{', '.join(source['judges'])}" if source["kind"] == "judge" else "human labels")
    return {"anchored_version": 1, "system": run.system, "opponent": run.opponent, "cheap_judges": list(run.judges),
            "anchor": {**source, "label": label, "qids": sorted(outcomes), "n": rates["win_rate"]["n"]},
            "confidence": intervals.confidence, "method": "PPI++ (power-tuned lambda), Wilson interval at n_effective",
            **rates, "warnings": warnings}


def write_anchored(run_folder: str | os.PathLike, result: dict) -> Path:
    """Write ``anchored.json`` (strict JSON) into the run folder."""
    path = Path(run_folder) / ANCHORED_JSON
    atomic_write(path, dumps_json(result))
    return path


def anchored_comparison(base: str | os.PathLike, new: str | os.PathLike, *, min_delta: float = 0.0,
                        confidence: float = 0.95) -> dict:
    """``new - base`` in the anchored win and win+tie rates of two run folders with ``anchored.json``, with a
    normal interval (the two anchored estimates' variances added: their anchors are drawn apart, and the
    positive correlation of two runs on the same questions only narrows the truth's spread, so the interval
    is conservative). ``worse``: for some rate the whole interval lies below ``-min_delta``."""
    sides = {}
    for name, folder in (("base", base), ("new", new)):
        data = read_anchored(folder)
        if data is None:
            raise RagQaArenaError(f"--anchored: {folder} has no {ANCHORED_JSON}: anchor it first (rag-qa-arena anchor "
                                  "--predictions ... --anchor-judge ..., or --run RUN --human-labels FILE)")
        sides[name] = data
    if sides["base"].get("opponent") != sides["new"].get("opponent"):
        raise RagQaArenaError(f"--anchored: base is judged against {sides['base'].get('opponent')!r} and new against "
                              f"{sides['new'].get('opponent')!r}: compare runs against the same opponent")
    metrics, worse_on = {}, []
    for metric in METRICS:
        b, n = sides["base"][metric], sides["new"][metric]
        if b.get("estimate") is None or n.get("estimate") is None:
            raise RagQaArenaError(f"--anchored: too few anchors for an anchored {metric} in "
                                  f"{base if b.get('estimate') is None else new} (at least 10 judged on both sides)")
        difference = anchored_difference(b, n, confidence=confidence)
        metrics[metric] = {"rate_base": b["estimate"], "rate_new": n["estimate"], **difference,
                           "n_anchors": [b["n"], n["n"]]}
        if difference["difference_ci"][1] < -min_delta:
            worse_on.append(metric)
    return {"base": {"run": str(base), "system": sides["base"]["system"], "anchor": sides["base"]["anchor"]["label"]},
            "new": {"run": str(new), "system": sides["new"]["system"], "anchor": sides["new"]["anchor"]["label"]},
            "confidence": confidence, "min_delta": min_delta, "metrics": metrics, "worse": bool(worse_on),
            "worse_on": worse_on}
