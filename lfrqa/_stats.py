"""Per-domain statistics of loaded LFRQA data, like the paper's Table 2."""

from __future__ import annotations

from collections import defaultdict


def dataset_stats(dataset) -> list[dict]:
    """One row per domain (sorted) plus ``all``: queries, mean words per answer, mean documents per query.

    ``dataset`` is any iterable of rows with ``domain``, ``answer`` and ``gold_doc_ids``.
    """
    words: dict[str, list[int]] = defaultdict(list)
    docs: dict[str, list[int]] = defaultdict(list)
    for row in dataset:
        words[row["domain"]].append(len(row["answer"].split()))
        docs[row["domain"]].append(len(row["gold_doc_ids"]))
    table = []
    for domain in sorted(words) + (["all"] if len(words) > 1 else []):
        w = [x for d in words for x in words[d]] if domain == "all" else words[domain]
        g = [x for d in docs for x in docs[d]] if domain == "all" else docs[domain]
        table.append(
            {
                "domain": domain,
                "queries": len(w),
                "words_per_answer": sum(w) / len(w) if w else 0.0,
                "documents_per_query": sum(g) / len(g) if g else 0.0,
            }
        )
    return table
