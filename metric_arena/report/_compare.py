"""A CI gate: two judged runs of one system (a base and a new version), compared on the questions
both answered, with the paired test of :func:`metric_arena.stats.paired_comparison`.

For the win rate and the win+tie rate (both against LFRQA): the difference new − base on the
shared questions, its paired bootstrap interval and the exact sign-test p-value. The new run is
*significantly worse* when, for either rate, the p-value is below ``1 − confidence`` and the whole
interval lies below ``−min_delta`` (a drop larger than ``min_delta`` that chance does not explain).

A gate must never pass what it cannot judge: a comparison that would say nothing is refused with
:class:`ComparisonRefused`, whose ``reason`` is one of :data:`REFUSALS` (a stable code for machines)
and whose message names the run and the fix. Refused: the same folder twice (``same_run``); a run
whose ``verdicts.jsonl`` holds no verdict (``empty_run``) or no judged pair, every judgment failed
(``no_judged_pairs``); a run holding a qid more than once (``repeated_qids``: a finished judge run
holds each once); runs against different opponents (``different_opponents``), by different judges
(``different_judges``, unless ``allow_judge_change``), with another parse or order
(``setting_changed``, unless ``allow_setting_change``: each moves the rates by itself); runs that
share no question judged on both sides (``no_shared_questions``) or fewer than
:class:`MinShared` asks (``too_few_shared``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import read_json_file
from metric_arena.records import SUMMARY_FILE, VERDICTS_FILE, injection_counts
from metric_arena.report._runs import Run, load_run, run_settings
from metric_arena.stats import paired_comparison

__all__ = ["COMPARED_METRICS", "REFUSALS", "ComparisonRefused", "MinShared", "compare_runs", "refuse_other_scoring",
           "run_scoring"]

COMPARED_METRICS = ("win_rate", "win_tie_rate")
#: The reasons a comparison is refused (``ComparisonRefused.reason``).
REFUSALS = ("same_run", "empty_run", "no_judged_pairs", "repeated_qids", "different_opponents", "different_judges",
            "setting_changed", "no_shared_questions", "too_few_shared")
#: The settings of a run that move its rates by themselves (besides the judge).
COMPARED_SETTINGS = ("parse", "order")
#: The settings that name who scored a run (the judges, a ``cite`` run's entailment model): a change is
#: refused as ``different_judges``, any other as ``setting_changed``.
JUDGE_SETTINGS = ("judges", "entailment")
#: The flag that sets each setting, named in a refusal.
_FLAGS = {"judges": "--judge", "parse": "--parse", "order": "--order", "entailment": "--entailment",
          "n_passages": "--passages"}


class ComparisonRefused(RagQaArenaError):
    """Two runs that cannot be compared; ``reason`` is one of :data:`REFUSALS`."""

    def __init__(self, reason: str, message: str):
        super().__init__(f"compare refused ({reason}): {message}")
        self.reason = reason
        self.detail = message


@dataclass(frozen=True)
class MinShared:
    """The fewest questions judged in both runs a comparison needs: at least ``count`` of them, and at
    least ``share`` of the questions judged in the base run (0 turns a check off)."""

    count: int = 10
    share: float = 0.5

    def __post_init__(self):
        if not (isinstance(self.count, int) and self.count >= 0):
            raise RagQaArenaError(f"MinShared.count must be a whole number >= 0, got {self.count!r}")
        if not (0.0 <= self.share <= 1.0):
            raise RagQaArenaError(f"MinShared.share must be a fraction in [0, 1] (e.g. 0.5), got {self.share!r}")


def compare_runs(
    base: str | os.PathLike,
    new: str | os.PathLike,
    *,
    min_delta: float = 0.0,
    min_shared: MinShared = MinShared(),
    allow_judge_change: bool = False,
    allow_setting_change: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Paired comparison of the run folders ``base`` and ``new`` (see the module notes); raises
    :class:`ComparisonRefused` when the two cannot be compared.

    Returns ``{"status": "worse" | "not_worse", "base", "new" (run, system, judges, settings),
    "n_shared", "min_delta", "min_shared", "confidence", "metrics": {metric: paired result with
    difference = new − base}, "worse": bool, "worse_on": [metrics], "warnings": [lines],
    "injection": {"base": counts, "new": counts}}``: the counts of
    :func:`~metric_arena.records.injection_counts` for each run's system on the shared questions
    (answers addressing the judge, defused prompt tags).
    """
    if not (min_delta >= 0.0):
        raise RagQaArenaError(f"min_delta must be >= 0 (a rate difference such as 0.02), got {min_delta!r}")
    if Path(base).resolve() == Path(new).resolve():
        raise ComparisonRefused("same_run", f"{base} and {new} are the same run folder: give the base run and the "
                                            "new version's run (two `judge --out` folders)")
    runs = {"BASE": load_run(Path(base)), "NEW": load_run(Path(new))}
    for role, run in runs.items():
        _check_usable(role, run)
    base_run, new_run = runs["BASE"], runs["NEW"]
    if base_run.opponent != new_run.opponent:
        raise ComparisonRefused("different_opponents", f"{base} is judged against {base_run.opponent!r} and {new} "
                                f"against {new_run.opponent!r}: compare runs against the same opponent (LFRQA)")
    settings = {role: run_settings(run) for role, run in runs.items()}
    scoring = {role: _judged(run, settings[role]) for role, run in runs.items()}
    warnings = [*base_run.warnings, *new_run.warnings,
                *refuse_other_scoring(scoring, allow_judge_change=allow_judge_change,
                                      allow_setting_change=allow_setting_change)]

    base_outcomes, new_outcomes = base_run.outcomes(), new_run.outcomes()
    shared = set(base_outcomes) & set(new_outcomes)
    judged_shared = sum(base_outcomes[q] is not None and new_outcomes[q] is not None for q in shared)
    _check_shared(base, new, judged_shared, sum(o is not None for o in base_outcomes.values()), min_shared)
    metrics = {}
    worse_on = []
    alpha = 1.0 - confidence
    for metric in COMPARED_METRICS:
        result = paired_comparison(new_outcomes, base_outcomes, metric=metric, names=(new_run.system, base_run.system),
                                   n_boot=n_boot, seed=seed, confidence=confidence)
        result["significantly_worse"] = bool(result["n"]) and result["p_value"] < alpha \
            and result["difference_ci"][1] < -min_delta
        metrics[metric] = result
        if result["significantly_worse"]:
            worse_on.append(metric)
    injection = {side: injection_counts([v for v in run.verdicts if v["qid"] in shared],
                                        [run.system])[run.system] for side, run in (("base", base_run), ("new", new_run))}
    return {
        "status": "worse" if worse_on else "not_worse",
        "base": _side(base, base_run, settings["BASE"]),
        "new": _side(new, new_run, settings["NEW"]),
        "injection": injection,
        "n_shared": len(shared),
        "n_shared_judged": judged_shared,
        "min_delta": min_delta,
        "min_shared": {"count": min_shared.count, "share": min_shared.share},
        "confidence": confidence,
        "metrics": metrics,
        "worse": bool(worse_on),
        "worse_on": worse_on,
        "warnings": warnings,
    }


def _judged(run: Run, settings: dict) -> dict:
    """How a judge run was scored, for :func:`refuse_other_scoring`: its judges and the known settings."""
    return {"judges": run.judges, **{name: value for name, value in settings.items() if value is not None}}


def run_scoring(path: str | os.PathLike, names: Sequence[str] = ()) -> dict:
    """How the run folder ``path`` was scored, for :func:`refuse_other_scoring`: a judge run folder's judges,
    order and parse (as :func:`compare_runs` reads them), and the settings ``names`` its ``summary.json``
    holds (a ``cite`` folder's entailment model and passages); a setting no file tells is left out."""
    path = Path(path)
    scoring = {}
    if (path / VERDICTS_FILE).is_file():
        run = load_run(path, lean=True)
        scoring = _judged(run, run_settings(run))
    summary = read_json_file(path / SUMMARY_FILE) if names and (path / SUMMARY_FILE).is_file() else {}
    return {**scoring, **{name: summary[name] for name in names if isinstance(summary, dict) and name in summary}}


def refuse_other_scoring(scoring: Mapping[str, Mapping[str, object]], *, allow_judge_change: bool = False,
                         allow_setting_change: bool = False) -> list[str]:
    """Refuse two runs (``scoring["BASE"]``, ``scoring["NEW"]``: setting -> value, as :func:`run_scoring`
    gives) scored by other judges (``different_judges``, unless ``allow_judge_change``) or with other
    settings (``setting_changed``, unless ``allow_setting_change``): each moves the scores by itself, and the
    refusal names both values. Returns the lines to warn with (allowed changes; a setting one run does not
    tell, not compared)."""
    base, new = scoring["BASE"], scoring["NEW"]
    if ("judges" in base or "judges" in new) and not allow_judge_change and \
            sorted(base.get("judges") or []) != sorted(new.get("judges") or []):
        raise ComparisonRefused(
            "different_judges",
            f"the runs have different judges ({', '.join(base.get('judges') or []) or 'unknown'} vs "
            f"{', '.join(new.get('judges') or []) or 'unknown'}): a change of judge moves the rates by itself. Judge "
            "both with the same --judge, or pass --allow-judge-change")
    names = [*COMPARED_SETTINGS, *(n for n in {**base, **new} if n not in COMPARED_SETTINGS and n != "judges")]
    known = [n for n in names if n in base and n in new]
    judged = [n for n in known if n in JUDGE_SETTINGS and base[n] != new[n]]
    if judged and not allow_judge_change:
        raise ComparisonRefused("different_judges", f"the runs were scored by different judges ("
                                f"{'; '.join(f'{n} {base[n]!r} in BASE, {new[n]!r} in NEW' for n in judged)}): a "
                                f"change of judge moves the scores by itself. Score both with the same "
                                f"{' and '.join(_FLAGS.get(n, n) for n in judged)}, or pass --allow-judge-change")
    changed = [n for n in known if n not in JUDGE_SETTINGS and base[n] != new[n]]
    lines = [f"{n} {base[n]} in BASE, {new[n]} in NEW" for n in changed]
    if changed and not allow_setting_change:
        raise ComparisonRefused("setting_changed", f"the runs were judged with other settings ({'; '.join(lines)}): "
                                f"each moves the rates by itself. Judge both with the same "
                                f"{' and '.join(_FLAGS.get(n, n) for n in changed)}, or pass --allow-setting-change")
    warnings = [f"settings differ ({line}), compared anyway (--allow-setting-change)" for line in lines]
    warnings += [f"judges differ ({n} {base[n]!r} in BASE, {new[n]!r} in NEW), compared anyway "
                 "(--allow-judge-change)" for n in judged]
    return warnings + [f"the {name} of {role} is unknown (no summary.json): not compared" for name in names
                       for role, mine, other in (("BASE", base, new), ("NEW", new, base))
                       if name not in mine and name in other]


def _side(path: str | os.PathLike, run: Run, settings: dict) -> dict:
    judged = sum(v.get("outcome") is not None for v in run.verdicts)
    return {"run": str(path), "system": run.system, "judges": run.judges, **settings, "n": len(run.verdicts),
            "n_judged": judged, "n_failed": len(run.verdicts) - judged}


def _check_usable(role: str, run: Run) -> None:
    """A run the gate can read something from: verdicts, at least one judged, each qid once."""
    where = f"{role} {run.path}"
    if not run.verdicts:
        raise ComparisonRefused("empty_run", f"{where}: verdicts.jsonl is empty (it holds no verdict): judge into the "
                                "folder first (`rag-qa-arena judge --out`)")
    if all(v.get("outcome") is None for v in run.verdicts):
        raise ComparisonRefused("no_judged_pairs", f"{where}: none of its {len(run.verdicts):,} pairs was judged "
                                "(every judgment failed; `judge` exits 3 for such a run): see the errors in its "
                                "summary.json, fix the judge and judge again")
    if run.repeated_qids:
        first = run.repeated_qids[0]
        raise ComparisonRefused("repeated_qids", f"{where}: {len(run.repeated_qids):,} qid(s) appear more than once "
                                f"in verdicts.jsonl (e.g. {first!r}); a finished judge run holds each qid once: judge "
                                "again into a new folder")


def _check_shared(base, new, judged_shared: int, base_judged: int, minimum: MinShared) -> None:
    if not judged_shared:
        raise ComparisonRefused("no_shared_questions", f"{base} and {new} share no question judged in both: judge both "
                                "on the same questions (the same --sample N and --seed give the same questions)")
    if judged_shared < minimum.count or judged_shared < minimum.share * base_judged:
        raise ComparisonRefused(
            "too_few_shared",
            f"only {judged_shared:,} question(s) judged in both runs, {judged_shared / base_judged:.0%} of the "
            f"{base_judged:,} judged in BASE {base} (the gate needs at least {minimum.count:,} and "
            f"{minimum.share:.0%}): judge NEW on BASE's questions (the same --sample N and --seed), or lower "
            "--min-shared")
