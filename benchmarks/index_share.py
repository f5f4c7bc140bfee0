"""Build a BM25 index once, share it, search it elsewhere: size and time of each step (CPU, offline).

    python benchmarks/index_share.py                       # the tests' 200-document corpus and 20,000 documents
    python benchmarks/index_share.py --docs 200 100000 --queries 1000

For each LoTTE-style synthetic corpus (``collection.tsv`` of documents of ~150 words, Zipf-like
words) it prints: the build through ``retrieval.retrieve(index_dir=...)`` (indexing, then the
manifest: corpus fingerprint and sha256 of every file), the index size, writing the folder
``index push --dry-run`` uploads (``export_index``), then ``load_index`` on that folder (sha256 of
every file, the corpus fingerprint, loading) and the search of ``--queries`` questions.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import _setup  # noqa: F401  (this checkout on sys.path)
from _setup import quick_args  # noqa: E402


def _write_corpus(folder: Path, n_docs: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    words = [f"t{i}" for i in range(50_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    collection = folder / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    with open(collection, "w", encoding="utf-8") as handle:
        for i in range(n_docs):
            length = max(1, int(rng.expovariate(1 / 150)))
            handle.write(f"{i}\t{' '.join(rng.choices(words, weights, k=length))}\n")
    return folder


def _questions(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    words = [f"t{i}" for i in range(50, 20_000)]
    return [{"qid": f"q{i}", "question": " ".join(rng.choices(words, k=8))} for i in range(n)]


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.2f} MiB"


def bench(n_docs: int, n_queries: int, work: Path) -> None:
    import datasets

    from builders import load_corpus
    from retrieval import IndexCorpus, IndexOptions, RetrieveRun, export_index, load_index, retrieve

    datasets.disable_progress_bars()
    data_dir = _write_corpus(work / "data", n_docs)
    corpus = load_corpus("writing", data_dir=data_dir, cache_dir=work / "cache")  # Arrow cache, outside the timings
    questions = _questions(n_queries)
    index_dir = work / "index"

    start = time.perf_counter()
    retrieve("writing", work / "built.jsonl", retriever="bm25", index=IndexOptions(index_dir=index_dir),
             corpus_dir=data_dir, questions=questions, run=RetrieveRun(show_progress=False))
    built = time.perf_counter() - start
    manifest = json.loads((index_dir / "manifest.json").read_text())
    size = sum(entry["size"] for entry in manifest["files"].values())

    start = time.perf_counter()
    export_index(index_dir, work / "shared", repo_id="org/bench")
    exported = time.perf_counter() - start

    start = time.perf_counter()
    index = load_index(work / "shared", corpus=IndexCorpus(passages=corpus, domain="writing", split="test"),
                       show_progress=False)
    loaded = time.perf_counter() - start
    from retrieval._manifest import corpus_fingerprint, read_manifest, verify_files

    start = time.perf_counter()
    verify_files(work / "shared", read_manifest(work / "shared"))
    hashed = time.perf_counter() - start
    start = time.perf_counter()
    corpus_fingerprint(corpus)
    fingerprinted = time.perf_counter() - start

    start = time.perf_counter()
    index.search({q["qid"]: q["question"] for q in questions}, k=5)
    searched = time.perf_counter() - start

    start = time.perf_counter()
    retrieve("writing", work / "shared.jsonl", index=IndexOptions(index_from=work / "shared"), corpus_dir=data_dir,
             questions=questions, run=RetrieveRun(show_progress=False))
    from_shared = time.perf_counter() - start
    same = (work / "shared.jsonl").read_bytes() == (work / "built.jsonl").read_bytes()
    if not same:
        raise SystemExit("retrieve --index-from wrote another output than the build")

    print(f"{n_docs:,} documents -> {manifest['corpus']['n_passages']:,} passages, {n_queries:,} queries")
    print(f"  index size                       : {_mib(size)} in {len(manifest['files'])} files "
          f"(+ manifest.json {(index_dir / 'manifest.json').stat().st_size / 1024:.1f} KiB)")
    print(f"  build (retrieve --index-dir)     : {built:.2f} s end to end; indexing {manifest['build_seconds']:.2f} s")
    print(f"  push --dry-run (export_index)    : {exported:.2f} s")
    print(f"  load_index (sha256, fingerprint) : {loaded:.2f} s; of which sha256 of the files {hashed:.3f} s, "
          f"corpus fingerprint {fingerprinted:.3f} s")
    print(f"  search                           : {searched:.2f} s ({n_queries / searched:,.0f} queries/s)")
    print(f"  retrieve --index-from            : {from_shared:.2f} s end to end; same output as the build: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, nargs="+", default=[200, 20_000], help="corpus sizes in documents")
    parser.add_argument("--queries", type=int, default=500, help="questions searched (default: 500)")
    args = quick_args(parser, docs=[200], queries=20)
    for n_docs in args.docs:
        with tempfile.TemporaryDirectory() as tmp:
            bench(n_docs, args.queries, Path(tmp))


if __name__ == "__main__":
    main()
