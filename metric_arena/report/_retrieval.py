"""Retrieval-aware analysis: how the passages a system answered from drive how its answers fare.

The inputs are the files ``rag-qa-arena retrieve`` writes (JSON Lines, or the same rows as Parquet
or a saved ``datasets.Dataset``): one row per question with its ranked ``passages``. A passage's
document is its ``pid`` up to the last ``-`` (or its ``doc_id``), as in ``retrieve``'s own metrics.
The gold documents are LFRQA's (``lfrqa.load``), or a row's own ``gold_doc_ids`` when it has them
(``retrieve --questions`` with your own questions).

For each system judged against the reference, overall and per domain, on the questions that have
both a retrieved row and gold documents:

* ``gold_hit_rate``: the share of questions whose top-k passages hold at least one gold document;
* ``gold_recall``: the share of each question's gold documents among them, averaged;
* ``gold_retrieved`` / ``gold_not_retrieved``: win, tie and win+tie rates with bootstrap intervals
  (:func:`metric_arena.stats.summarize`) on the questions where a gold document was / was not
  among the passages.

``retrieved`` is a list of files used for every system (one per domain, say), where an item
``"SYSTEM=FILE"`` gives one system its own file, or a mapping ``{system: file or files}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_records
from metric_arena.report._runs import Run
from metric_arena.stats import summarize

__all__ = ["RATE_KEYS", "corpus_caveat", "rate_block", "retrieval_analysis", "retrieved_corpus"]

RetrievedFiles = Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike | Sequence[str | os.PathLike]]
#: The fields of a rates block kept in the analyses.
RATE_KEYS = ("n", "n_judged", "n_failed", "win_rate", "win_rate_ci", "tie_rate", "loss_rate", "win_tie_rate",
             "win_tie_rate_ci")
_ALL = "*"


def retrieval_analysis(
    reference_runs: Mapping[str, Run],
    retrieved: RetrievedFiles,
    *,
    data_dir: str | os.PathLike | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """``{"files", "k", "systems": [{"system", "files", "n", "n_no_retrieval", "n_no_gold",
    "gold_hit_rate", "gold_recall", "gold_retrieved", "gold_not_retrieved", "per_domain", "incomplete_corpus"}],
    "corpora": {file: its corpus entry (:func:`retrieved_corpus`)}, "caveats": [a line per file retrieved from an
    incomplete corpus (:func:`corpus_caveat`)]}``."""
    by_system = _files_by_system(retrieved, sorted(reference_runs))
    rows = {files: _read_rows(files) for files in set(by_system.values())}
    gold = _gold_documents([q for table in rows.values() for q, row in table.items() if row["gold"] is None], data_dir)
    stats = dict(n_boot=n_boot, seed=seed, confidence=confidence)
    systems = [_system_block(name, reference_runs[name], files, rows[files], gold, stats)
               for name, files in sorted(by_system.items())]
    k = max((len(row["docs"]) for table in rows.values() for row in table.values()), default=0)
    files = sorted({f for files in by_system.values() for f in files})
    corpora = {f: corpus for f in files if (corpus := retrieved_corpus(f)) is not None}
    for block in systems:
        block["incomplete_corpus"] = any(corpora.get(f, {}).get("incomplete") for f in block["files"])
    return {"files": files, "k": k, "systems": systems, "corpora": corpora,
            "caveats": [corpus_caveat(f, c) for f, c in corpora.items() if c.get("incomplete")]}


def retrieved_corpus(path: str | os.PathLike) -> dict | None:
    """The ``corpus`` entry ``retrieve`` wrote beside its output ``path`` (``<stem>.metrics.json``: documents,
    documents expected, ``incomplete``, questions with gold documents in it), or None when there is none."""
    from lfrqa.kernel import read_json_file

    metrics = Path(path).with_name(Path(path).stem + ".metrics.json")
    if not metrics.is_file():
        return None
    try:
        found = read_json_file(metrics)
    except (OSError, RagQaArenaError):
        return None  # unreadable: nothing to say about the corpus
    corpus = found.get("corpus") if isinstance(found, dict) else None
    return {"domain": found.get("domain"), **corpus} if isinstance(corpus, dict) else None


def corpus_caveat(path: str | os.PathLike, corpus: Mapping) -> str:
    """One line: ``path`` was retrieved from an incomplete corpus (e.g. "built on 4,995 of 199,994 documents")."""
    documents, expected = corpus.get("documents"), corpus.get("documents_expected")
    size = (f"built on {documents:,} of {expected:,} documents" if isinstance(documents, int) and isinstance(expected, int)
            and documents < expected else f"built on {documents:,} documents" if isinstance(documents, int) else "")
    with_gold, covered = corpus.get("questions_with_gold"), corpus.get("questions_with_gold_in_corpus")
    missing = (f"{with_gold - covered:,} of {with_gold:,} questions have no gold document in it"
               if isinstance(with_gold, int) and isinstance(covered, int) else "")
    why = "; ".join(part for part in (size, missing) if part)
    return (f"{path} was retrieved from an incomplete {corpus.get('domain') or 'retrieval'} corpus ({why}): its gold hit and "
            "recall count those questions as misses and are not comparable with a whole corpus's")


def _files_by_system(retrieved: RetrievedFiles, systems: list[str]) -> dict[str, tuple[str, ...]]:
    """Which files each system answered from: ``{system: (file, ...)}`` (systems without files left out)."""
    if isinstance(retrieved, (str, os.PathLike)):
        retrieved = [retrieved]
    if isinstance(retrieved, Mapping):
        pairs = [(name, f) for name, files in retrieved.items()
                 for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    else:
        pairs = [_split_item(item) for item in retrieved]
    if not pairs:
        raise RagQaArenaError("No retrieved files given: pass the files `rag-qa-arena retrieve --out` wrote")
    mine: dict[str, list[str]] = {}
    for name, path in pairs:
        if name != _ALL and name not in systems:
            raise RagQaArenaError(f"--retrieved names system {name!r}, which no run judges against the reference. "
                                  f"Systems: {', '.join(systems) or 'none'}")
        mine.setdefault(name, []).append(os.fspath(path))
    shared = mine.pop(_ALL, [])
    return {name: tuple(sorted(set(mine.get(name, shared)))) for name in systems if mine.get(name) or shared}


def _split_item(item: str | os.PathLike) -> tuple[str, str | os.PathLike]:
    """``"SYSTEM=FILE"`` -> (system, file); a plain file (or one whose name holds "=") -> (all, file)."""
    if isinstance(item, str) and "=" in item and not Path(item).exists():
        name, path = item.split("=", 1)
        return name, path
    return _ALL, item


def _read_rows(files: tuple[str, ...]) -> dict[str, dict]:
    """``{qid: {"docs": [doc ids, ranked], "gold": [...] | None, "domain"}}`` from retrieve files."""
    from builders import doc_id_of, resolve_retrieved

    table: dict[str, dict] = {}
    seen: dict[str, str] = {}
    for path in files:
        path = resolve_retrieved(path)  # a file, or NAME: config retrieved-NAME of the exported folder we are in
        for where, row in iter_records(path, hint='Each line must be one {"qid", "passages": [...]} object'):
            qid, passages = row.get("qid"), row.get("passages")
            if qid is None or isinstance(qid, bool) or not isinstance(passages, list):
                raise RagQaArenaError(f"{where}: expected a retrieve row with 'qid' and a 'passages' list")
            qid = str(qid)
            if qid in seen:
                raise RagQaArenaError(f"{where}: qid {qid!r} is also at {seen[qid]}; give each question once per system "
                                      "(a different retrieval for another system: SYSTEM=FILE)")
            seen[qid] = where
            docs = []
            for k, p in enumerate(passages):
                if not isinstance(p, Mapping) or (p.get("pid") is None and p.get("doc_id") is None):
                    raise RagQaArenaError(f"{where} (qid {qid}): passages[{k}] has no 'pid' or 'doc_id'")
                docs.append(doc_id_of(p["pid"]) if p.get("pid") is not None else str(p["doc_id"]))
            gold = row.get("gold_doc_ids")
            table[qid] = {"docs": docs, "gold": None if not gold else [str(g) for g in gold], "domain": row.get("domain")}
    return table


def _gold_documents(qids: list[str], data_dir) -> dict[str, list[str]]:
    """LFRQA's gold document ids of ``qids`` (nothing is loaded when every row carries its own)."""
    if not qids:
        return {}
    import lfrqa

    dataset = lfrqa.load("all", data_dir=data_dir).select_columns(["qid", "gold_doc_ids"])
    wanted = set(qids)
    return {q: list(g) for q, g in zip(dataset["qid"], dataset["gold_doc_ids"]) if q in wanted}


def _system_block(name: str, run: Run, files: tuple[str, ...], table: dict[str, dict], lfrqa_gold: dict, stats) -> dict:
    kept, no_retrieval, no_gold = [], 0, 0
    for verdict in run.verdicts:
        row = table.get(verdict["qid"])
        gold = None if row is None else (row["gold"] or lfrqa_gold.get(verdict["qid"]))
        if row is None:
            no_retrieval += 1
        elif not gold:
            no_gold += 1
        else:
            found = set(gold).intersection(row["docs"])
            domain = verdict.get("domain") or row["domain"] or "unknown"
            kept.append((domain, verdict.get("outcome"), bool(found), len(found) / len(set(gold))))
    block = {"system": name, "files": list(files), "n_no_retrieval": no_retrieval, "n_no_gold": no_gold,
             **_split(kept, stats)}
    block["per_domain"] = {d: _split([x for x in kept if x[0] == d], stats) for d in sorted({x[0] for x in kept})}
    return block


def _split(kept: list[tuple], stats) -> dict:
    hits = [x for x in kept if x[2]]
    misses = [x for x in kept if not x[2]]
    return {
        "n": len(kept),
        "gold_hit_rate": len(hits) / len(kept) if kept else None,
        "gold_recall": sum(x[3] for x in kept) / len(kept) if kept else None,
        "gold_retrieved": rate_block([x[1] for x in hits], stats),
        "gold_not_retrieved": rate_block([x[1] for x in misses], stats),
    }


def rate_block(outcomes: list[str | None], stats: Mapping) -> dict:
    """The :data:`RATE_KEYS` of :func:`~metric_arena.stats.summarize` for ``outcomes`` (``stats``: its settings)."""
    rates = summarize(outcomes, **stats)
    return {key: rates[key] for key in RATE_KEYS}
