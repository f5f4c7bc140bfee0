"""The fixed questions a training run is evaluated on: a seeded, domain-stratified LFRQA sample, each
question with the passages its answer is generated from.

Passages come from a ``retrieve`` output file (the sample is then drawn from its questions), or,
without one, from the question's gold documents in the RobustQA corpora: each gold document is
split into RobustQA's 100-word passages and the passages are taken in turn from each document (the
first passage of every gold document, then the second...) up to ``n_passages``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from collections.abc import Sequence

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from metric_arena.generate import read_retrieved
from metric_arena.stats import stratified_sample

__all__ = ["ArenaQuestions", "ArenaSchedule", "arena_sample", "gold_passages"]



@dataclass(frozen=True, kw_only=True)
class ArenaQuestions:
    """The questions :class:`ArenaCallback` evaluates on: ``n`` of them from ``domains`` ("all", one or a
    list), a seeded (``seed``), domain-stratified LFRQA sample; passages from ``retrieved`` (a ``retrieve``
    output file) or the gold passages (raw corpora in ``corpus_dir``); ``data_dir``: LFRQA's files."""

    n: int = 100
    domains: str | Sequence[str] = "all"
    seed: int = 0
    retrieved: str | os.PathLike | None = None
    corpus_dir: str | os.PathLike | None = None
    data_dir: str | os.PathLike | None = None


@dataclass(frozen=True, kw_only=True)
class ArenaSchedule:
    """When :class:`ArenaCallback` evaluates: every ``every_n_steps`` optimizer steps, and at the end of
    training unless ``at_end=False``."""

    every_n_steps: int = 500
    at_end: bool = True


def _lfrqa_rows(domains: str | Sequence[str], data_dir: str | os.PathLike | None) -> list[dict]:
    import lfrqa

    names = [domains] if isinstance(domains, str) else list(domains)
    if not names:
        raise RagQaArenaError(f"No domain given: pass 'all' or some of {', '.join(lfrqa.DOMAINS)}")
    rows: list[dict] = []
    for name in names:
        dataset = lfrqa.load(name, data_dir=data_dir)
        columns = ("qid", "domain", "question", "answer", "gold_doc_ids")
        rows.extend(dict(zip(columns, values)) for values in zip(*(dataset[c] for c in columns)))
    return rows


def gold_passages(rows: Sequence[dict], *, n_passages: int = 5,
                  corpus_dir: str | os.PathLike | None = None) -> dict[str, list[dict]]:
    """``{qid: [{"pid", "text", "rank"}]}``: up to ``n_passages`` passages of each row's gold documents
    (``gold_doc_ids``), read from the RobustQA corpus of its domain (``builders.load_corpus``)."""
    import builders

    by_domain: dict[str, list[dict]] = {}
    for row in rows:
        by_domain.setdefault(row["domain"], []).append(row)
    passages: dict[str, list[dict]] = {}
    for domain, group in sorted(by_domain.items()):
        try:
            documents = builders.load_corpus(domain, level="documents", data_dir=corpus_dir)
        except FileNotFoundError as error:
            raise RagQaArenaError(
                f"The evaluation questions need passages: without retrieved=..., the gold passages are read from the "
                f"RobustQA {domain} corpus, which is not available ({str(error).splitlines()[0]}). Pass retrieved= a "
                "file written by `rag-qa-arena retrieve --out`, or corpus_dir= a folder with the raw corpora"
            ) from None
        wanted = {doc_id for row in group for doc_id in row["gold_doc_ids"]}
        positions = [i for i, doc_id in enumerate(documents["doc_id"]) if doc_id in wanted]
        found = {doc["doc_id"]: doc for doc in documents.select(positions)}
        for row in group:
            per_doc = [builders.split_passages(d, found[d]["text"], found[d].get("title") or "")
                       for d in row["gold_doc_ids"] if d in found]
            if not any(per_doc):
                raise RagQaArenaError(
                    f"None of the gold documents of LFRQA question {row['qid']} ({', '.join(row['gold_doc_ids'])}) is "
                    f"in the {domain} corpus read: is it the RobustQA {domain} test collection?"
                )
            chosen = [doc[k] for k in range(max(map(len, per_doc))) for doc in per_doc if k < len(doc)][:n_passages]
            passages[row["qid"]] = [{"pid": p["pid"], "text": p["text"], "rank": rank}
                                    for rank, p in enumerate(chosen, 1)]
    return passages


def arena_sample(
    *,
    n: int = 100,
    domains: str | Sequence[str] = "all",
    seed: int = 0,
    retrieved: str | os.PathLike | None = None,
    n_passages: int = 5,
    data_dir: str | os.PathLike | None = None,
    corpus_dir: str | os.PathLike | None = None,
) -> list[dict]:
    """``n`` LFRQA test questions, stratified by domain and seeded (:func:`~metric_arena.stats.stratified_sample`),
    as rows ``{"qid", "domain", "question", "answer", "passages": [{"pid", "text", "rank"}]}``.

    With ``retrieved`` (a ``retrieve`` output file) the sample is drawn from its questions and uses its
    passages; without it, each question gets its gold passages (:func:`gold_passages`, from the raw
    corpora in ``corpus_dir``, default ``data_dir`` / ``$LFRQA_DATA_DIR``). ``data_dir``: LFRQA's files.
    """
    check_int("n", n, minimum=1, hint="the number of questions")
    rows = _lfrqa_rows(domains, data_dir)
    retrieved_rows = None
    if retrieved is not None:
        retrieved_rows = {row["qid"]: row for row in read_retrieved(retrieved)}
        rows = [row for row in rows if row["qid"] in retrieved_rows]
        if not rows:
            raise RagQaArenaError(f"None of the questions in {retrieved} is an LFRQA test question of {domains!r}: "
                                  "retrieve for LFRQA's questions (`rag-qa-arena retrieve --domain ...`)")
    by_qid = {row["qid"]: row for row in rows}
    chosen = stratified_sample(list(by_qid), [row["domain"] for row in by_qid.values()], n, seed)
    sample = [dict(by_qid[qid]) for qid in chosen]
    if retrieved_rows is not None:
        passages = {qid: retrieved_rows[qid]["passages"][:n_passages] for qid in chosen}
    else:
        passages = gold_passages(sample, n_passages=n_passages,
                                 corpus_dir=corpus_dir if corpus_dir is not None else data_dir)
    for row in sample:
        row["passages"] = passages[row["qid"]]
    return sample
