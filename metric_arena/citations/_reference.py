"""LFRQA's side: the gold documents its answers cite, and its own answers as a cited prediction file (the
built-in sanity check: scored with their own citations, reference recall and precision are 1.0)."""

from __future__ import annotations

import os

from lfrqa import split_cited_sentences
from lfrqa.errors import RagQaArenaError
from metric_arena.citations._parse import strip_markers
from metric_arena.records import REFERENCE

__all__ = ["lfrqa_citations", "lfrqa_cited_answers"]


def _dataset(data_dir):
    import lfrqa

    return lfrqa.load("all", data_dir=data_dir)


def lfrqa_citations(qids: list[str], data_dir: str | os.PathLike | None = None) -> dict[str, dict]:
    """``qid -> {"domain", "reference_docs", "gold_docs"}``: the gold documents LFRQA's answer cites (in first-cited
    order) and all of the question's; a qid not in LFRQA's test set is refused."""
    dataset = _dataset(data_dir)
    wanted, found = set(qids), {}
    for qid, domain, citations, gold in zip(dataset["qid"], dataset["domain"], dataset["citations"],
                                            dataset["gold_doc_ids"]):
        if qid in wanted:
            cited = [gold[i - 1] for sentence in citations for i in sentence]
            found[qid] = {"domain": domain, "reference_docs": list(dict.fromkeys(cited)), "gold_docs": list(gold)}
    missing = [q for q in qids if q not in found]
    if missing:
        raise RagQaArenaError(f"{len(missing)} qid(s) are not in LFRQA's test set, e.g. "
                              f"{', '.join(map(repr, missing[:5]))}: citations are scored against LFRQA's; use its qids")
    return found


def lfrqa_cited_answers(data_dir: str | os.PathLike | None = None, *, explicit: bool = True,
                        limit_per_domain: int | None = None) -> tuple[list[dict], list[dict]]:
    """LFRQA's own answers as ``(predictions, retrieved)`` rows: passage k is the k-th gold document (pid
    ``<doc_id>-0``, a placeholder text). ``explicit``: the citations as explicit ``sentences`` from the dataset's
    ``citations`` column (out-of-range markers already dropped there); else the cited text
    (``answer_with_citations``), parsed by our marker rule."""
    dataset = _dataset(data_dir)
    predictions, retrieved, taken = [], [], {}
    for row in dataset:
        if not any(row["citations"]) or (limit_per_domain is not None and taken.get(row["domain"], 0) >= limit_per_domain):
            continue  # BioASQ's answers carry no citations
        taken[row["domain"]] = taken.get(row["domain"], 0) + 1
        pids = [f"{doc}-0" for doc in row["gold_doc_ids"]]
        prediction = {"qid": row["qid"], "domain": row["domain"], "question": row["question"],
                      "answer": row["answer_with_citations"], "model": REFERENCE, "prompt": "lfrqa", "passages": pids}
        if explicit:
            sentences = split_cited_sentences(row["answer_with_citations"])  # what the citations column was read from
            prediction["sentences"] = [{"text": strip_markers(text), "citations": cites}
                                       for (text, _), cites in zip(sentences, row["citations"])]
        predictions.append(prediction)
        retrieved.append({"qid": row["qid"], "domain": row["domain"], "question": row["question"],
                          "passages": [{"pid": pid, "doc_id": doc, "text": f"(gold document {doc})", "rank": k}
                                       for k, (pid, doc) in enumerate(zip(pids, row["gold_doc_ids"]), 1)]})
    return predictions, retrieved
