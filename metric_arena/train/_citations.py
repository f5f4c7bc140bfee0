"""An opt-in citation reward term: how well a completion's ``[k]`` markers cite the documents LFRQA's answer
cites, from the dataset columns TRL passes along (no judge, no request). Pass it beside the arena reward:
``GRPOTrainer(reward_funcs=[reward_function(...), citation_reward()])``.

A completion is read by the citation rule of :mod:`metric_arena.citations`; marker k names the k-th passage
of the row's ``passages`` column (pids, ``"<doc_id>-<k>"``, or ``{"pid", "doc_id"}`` objects: the passages its
prompt showed, in order); LFRQA's ``citations`` and ``gold_doc_ids`` columns give the reference. The term is
the reference-citation recall, precision or their F1 (``score``); a completion without markers gets
``missing`` (0.0 by default: in training, citing nothing earns nothing; the ``cite`` report gives such an
answer a note instead, as there it is a fact to read, not a reward).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lfrqa.errors import RagQaArenaError
from metric_arena.citations import Passages, parse_sentences, score_references
from metric_arena.prompts import clean_response
from metric_arena.train._reward import completion_text

__all__ = ["CITATION_SCORES", "CitationReward", "citation_reward"]

#: What the term rewards.
CITATION_SCORES = ("f1", "recall", "precision")


class CitationReward:
    """``fn(prompts, completions, **dataset_columns) -> list[float]`` (see the module docstring)."""

    def __init__(self, *, score: str = "f1", passages_column: str = "passages", missing: float = 0.0) -> None:
        if score not in CITATION_SCORES:
            raise RagQaArenaError(f"score={score!r}: give one of {', '.join(CITATION_SCORES)}")
        self.score, self.passages_column, self.missing = score, passages_column, float(missing)
        self.__name__ = f"citation_{score}"  # TRL logs a reward function by its name

    def _passages(self, shown) -> Passages:
        pids = [p["pid"] if isinstance(p, Mapping) else str(p) for p in shown]
        docs = {p["pid"]: str(p["doc_id"]) for p in shown if isinstance(p, Mapping) and p.get("doc_id")}
        return Passages(tuple(pids), docs, {})

    def one(self, completion: str, shown, citations, gold) -> float:
        reference = list(dict.fromkeys(gold[i - 1] for sentence in citations for i in sentence if 1 <= i <= len(gold)))
        scores = score_references(parse_sentences(clean_response(completion)), self._passages(shown),
                                  reference_docs=reference, gold_docs=list(gold))
        recall, precision = scores["reference_recall"], scores["reference_precision"]
        if recall is None or precision is None:
            return self.missing
        if self.score == "recall":
            return recall
        if self.score == "precision":
            return precision
        return 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        needed = (self.passages_column, "citations", "gold_doc_ids")
        missing = [name for name in needed if name not in columns]
        if missing:
            raise RagQaArenaError(f"citation_reward needs the dataset columns {', '.join(needed)}; missing: "
                                  f"{', '.join(missing)} (passages: the pids the prompt showed, in order)")
        return [self.one(completion_text(c, k), columns[self.passages_column][k], columns["citations"][k],
                         columns["gold_doc_ids"][k]) for k, c in enumerate(completions)]


def citation_reward(*, score: str = "f1", passages_column: str = "passages", missing: float = 0.0) -> CitationReward:
    """The citation reward term (see the module docstring).

    >>> reward = citation_reward(score="recall")
    >>> reward(prompts=["..."], completions=["Paris is French [2]."], passages=[["d9-0", "d1-0"]],
    ...        citations=[[[1]]], gold_doc_ids=[["d1", "d2"]])
    [1.0]
    """
    return CitationReward(score=score, passages_column=passages_column, missing=missing)
