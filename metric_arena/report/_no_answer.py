"""No-answer analysis, as in the paper's Tables 9 and 5: how "I couldn't find an answer" replies
shape a ranking.

A verdict's ``no_answer_a`` says the evaluated system's answer declined to answer
(:func:`metric_arena.prompts.is_no_answer`). A system's no-answer questions are read from every
run in which it is the evaluated side; in a system-vs-system run a pair is a no-answer pair when
either side's answer to that question is one (known when that side was also judged elsewhere).

For each system judged against the reference, overall and per domain: the share of its answers
that are no-answers, and its rates with those pairs (all pairs: the leaderboard's), without them,
and on them alone. The leaderboard view without them is the whole leaderboard (rates, ratings,
ranks) rebuilt from every run with the no-answer pairs removed.

The rule and the denominator (:data:`RULE`, :data:`DENOMINATOR`): a no-answer is a short refusal
(:func:`~metric_arena.prompts.is_no_answer`), counted over all the system's pairs against the
reference, failed pairs included. For comparison, ``n_no_answer_reference`` and
``no_answer_rate_reference`` count the reference scripts' rule (the exact phrase anywhere in the
answer, :func:`~metric_arena.prompts.is_no_answer_reference`; runs judged before 0.2 lack it: 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from metric_arena.report._retrieval import rate_block
from metric_arena.report._runs import Run

__all__ = ["DENOMINATOR", "RULE", "VIEW_KEYS", "no_answer_analysis", "no_answer_qids", "without_no_answers"]

RULE = ("the answer, lower-cased with typographic apostrophes made plain, starts with \"I couldn't find an answer\" "
        "(or \"I could not find an answer\") and has at most 30 words")
DENOMINATOR = "all the system's pairs against the reference, failed pairs included"

#: The fields of each entry of the leaderboard view without no-answer pairs.
VIEW_KEYS = ("system", "reference", "rank", "rating", "rating_ci", "n_battles", "n", "win_rate", "win_rate_ci",
             "win_tie_rate", "win_tie_rate_ci")


def no_answer_qids(runs: Iterable[Run]) -> dict[str, set[str]]:
    """``{system: qids where its answer is a no-answer}``, from the runs where it is the evaluated side."""
    flags: dict[str, set[str]] = {}
    for run in runs:
        mine = flags.setdefault(run.system, set())
        mine.update(v["qid"] for v in run.verdicts if v.get("no_answer_a"))
    return flags


def without_no_answers(run: Run, flags: Mapping[str, set[str]]) -> Run:
    """``run`` without the pairs in which either side's answer is a no-answer."""
    skip = flags.get(run.system, set()) | flags.get(run.opponent, set())
    return dataclasses.replace(run, verdicts=[v for v in run.verdicts if v["qid"] not in skip], warnings=[])


def no_answer_analysis(reference_runs: Mapping[str, Run], *, n_boot: int = 1000, seed: int = 0,
                       confidence: float = 0.95) -> list[dict]:
    """Per system: ``n``, ``n_no_answer``, ``no_answer_rate``, rates ``with`` / ``without`` the
    no-answer pairs and on ``no_answer_only``, and the same per domain (``per_domain``)."""
    stats = dict(n_boot=n_boot, seed=seed, confidence=confidence)
    systems = []
    for name, run in sorted(reference_runs.items()):
        pairs = [(v.get("domain") or "unknown", v.get("outcome"), bool(v.get("no_answer_a"))) for v in run.verdicts]
        block = {"system": name, **_block(pairs, stats)}
        substring = sum(bool(v.get("no_answer_a_reference")) for v in run.verdicts)
        block["n_no_answer_reference"] = substring
        block["no_answer_rate_reference"] = substring / len(pairs) if pairs else None
        block["no_answer_only"] = rate_block([o for _, o, na in pairs if na], stats)
        block["per_domain"] = {d: _block([p for p in pairs if p[0] == d], stats) for d in sorted({p[0] for p in pairs})}
        systems.append(block)
    return systems


def _block(pairs: list[tuple[str, str | None, bool]], stats) -> dict:
    n_no = sum(na for _, _, na in pairs)
    return {
        "n": len(pairs),
        "n_no_answer": n_no,
        "no_answer_rate": n_no / len(pairs) if pairs else None,
        "with": rate_block([o for _, o, _ in pairs], stats),
        "without": rate_block([o for _, o, na in pairs if not na], stats),
    }
