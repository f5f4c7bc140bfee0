"""Speed of corpus chunking, indexing and search, on a synthetic corpus (no download, CPU).

    python benchmarks/retrieval_speed.py                 # BM25 on >=100k passages, ColBERT on 5k
    python benchmarks/retrieval_speed.py --skip-colbert

Prints passages/s for chunking (RobustQA's 100-word rule, pure Python and through
``lfrqa.load_corpus`` from a LoTTE-style ``collection.tsv`` into Arrow) and for indexing, and
queries/s for search. ColBERT runs with a tiny random checkpoint (2 layers of width 32 would be
far faster than ColBERTv2's BERT-base; figures show the pipeline's overhead, not the real model's
cost). Its first search may include a one-time compile of ColBERT's C++ extensions.
"""

from __future__ import annotations

from _setup import quick_args

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _vocabulary(size: int) -> tuple[list[str], list[float]]:
    words = [f"t{i}" for i in range(size)]
    weights = [1.0 / (rank + 1) for rank in range(size)]  # Zipf-like, as real text
    return words, weights


def _documents(n_docs: int, mean_words: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words, weights = _vocabulary(50_000)
    texts = []
    for _ in range(n_docs):
        length = max(1, int(rng.expovariate(1 / mean_words)))
        texts.append(" ".join(rng.choices(words, weights, k=length)))
    return texts


def _queries(n: int, seed: int = 1) -> dict[str, str]:
    rng = random.Random(seed)
    words, weights = _vocabulary(50_000)
    return {f"q{i}": " ".join(rng.choices(words[50:], weights[50:], k=8)) for i in range(n)}


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s ({count:,} in {seconds:.2f} s)"


def bench_chunking(texts: list[str], work: Path) -> list[dict]:
    from builders._corpus import load_corpus
    from builders._passages import iter_passages

    documents = [{"doc_id": str(i), "title": "", "text": t} for i, t in enumerate(texts)]
    start = time.perf_counter()
    passages = list(iter_passages(documents))
    elapsed = time.perf_counter() - start
    print(f"chunking (iter_passages)          : {_rate(len(passages), elapsed)} passages from {len(texts):,} documents")

    collection = work / "data" / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(f"{i}\t{t}\n" for i, t in enumerate(texts)), encoding="utf-8")
    import datasets

    datasets.disable_progress_bars()
    start = time.perf_counter()
    corpus = load_corpus("writing", data_dir=work / "data", cache_dir=work / "cache")
    elapsed = time.perf_counter() - start
    print(f"load_corpus (tsv -> Arrow)        : {_rate(len(corpus), elapsed)} passages")
    return passages


def bench_bm25(passages: list[dict], queries: dict[str, str], work: Path) -> None:
    from retrieval import BM25Retriever, Retriever

    retriever = BM25Retriever(show_progress=False)
    start = time.perf_counter()
    retriever.index(passages)
    elapsed = time.perf_counter() - start
    print(f"BM25 index                        : {_rate(len(passages), elapsed)} passages")
    start = time.perf_counter()
    retriever.save(work / "bm25")
    Retriever.load(work / "bm25", show_progress=False)
    print(f"BM25 save + load                  : {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    retriever.search(queries, k=5)
    elapsed = time.perf_counter() - start
    print(f"BM25 search k=5                   : {_rate(len(queries), elapsed)} queries")


def bench_colbert(n_passages: int, n_queries: int, work: Path) -> None:
    from retrieval import ColBERTRetriever
    from retrieval._colbert import make_tiny_checkpoint

    words, _ = _vocabulary(50_000)
    checkpoint = make_tiny_checkpoint(work / "tiny-colbert", words=words[:5_000])
    rng = random.Random(2)
    passages = [{"pid": f"{i}-0", "text": " ".join(rng.choices(words[:5_000], k=100))} for i in range(n_passages)]
    queries = {f"q{i}": " ".join(rng.choices(words[:5_000], k=8)) for i in range(n_queries)}
    retriever = ColBERTRetriever(checkpoint, index_dir=work / "colbert", gpus=0, show_progress=False)
    start = time.perf_counter()
    retriever.index(passages)
    elapsed = time.perf_counter() - start
    print(f"ColBERT index (tiny ckpt, CPU)    : {_rate(n_passages, elapsed)} passages")
    start = time.perf_counter()
    retriever.search({"warm-up": "t1 t2"}, k=5)  # loads the index (and compiles extensions the first time)
    print(f"ColBERT searcher start            : {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    retriever.search(queries, k=5)
    elapsed = time.perf_counter() - start
    print(f"ColBERT search k=5 (tiny, CPU)    : {_rate(n_queries, elapsed)} queries")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=40_000, help="synthetic documents for chunking and BM25")
    parser.add_argument("--mean-words", type=int, default=250, help="mean document length in words")
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--colbert-passages", type=int, default=5_000)
    parser.add_argument("--colbert-queries", type=int, default=500)
    parser.add_argument("--skip-colbert", action="store_true")
    args = quick_args(parser, documents=500, queries=50, skip_colbert=True)
    print(f"cpu cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="retrieval-speed-") as tmp:
        work = Path(tmp)
        texts = _documents(args.documents, args.mean_words)
        passages = bench_chunking(texts, work)
        if len(passages) < 100_000:
            print(f"note: only {len(passages):,} passages; raise --documents for >=100k")
        bench_bm25(passages, _queries(args.queries), work)
        if not args.skip_colbert:
            bench_colbert(args.colbert_passages, args.colbert_queries, work)
    print(f"peak memory (max RSS of this process): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
