"""The citation scores as an Inspect scorer (``-T citations=true``, on by default with ``-T prompt=cite``):
each answer's ``[k]`` markers against the documents LFRQA's answer cites, through
:func:`metric_arena.citations.score_answer` (the reference scores; no entailment model is called).

Each score's value is ``{reference_recall, reference_precision, gold_precision, uncited, invalid}``, NaN where
a number is not defined (an answer without markers: its explanation says it carries no citations); the
metric is each one's mean over the answers where it is defined, and ``answers_without_citations``.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from metric_arena.citations import Passages, parse_sentences, score_answer
from metric_arena.prompts import clean_response

__all__ = ["REFERENCE_SCORES", "citation_means", "citation_scorer"]

#: What the scorer reports per answer (the reference scores of :data:`metric_arena.citations.CITATIONS`).
REFERENCE_SCORES = ("reference_recall", "reference_precision", "gold_precision", "uncited", "invalid")
NO_CITATIONS = "the answer carries no citations: its citation scores are not defined (not zeros)"


@metric
def citation_means():
    """Each reference score's mean over the answers where it is defined, and how many answers carry no citations."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        values = [s.score.value for s in scores if isinstance(s.score.value, dict)]
        out = {}
        for name in REFERENCE_SCORES:
            defined = [v[name] for v in values if isinstance(v.get(name), float) and not math.isnan(v[name])]
            out[name] = sum(defined) / len(defined) if defined else float("nan")
        out["answers_without_citations"] = float(sum(s.score.explanation == NO_CITATIONS for s in scores))
        return out

    return compute


@scorer(metrics=[citation_means()])
def citation_scorer():
    """The answer's citations against LFRQA's (the sample's ``passages``, ``reference_docs`` and ``gold_docs``)."""

    async def score(state: TaskState, target: Target) -> Score:
        meta = state.metadata
        answer = clean_response(state.output.completion or "")
        shown = meta["passages"]
        passages = Passages(tuple(p["pid"] for p in shown), {p["pid"]: p["doc_id"] for p in shown if p.get("doc_id")},
                            {p["pid"]: p["text"] for p in shown})
        scores, sentences = await score_answer(parse_sentences(answer), passages,
                                               reference_docs=meta["reference_docs"], gold_docs=meta["gold_docs"])
        cited = any(s["markers"] for s in sentences)
        return Score(value={k: float("nan") if scores[k] is None else float(scores[k]) for k in REFERENCE_SCORES},
                     answer=answer, explanation="" if cited else NO_CITATIONS,
                     metadata={"cited_docs": list(dict.fromkeys(d for s in sentences for d in s["docs"])),
                               "invalid": [m for s in sentences for m in s["invalid"]]})

    return score
