"""LFRQA questions -> top-k RobustQA passages per question, as the JSONL that answer generation reads.

Each output line is ``{"qid", "domain", "question", "passages": [{"pid", "doc_id", "text",
"score", "rank"}]}`` (rank from 1). Lines are appended and flushed batch by batch, so a crash
keeps what was done and ``resume=True`` carries on from there.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from builders import check_domain_split, doc_id_of
from lfrqa.checks import check_int, grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, json_line, loads_json, make_folder
from retrieval._base import META_FILE, Retriever
from retrieval._manifest import CORPUS_SIZE_KEYS, MANIFEST_FILE, check_new_index_dir, describe_corpus, write_manifest
from retrieval._metrics import DEFAULT_KS, evaluate
from retrieval._share import IndexCorpus, load_index

RETRIEVERS: tuple[str, ...] = ("colbert", "bm25")


@dataclass(frozen=True, kw_only=True)
class IndexOptions:
    """Where :func:`retrieve`'s index comes from. ``index_dir``: load the index there when it holds one,
    else build it from the corpus and save it there (the folder must then be new or empty; a
    ``manifest.json`` describes it). ``index_from``: a ready-built shared index instead (a Hub repo
    ``ORG/NAME`` at ``revision``, or a folder; see :func:`retrieval.load_index`), checked against this
    corpus unless ``trust``. ``checkpoint``: ColBERT's model (default :data:`DEFAULT_CHECKPOINT`);
    ``options``: the retriever's own build settings (ColBERT's ``nranks``, ``gpus``...).

    >>> IndexOptions(index_dir="indexes/fiqa").trust
    False
    """

    index_dir: str | os.PathLike | None = None
    index_from: str | os.PathLike | None = None
    revision: str | None = None
    trust: bool = False
    checkpoint: str | os.PathLike | None = None
    options: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class RetrieveRun:
    """How :func:`retrieve` runs: ``batch_size`` questions per search call, the first ``limit`` questions
    only, continue the output (``resume``) or replace it (``overwrite``), metrics at the cut-offs ``ks``
    (up to ``k``, and ``k``), a progress bar (``show_progress``)."""

    batch_size: int = 256
    limit: int | None = None
    resume: bool = False
    overwrite: bool = False
    ks: tuple[int, ...] = tuple(DEFAULT_KS)
    show_progress: bool = True


_INDEX_KEYWORDS = {"index_dir": "index_dir", "index_from": "index_from", "index_revision": "revision",
                   "trust_index": "trust", "checkpoint": "checkpoint", "retriever_options": "options"}
_RUN_KEYWORDS = ("batch_size", "limit", "resume", "overwrite", "ks", "show_progress")


@grouped_keywords("index", IndexOptions, _INDEX_KEYWORDS)
@grouped_keywords("run", RetrieveRun, _RUN_KEYWORDS)
@grouped_keywords("data_dir", None, ["lfrqa_data_dir"], build=lambda old: old["lfrqa_data_dir"])
def retrieve(
    domain: str,
    out: str | os.PathLike,
    *,
    retriever: str | Retriever | None = None,
    k: int = 5,
    index: IndexOptions | None = None,
    corpus_dir: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    split: str = "test",
    questions: Iterable[Mapping[str, Any]] | None = None,
    run: RetrieveRun | None = None,
) -> dict[str, Any]:
    """Retrieve the top-``k`` passages of ``domain``'s corpus for each question, write them to ``out``,
    and return the retrieval metrics against the questions' gold documents (also written to
    ``<out stem>.metrics.json``).

    ``corpus_dir`` holds the raw corpora (else ``$LFRQA_DATA_DIR``, else their download). Questions
    are LFRQA's, read by ``lfrqa.load`` as every command reads them (``data_dir``, else
    ``$LFRQA_DATA_DIR``, else the checksummed download; for bioasq, built from your BioASQ files,
    ``corpus_dir`` is the default), unless ``questions`` gives rows with ``qid``, ``question`` and
    optionally ``gold_doc_ids``/``domain``. A corpus with fewer documents than the published one
    (:data:`builders.CORPUS_DOCUMENTS`) or without some questions' gold documents is incomplete:
    a warning says so, and the metrics cover the questions whose gold documents are in it
    (``corpus`` in the result says how many). ``index``: where the index comes from
    (:class:`IndexOptions`: built in memory when not given). ``run``: batch size, limit, resume or
    overwrite, metric cut-offs, progress (:class:`RetrieveRun`). ``retriever`` defaults to ``"bm25"``,
    or to the shared index's.

    The loose keywords of earlier releases (``index_dir=``, ``checkpoint=``, ``retriever_options=``,
    ``index_from=``, ``index_revision=``, ``trust_index=``; ``batch_size=``, ``limit=``, ``resume=``,
    ``overwrite=``, ``ks=``, ``show_progress=``; ``lfrqa_data_dir=``, now ``data_dir=``) still work for
    one release, with a ``DeprecationWarning``. ``data_dir`` always names LFRQA's files: the raw
    corpora are ``corpus_dir``.

    >>> metrics = retrieve("fiqa", "runs/fiqa.bm25.jsonl", retriever="bm25", corpus_dir="data/")  # doctest: +SKIP
    >>> metrics["hit@5"], metrics["recall@5"], metrics["per_domain"]["fiqa"]["n"]  # doctest: +SKIP
    """
    index = index if index is not None else IndexOptions()
    run = run if run is not None else RetrieveRun()
    if not isinstance(index, IndexOptions) or not isinstance(run, RetrieveRun):
        raise RagQaArenaError(f"index={index!r}, run={run!r}: give a retrieval.IndexOptions and a retrieval.RetrieveRun")
    index_dir, checkpoint, index_from = index.index_dir, index.checkpoint, index.index_from
    limit, batch_size, resume, overwrite, show_progress = run.limit, run.batch_size, run.resume, run.overwrite, run.show_progress
    check_domain_split(domain, split)
    check_int("k", k, minimum=1)
    check_int("limit", limit, minimum=1, optional=True)
    if batch_size < 1:
        raise RagQaArenaError(f"batch_size must be at least 1, got {batch_size!r}")
    if index_from is not None and (index_dir is not None or isinstance(retriever, Retriever)):
        raise RagQaArenaError("index_from (--index-from) reads a shared index: drop index_dir (--index-dir) "
                              "and pass the retriever by name")
    if isinstance(retriever, str) and retriever not in RETRIEVERS:
        raise RagQaArenaError(f"Unknown retriever {retriever!r}. Available: {', '.join(RETRIEVERS)}")
    if index_dir is not None and not isinstance(retriever, Retriever):
        check_new_index_dir(index_dir, retriever or "bm25", resume=resume)
    out = Path(out)
    if resume and overwrite:
        raise RagQaArenaError("Pass either resume or overwrite, not both")
    if out.exists() and not (resume or overwrite):
        raise FileExistsError(f"{out} exists: pass --resume to continue it or --overwrite to replace it")

    lfrqa_data_dir = data_dir
    with _datasets_progress(show_progress):
        if lfrqa_data_dir is None and domain == "bioasq":
            lfrqa_data_dir = corpus_dir  # LFRQA's bioasq rows come from the user's BioASQ files, beside its corpus
        rows = _questions(domain, split, lfrqa_data_dir, questions, limit)
        from builders import load_corpus

        corpus = load_corpus(domain, split=split, corpus_dir=corpus_dir)
    coverage = corpus_coverage(domain, split, corpus, rows)
    if index_from is not None:
        engine = load_index(index_from, revision=index.revision,
                            corpus=IndexCorpus(passages=corpus, domain=domain, split=split), retriever=retriever,
                            checkpoint=checkpoint, trust=index.trust, show_progress=show_progress)
    else:
        engine = _retriever(retriever or "bm25", corpus, index_dir, checkpoint, index.options or {}, show_progress,
                            resume=resume, describe=lambda: {**describe_corpus(corpus, domain=domain, split=split),
                                              **{key: coverage[key] for key in CORPUS_SIZE_KEYS}})
    _check_same_corpus(engine, corpus, index_dir)

    done = _prepare_output(out, overwrite=overwrite)
    todo = [row for row in rows if row["qid"] not in done]
    progress = None
    if show_progress and todo:
        from tqdm.auto import tqdm

        progress = tqdm(total=len(todo), desc=f"{engine.kind}: retrieving {domain}", unit=" questions", file=sys.stderr)
    with open(out, "a", encoding="utf-8") as handle:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            hits = engine.search({row["qid"]: row["question"] for row in batch}, k=k)
            for line in _lines(batch, hits, engine, corpus):
                handle.write(json_line(line))
            handle.flush()
            if progress is not None:
                progress.update(len(batch))
    if progress is not None:
        progress.close()

    wanted = {row["qid"]: row for row in rows}
    if coverage["incomplete"]:  # hit rates over the questions whose gold documents are in the corpus
        present = coverage["present"]
        wanted = {qid: {**row, "gold_doc_ids": [d for d in row["gold_doc_ids"] if str(d) in present]}
                  for qid, row in wanted.items()
                  if not row["gold_doc_ids"] or any(str(d) in present for d in row["gold_doc_ids"])}
    results = {qid: passages for qid, passages in _read_results(out) if qid in wanted}
    metrics = evaluate(
        results,
        {qid: row["gold_doc_ids"] for qid, row in wanted.items()},
        ks=sorted({x for x in run.ks if x <= k} | {k}),
        domains={qid: row["domain"] for qid, row in wanted.items()},
    )
    metrics = {"domain": domain, "retriever": engine.kind, "k": k, **metrics,
               "corpus": {key: value for key, value in coverage.items() if key != "present"}}
    metrics_file = out.with_name(out.stem + ".metrics.json")
    atomic_write(metrics_file, dumps_json(metrics))
    return metrics


def corpus_coverage(domain: str, split: str, corpus, rows: list[dict]) -> dict:
    """How complete the corpus is: its documents against the published size (test split), and the
    questions' gold documents in it. An incomplete corpus is named in one warning on stderr (and
    by ``warnings.warn``); ``present`` holds the gold ids found."""
    from builders import CORPUS_DOCUMENTS

    doc_ids = set(corpus.unique("doc_id")) if "doc_id" in corpus.column_names else set()
    gold = {str(d) for row in rows for d in row.get("gold_doc_ids") or []}
    present = gold & doc_ids
    expected = CORPUS_DOCUMENTS.get(domain) if split == "test" else None
    with_gold = [row for row in rows if row.get("gold_doc_ids")]
    covered = sum(any(str(d) in present for d in row["gold_doc_ids"]) for row in with_gold)
    short = expected is not None and len(doc_ids) < expected
    incomplete = short or covered < len(with_gold)
    found = {"documents": len(doc_ids), "documents_expected": expected, "incomplete": incomplete,
             "questions_with_gold": len(with_gold), "questions_with_gold_in_corpus": covered, "present": present}
    if incomplete:
        import warnings

        size = f"{len(doc_ids):,} of the {expected:,} documents" if expected is not None else f"{len(doc_ids):,} documents"
        message = (f"the {domain} corpus is incomplete ({size}; {len(with_gold) - covered:,} of {len(with_gold):,} "
                   f"questions have no gold document in it): hit and recall are reported over the {covered:,} "
                   "questions whose gold documents are present. Give the whole corpus (--corpus-dir) for "
                   "comparable numbers")
        warnings.warn(message, UserWarning, stacklevel=3)
    return found


@contextlib.contextmanager
def _datasets_progress(show: bool):
    import datasets

    was_enabled = datasets.is_progress_bar_enabled()
    if not show:
        datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _prepare_output(out: Path, *, overwrite: bool) -> set[str]:
    """Empty ``out`` (new run) or keep its complete lines (resume); the qids already done."""
    make_folder(out.parent, target=out)
    if overwrite or not out.exists():
        out.write_text("", encoding="utf-8")
        return set()
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    kept, done = [], set()
    for number, line in enumerate(lines, 1):
        try:
            record = loads_json(line)
            done.add(record["qid"])
            kept.append(line if line.endswith("\n") else line + "\n")
        except (json.JSONDecodeError, KeyError, TypeError):
            if number != len(lines):
                raise RagQaArenaError(f"{out} line {number} is not a retrieval record; fix or delete the file") from None
    if len(kept) != len(lines) or (lines and not lines[-1].endswith("\n")):  # drop a line cut by a crash
        out.write_text("".join(kept), encoding="utf-8")
    return done


def _questions(domain, split, data_dir, questions, limit) -> list[dict[str, Any]]:
    if questions is None:
        import lfrqa

        questions = lfrqa.load(domain, split=split, data_dir=data_dir)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, row in enumerate(questions):
        if limit is not None and len(rows) >= limit:
            break
        try:
            qid, question = str(row["qid"]), row["question"]
        except (KeyError, TypeError):
            raise RagQaArenaError(f"Question #{number} needs 'qid' and 'question' fields, got {row!r}") from None
        if not isinstance(question, str) or not question.strip():
            raise RagQaArenaError(f"Question {qid!r} has no text")
        if qid in seen:
            raise RagQaArenaError(f"Question id {qid!r} is repeated; qids must be unique")
        seen.add(qid)
        gold = row.get("gold_doc_ids") or []
        rows.append({"qid": qid, "question": question, "domain": row.get("domain") or domain,
                     "gold_doc_ids": [str(g) for g in gold]})
    return rows


def _retriever(choice, corpus, index_dir, checkpoint, options, show_progress, *, resume, describe) -> Retriever:
    if isinstance(choice, Retriever):
        if not len(choice):
            choice.index(corpus)
        return choice
    if choice not in RETRIEVERS:
        raise RagQaArenaError(f"Unknown retriever {choice!r}. Available: {', '.join(RETRIEVERS)}")
    if index_dir is not None and (Path(index_dir) / META_FILE).is_file():
        load_options = {"show_progress": show_progress}
        if choice == "colbert" and checkpoint is not None:
            load_options["checkpoint"] = str(checkpoint)
        loaded = Retriever.load(index_dir, **load_options)
        if loaded.kind != choice:
            raise RagQaArenaError(f"{index_dir} holds a {loaded.kind!r} index, not a {choice!r} one: pick another --index-dir")
        return loaded
    if choice == "bm25":
        from retrieval._bm25 import BM25Retriever

        engine: Retriever = BM25Retriever(show_progress=show_progress, **options)
    else:
        from retrieval._colbert import DEFAULT_CHECKPOINT, ColBERTRetriever

        engine = ColBERTRetriever(
            checkpoint or DEFAULT_CHECKPOINT, index_dir=index_dir, show_progress=show_progress, **options
        )
    if index_dir is not None:  # a manifest describes a complete index only: none until this one is saved
        (Path(index_dir) / MANIFEST_FILE).unlink(missing_ok=True)
    started = time.perf_counter()
    if resume and choice == "colbert":  # an unfinished index in index_dir is continued (BM25 builds in seconds)
        engine.index(corpus, resume=True)
    else:
        engine.index(corpus)
    seconds = time.perf_counter() - started
    if index_dir is not None:
        engine.save(index_dir)
        write_manifest(index_dir, engine, corpus=describe(), build_seconds=seconds)
    return engine


def _check_same_corpus(engine: Retriever, corpus, index_dir) -> None:
    where = f"The index at {index_dir}" if index_dir is not None else "The index"
    if len(engine.pids) != len(corpus):
        raise RagQaArenaError(
            f"{where} has {len(engine.pids)} passages but the corpus has {len(corpus)}: it was built from "
            "another corpus; delete it (or pick another --index-dir) to rebuild it"
        )
    offset = 0
    for batch in corpus.select_columns(["pid"]).iter(batch_size=50_000):
        pids = batch["pid"]
        if pids != engine.pids[offset : offset + len(pids)]:
            raise RagQaArenaError(f"{where} lists its passages in another order or with other ids than the corpus: rebuild it")
        offset += len(pids)


def _lines(batch, hits, engine: Retriever, corpus) -> Iterator[dict[str, Any]]:
    positions = sorted({engine.position(pid) for row in batch for pid, _ in hits.get(row["qid"], [])})
    texts = dict(zip(positions, corpus.select_columns(["text"])[positions]["text"])) if positions else {}
    for row in batch:
        passages = [
            {"pid": pid, "doc_id": doc_id_of(pid), "text": texts[engine.position(pid)], "score": score, "rank": rank}
            for rank, (pid, score) in enumerate(hits.get(row["qid"], []), 1)
        ]
        yield {"qid": row["qid"], "domain": row["domain"], "question": row["question"], "passages": passages}


def _read_results(out: Path) -> Iterator[tuple[str, list[str]]]:
    with open(out, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = loads_json(line)
                yield record["qid"], [p["pid"] for p in record["passages"]]
