"""Retrieval metrics against LFRQA's gold documents.

A passage's document is its id up to the last ``-`` (``"102494-3"`` -> ``"102494"``). For each
query with gold documents:

* ``hit@k``: 1 if any of the top-k passages comes from a gold document, else 0;
* ``recall@k``: the share of the query's gold documents that the top-k passages come from.

Both are averaged over queries. A query with gold documents but no results counts as 0; a
query with no gold documents cannot be scored and is left out (``n_no_gold`` counts them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from builders import doc_id_of
from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20)


def evaluate(
    results: Mapping[str, Sequence[Any]],
    gold_doc_ids: Mapping[str, Iterable[str | int]],
    ks: Sequence[int] = DEFAULT_KS,
    domains: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``{"n": ..., "hit@1": ..., "recall@1": ..., ..., "per_domain": {domain: {...}}}``.

    ``results`` maps qid to ranked passages, each a pid or a ``(pid, score)`` pair (what
    :meth:`Retriever.search` returns); ``gold_doc_ids`` maps qid to its gold document ids (ints
    are read as strings). Queries are those of ``gold_doc_ids``.

    >>> evaluate({"q": [("7-0", 2.0), ("3-1", 1.0)]}, {"q": ["3", "9"]}, ks=(1, 2))
    {'n': 1, 'n_no_gold': 0, 'n_missing': 0, 'hit@1': 0.0, 'recall@1': 0.0, 'hit@2': 1.0, 'recall@2': 0.5, 'per_domain': {}}
    """
    ks = _check_ks(ks)
    per_query: dict[str, dict[str, float]] = {}
    no_gold = missing = 0
    for qid, gold in gold_doc_ids.items():
        gold_set = {str(g) for g in gold}
        if not gold_set:
            no_gold += 1
            continue
        ranked = results.get(qid)
        if ranked is None:
            missing += 1
            ranked = []
        docs = [doc_id_of(_pid(item, qid)) for item in ranked]
        scores: dict[str, float] = {}
        for k in ks:
            found = gold_set.intersection(docs[:k])
            scores[f"hit@{k}"] = 1.0 if found else 0.0
            scores[f"recall@{k}"] = len(found) / len(gold_set)
        per_query[qid] = scores
    report: dict[str, Any] = {"n": len(per_query), "n_no_gold": no_gold, "n_missing": missing}
    report.update(_mean(per_query.values(), ks))
    by_domain: dict[str, list[dict[str, float]]] = defaultdict(list)
    if domains is not None:
        for qid, scores in per_query.items():
            domain = domains.get(qid)
            if domain is None:
                raise RagQaArenaError(f"Query {qid!r} has gold documents but no domain in `domains`; give every qid one")
            by_domain[domain].append(scores)
    report["per_domain"] = {d: {"n": len(rows), **_mean(rows, ks)} for d, rows in sorted(by_domain.items())}
    return report


def _pid(item: Any, qid: str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Sequence) and item and isinstance(item[0], str):
        return item[0]
    if isinstance(item, Mapping) and isinstance(item.get("pid"), str):
        return item["pid"]
    raise RagQaArenaError(f"Query {qid!r}: a result must be a pid, a (pid, score) pair or a {{'pid': ...}} dict, got {item!r}")


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(ks)
    if not ks:
        raise RagQaArenaError(f"ks must be positive integers, got {ks!r}")
    for k in ks:
        check_int("each of ks", k, minimum=1)
    return tuple(sorted(set(ks)))


def _mean(rows: Iterable[dict[str, float]], ks: tuple[int, ...]) -> dict[str, float | None]:
    rows = list(rows)
    out: dict[str, float | None] = {}
    for k in ks:
        for name in (f"hit@{k}", f"recall@{k}"):
            out[name] = sum(r[name] for r in rows) / len(rows) if rows else None
    return out
