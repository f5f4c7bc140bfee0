"""The citation records: an answer's sentences with explicit citations (a prediction's ``sentences``)
and one line of a ``cite`` run folder's ``citations.jsonl``, with its check."""

from collections.abc import Mapping
from typing import TypedDict

from lfrqa.errors import RagQaArenaError

__all__ = ["CitedSentence", "Citations", "ScoredSentence", "check_citations"]


class CitedSentence(TypedDict):
    """One sentence of an answer with its citations, given explicitly (``Prediction.sentences``)."""

    text: str  # the sentence (markers in it are not read again)
    citations: list[int | str]  # passage numbers from 1 in the prompt's order (digits "3" read as 3), or pids


class _ScoredSentenceFields(TypedDict):
    text: str  # the sentence without its markers
    markers: list[int | str]  # what it cites, as written: passage numbers (or pids), each once
    pids: list[str]  # the passages the valid markers name, in marker order
    docs: list[str]  # their documents, each once
    invalid: list[int | str]  # markers naming no passage the answer was given: counted, never dropped


class ScoredSentence(_ScoredSentenceFields, total=False):
    """One sentence of a :class:`Citations` row."""

    supported: bool | None  # its cited passages together entail it (None: no citation, or no verdict)
    irrelevant: list[str]  # pids that ALCE's citation precision counts as irrelevant for this sentence


class _CitationsFields(TypedDict):
    qid: str
    domain: str | None
    system: str
    entailment: str | None  # the entailment spec ("nli:PATH", "llm:openai:MODEL"); None: reference scores only
    has_citations: bool  # the answer carries at least one marker
    sentences: list[ScoredSentence]
    cited_docs: list[str]  # documents the answer cites (valid markers), each once
    reference_docs: list[str]  # gold documents LFRQA's own answer cites
    gold_docs: list[str]  # every gold document of the question
    n_markers: int  # markers over all sentences (each once per sentence), valid and invalid
    n_invalid: int  # of which name no passage given
    scores: dict[str, float | None]  # field name -> this answer's value (None: not defined for it)


class Citations(_CitationsFields, total=False):
    """One answer's citation scores: a line of a ``cite`` run folder's ``citations.jsonl``."""

    note: str  # what a reader must know beside the numbers ("carries no citations")
    answer_key: str  # a digest of what was scored (answer, explicit sentences, passages): a resumed run rescores on change
    n_no_verdict: int  # cited sentences the entailer gave no verdict on (left out of the ALCE scores)
    failed: bool  # the answer failed to generate: nothing scored
    error: str  # why it has no scores


def check_citations(row, where: str) -> Citations:
    """One line of ``citations.jsonl``: ``qid``, ``system`` (a string) and ``scores`` (an object of
    numbers or nulls) are needed. ``qid`` becomes a string (in ``row`` itself).

    >>> check_citations({"qid": 3, "system": "A", "scores": {"support": 0.5}}, "citations.jsonl:1")["qid"]
    '3'
    """
    if not isinstance(row, Mapping) or any(k not in row for k in ("qid", "system", "scores")):
        raise RagQaArenaError(f"{where}: expected an object with qid, system and scores: is this a citations.jsonl "
                              "written by `rag-qa-arena cite`?")
    qid = row["qid"]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == "":
        raise RagQaArenaError(f"{where}: qid {qid!r} must be a non-empty string")
    row["qid"] = str(qid).strip()
    if not isinstance(row["system"], str):
        raise RagQaArenaError(f"{where}: system must be a system's name (a string), got {row['system']!r:.80}")
    scores = row["scores"]
    if not isinstance(scores, Mapping) or any(
            v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))) for v in scores.values()):
        raise RagQaArenaError(f"{where}: scores must be an object of numbers or nulls, got {scores!r:.80}")
    return row  # type: ignore[return-value]
