"""The anchored workflow in one run: every pair judged by the cheap judge, a seeded random subset by the
reference judge too, then the anchored rates (``anchored.json``); its dry run prices both judges and says how
many anchors a target half-width needs."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.calibrate._anchor import (
    ANCHOR_FOLDER,
    METRICS,
    anchored_from_run,
    draw_anchors,
    write_anchored,
)
from metric_arena.judge import JudgeInputs, JudgeSpec, judge_config, judge_dry_run, judge_pairs
from metric_arena.llm import RunConfig
from metric_arena.records import VERDICTS_FILE, RunOutput
from metric_arena.report import load_run
from metric_arena.stats import MIN_ANCHORS, Intervals, anchor_size

__all__ = ["AnchorPlan", "anchor_dry_run", "judge_anchored"]


@dataclass(frozen=True, kw_only=True)
class AnchorPlan:
    """The reference judge and its subset: ``judge`` (a spec or :class:`~metric_arena.JudgeConfig`; order and
    parse as the cheap judge's unless it is a config of its own), ``sample`` pairs drawn at random with ``seed``
    (:func:`draw_anchors`), sent with ``run`` (its server; default: the cheap judge's)."""

    judge: JudgeSpec
    sample: int = 300
    seed: int = 0
    run: RunConfig | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.sample, int) or self.sample < MIN_ANCHORS:
            raise RagQaArenaError(f"--anchor-sample must be at least {MIN_ANCHORS} pairs (e.g. 300), got {self.sample!r}")


def _anchor_config(plan: AnchorPlan, cheap: JudgeSpec):
    """The reference judge's config: the cheap judge's order, seed and parse, unless the plan gives its own."""
    cheap_config = judge_config(cheap)
    if isinstance(plan.judge, (str, list, tuple)):
        return replace(cheap_config, judges=[plan.judge] if isinstance(plan.judge, str) else list(plan.judge))
    return plan.judge


def _subset(inputs: JudgeInputs, qids: list[str]) -> JudgeInputs:
    wanted = set(qids)
    keep = [i for i, q in enumerate(inputs.qids) if q in wanted]
    pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
    return replace(inputs, ids=pick(inputs.qids), predictions=pick(inputs.predictions),
                   references=pick(inputs.references), questions=pick(inputs.questions),
                   domains=None if inputs.domains is None else pick(inputs.domains),
                   generation_failed=pick(inputs.failed), sample=None, target_width=None)


def _eligible(inputs: JudgeInputs) -> list[str]:
    return [q for q, failed in zip(inputs.qids, inputs.failed) if not failed]


def judge_anchored(
    inputs: JudgeInputs,
    *,
    judge: JudgeSpec,
    anchor: AnchorPlan,
    out: str | os.PathLike,
    run: RunConfig | None = None,
    system: str | None = None,
    data_dir: str | os.PathLike | None = None,
    intervals: Intervals = Intervals(),
    progress: bool | None = None,
    overwrite: bool = False,
) -> dict:
    """Judge every pair of ``inputs`` with ``judge`` into the run folder ``out``, the ``anchor`` subset with the
    reference judge into ``out/anchor``, and write ``out/anchored.json``. Resumable like
    :func:`~metric_arena.judge_pairs` (both judges' answers are cached). Returns ``{"cheap": summary,
    "anchor": summary, "anchored": anchored rates}``."""
    anchors = draw_anchors(inputs.qids, anchor.sample, anchor.seed)
    inputs = replace(inputs, system=system or Path(out).resolve().name)
    common = dict(data_dir=data_dir, output=RunOutput(progress=progress, overwrite=overwrite),
                  intervals=Intervals(n_boot=intervals.n_boot, confidence=intervals.confidence))  # the judge's seed
    cheap = judge_pairs(inputs, judge=judge, run=run, out=out, **common)
    part = _subset(inputs, anchors)
    reference = judge_pairs(part, judge=_anchor_config(anchor, judge), run=anchor.run or run,
                            out=Path(out) / ANCHOR_FOLDER, **common)
    result = anchored_from_run(out, Path(out) / ANCHOR_FOLDER, intervals=intervals, seed=anchor.seed,
                               sample=anchor.sample)
    write_anchored(out, result)
    return {"cheap": cheap, "anchor": reference, "anchored": result}


def anchor_dry_run(
    inputs: JudgeInputs,
    *,
    judge: JudgeSpec,
    anchor: AnchorPlan,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
    half_width: float = 0.03,
    pilot: str | os.PathLike | None = None,
    intervals: Intervals = Intervals(),
) -> dict:
    """What :func:`judge_anchored` would send, per judge (``estimates``: the cheap judge's on every pair, the
    reference judge's on the subset), and ``plan``: the anchors the win rate's ``half_width`` needs, from the
    ``pilot`` run folder (an earlier anchored run: both judges on a first subset), else None."""
    eligible = _eligible(inputs)
    part = _subset(inputs, draw_anchors(inputs.qids, anchor.sample, anchor.seed))
    part = _subset(part, _eligible(part))  # (a pair whose answer failed to generate is never sent)
    full = _subset(inputs, eligible)
    estimates = {
        "cheap": judge_dry_run(full, judge=judge, run=run, data_dir=data_dir),
        "anchor": judge_dry_run(part, judge=_anchor_config(anchor, judge), run=anchor.run or run, data_dir=data_dir),
    }
    plan = None
    if pilot is not None and (Path(pilot) / ANCHOR_FOLDER / VERDICTS_FILE).is_file():
        plan = pilot_plan(pilot, n_total=len(eligible), half_width=half_width, intervals=intervals)
    return {"n_pairs": len(eligible), "n_anchors": len(part.qids), "estimates": estimates, "plan": plan,
            "half_width": half_width}


def pilot_plan(pilot: str | os.PathLike, *, n_total: int, half_width: float, intervals: Intervals) -> dict:
    """:func:`~metric_arena.stats.anchor_size` of the win rate and the win+tie rate from a pilot run folder."""
    cheap, reference = load_run(pilot, lean=True), load_run(Path(pilot) / ANCHOR_FOLDER, lean=True)
    mine, theirs = cheap.outcomes(), reference.outcomes()
    flipped = reference.system != cheap.system
    flip = {"win": "loss", "loss": "win", "tie": "tie"}
    both = [(flip[theirs[q]] if flipped else theirs[q], mine[q]) for q in sorted(theirs)
            if theirs[q] is not None and mine.get(q) is not None]
    if len(both) < MIN_ANCHORS:
        raise RagQaArenaError(f"the pilot {pilot} has {len(both)} pair(s) judged by both judges: at least "
                              f"{MIN_ANCHORS} are needed to plan the anchors")
    return {metric: {**anchor_size([float(r in wanted) for r, _ in both], [float(c in wanted) for _, c in both],
                                   n_total=n_total, half_width=half_width, intervals=intervals), "pilot": str(pilot)}
            for metric, wanted in METRICS.items()}
