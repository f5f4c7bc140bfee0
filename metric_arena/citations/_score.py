"""One answer's citation scores: against LFRQA's human citations, and ALCE's support and precision.

Reference scores (no model needed), over the answer's cited documents D (valid markers' documents, each
once) plus its distinct invalid markers I (each a citation of no document), against R, the gold documents
LFRQA's own answer cites, and G, all the question's gold documents:

- ``reference_recall`` = |D ∩ R| / |R| (None when LFRQA's answer cites nothing, as BioASQ's);
- ``reference_precision`` = |D ∩ R| / (|D| + |I|); ``gold_precision`` = |D ∩ G| / (|D| + |I|) (None when
  the answer cites nothing);
- ``uncited`` = the share of sentences with no marker; ``invalid`` = the share of markers naming no passage.

ALCE's scores (Gao et al., 2023, ``eval.py`` ``compute_autoais``), with an entailer:

- a cited sentence is *supported* when its cited passages, joined by newlines, entail it (markers removed); a
  sentence with an invalid marker is unsupported, as in ALCE;
- ``support`` = supported share of the cited sentences; ``citation_recall`` = ALCE's citation recall, the
  supported share of all sentences (an uncited sentence counts 0);
- ``citation_precision`` = ALCE's: of all citations (each marker of each sentence), the share not
  *irrelevant*. In an unsupported sentence every citation is irrelevant; in a supported sentence with one
  citation it is relevant; with several, a citation is irrelevant when it alone does not entail the sentence
  and the others without it still do.

Where ALCE scores 0 for an answer without citations, these are None and the row carries a note: no
citations is not a quality of zero. A sentence the entailer gave no verdict on is left out of the ALCE
scores (and counted in the note).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from metric_arena.citations._parse import resolved

__all__ = ["ALCE_FIELDS", "NO_CITATIONS", "REFERENCE_FIELDS", "alce_scores", "reference_scores", "score_answer",
           "score_references"]

REFERENCE_FIELDS = ("reference_recall", "reference_precision", "gold_precision", "uncited", "invalid")
ALCE_FIELDS = ("support", "citation_recall", "citation_precision")
NO_CITATIONS = "carries no citations: citation scores are not defined for it (not a zero)"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def reference_scores(sentences: Sequence[Mapping], reference_docs: Sequence[str], gold_docs: Sequence[str]) -> dict:
    """The reference scores of one answer's resolved sentences (see the module docstring)."""
    docs = list(dict.fromkeys(d for s in sentences for d in s["docs"]))
    invalid = {repr(m) for s in sentences for m in s["invalid"]}
    n_markers = sum(len(s["markers"]) for s in sentences)
    n_invalid = sum(len(s["invalid"]) for s in sentences)
    cited = len(docs) + len(invalid)
    reference, gold = set(reference_docs), set(gold_docs)
    return {
        "reference_recall": _share(len(reference.intersection(docs)), len(reference)) if cited else None,
        "reference_precision": _share(len(reference.intersection(docs)), cited),
        "gold_precision": _share(len(gold.intersection(docs)), cited),
        "uncited": _share(sum(not s["markers"] for s in sentences), len(sentences)),
        "invalid": _share(n_invalid, n_markers),
    }, docs, n_markers, n_invalid


def _premise(pids: Sequence[str], texts: Mapping[str, str]) -> str:
    return "\n".join(texts[pid] for pid in pids)


async def alce_scores(sentences: list[dict], texts: Mapping[str, str], entailer) -> tuple[dict, int]:
    """ALCE's support, citation recall and citation precision of one answer; sets each sentence's ``supported``
    and ``irrelevant`` (in ``sentences``). Returns the scores and the number of sentences without a verdict."""
    judged = [s for s in sentences if s["markers"] and not s["invalid"]]
    for s in sentences:
        s["supported"] = False if s["invalid"] else None
        s["irrelevant"] = []
    joint = await entailer.entail([(_premise(s["pids"], texts), s["text"]) for s in judged])
    for s, verdict in zip(judged, joint):
        s["supported"] = verdict
    multi = [s for s in judged if s["supported"] and len(s["pids"]) > 1]
    alone_pairs = [(s, pid) for s in multi for pid in s["pids"]]
    alone = await entailer.entail([(texts[pid], s["text"]) for s, pid in alone_pairs])
    needs_rest = [(s, pid) for (s, pid), verdict in zip(alone_pairs, alone) if not verdict]
    rest = await entailer.entail([(_premise([p for p in s["pids"] if p != pid], texts), s["text"])
                                  for s, pid in needs_rest])
    for (s, pid), verdict in zip(needs_rest, rest):
        if verdict:
            s["irrelevant"].append(pid)  # not needed: the others entail the sentence without it
    decided = [s for s in sentences if not (s["markers"] and s["supported"] is None)]
    cited = [s for s in decided if s["markers"]]
    citations = sum(len(s["markers"]) for s in cited)
    relevant = sum(len(s["markers"]) - len(s["irrelevant"]) for s in cited if s["supported"])
    scores = {
        "support": _share(sum(bool(s["supported"]) for s in cited), len(cited)),
        "citation_recall": _share(sum(bool(s["supported"]) for s in decided), len(decided)) if citations else None,
        "citation_precision": _share(relevant, citations),
    }
    return scores, len(sentences) - len(decided)


def score_references(sentences: Sequence, passages, *, reference_docs: Sequence[str],
                     gold_docs: Sequence[str]) -> dict:
    """The reference scores alone (no entailer, no event loop): ``field -> value or None`` of
    :data:`REFERENCE_FIELDS` for one answer's :class:`~metric_arena.citations.ParsedSentence` list."""
    return reference_scores(resolved(sentences, passages), reference_docs, gold_docs)[0]


async def score_answer(sentences: Sequence, passages, *, reference_docs: Sequence[str], gold_docs: Sequence[str],
                       entailer=None) -> tuple[dict, list[dict]]:
    """One answer's scores (``field -> value or None``) and its resolved sentences with verdicts, from its
    :class:`~metric_arena.citations.ParsedSentence` list, the :class:`~metric_arena.citations.Passages` it was
    given, LFRQA's cited and gold documents, and an entailer (None: the ALCE fields are None).

    >>> import asyncio
    >>> from metric_arena.citations import Passages, parse_sentences
    >>> given = Passages(("d1-0", "d2-0"), {}, {"d1-0": "A.", "d2-0": "B."})
    >>> scores, _ = asyncio.run(score_answer(parse_sentences("A [1]. B [3]."), given, reference_docs=["d1"],
    ...                                      gold_docs=["d1", "d2"]))
    >>> scores["reference_recall"], scores["reference_precision"], scores["invalid"]
    (1.0, 0.5, 0.5)
    """
    rows = resolved(sentences, passages)
    scores = reference_scores(rows, reference_docs, gold_docs)[0]
    alce = dict.fromkeys(ALCE_FIELDS)
    if entailer is not None and any(s["markers"] for s in rows):
        alce = (await alce_scores(rows, passages.texts, entailer))[0]
    return {**scores, **alce}, rows
