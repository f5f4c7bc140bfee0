"""BM25 with ``bm25s``: no GPU, no model download; a baseline next to ColBERTv2.

Defaults follow Elasticsearch's BM25 (``k1=1.2``, ``b=0.75``, Lucene's idf), the BM25 that
RobustQA's baseline ran through BEIR: lower-cased words of two or more letters, English stop
words removed, no stemming unless ``stemmer="english"`` (needs ``pip install PyStemmer``).
Passages that share no word with a query are never returned, so a query may get fewer than k.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lfrqa.errors import MissingDependency, RagQaArenaError
from lfrqa.kernel import make_folder
from retrieval._base import (
    Results,
    Retriever,
    iter_passage_texts,
    rank,
    read_pids,
    write_meta,
)

_STOPWORDS_FILE = "stopwords.tokenizer.json"
_VOCAB_FILE = "vocab.tokenizer.json"


class BM25Retriever(Retriever):
    """BM25 over passages with ``bm25s`` (index saved with bm25s' own numpy/JSON files).

    >>> retriever = BM25Retriever()
    >>> retriever.index([{"pid": "7-0", "text": "index funds and fees"}, {"pid": "8-0", "text": "roth ira limits"}])
    >>> retriever.search({"q": "ira limits"}, k=5)["q"][0][0]
    '8-0'
    """

    kind = "bm25"
    library = "bm25s"

    def __init__(
        self,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | list[str] | None = "en",
        stemmer: str | None = None,
        lower: bool = True,
        n_threads: int = 0,
        show_progress: bool = True,
    ) -> None:
        super().__init__()
        self.k1, self.b, self.method = float(k1), float(b), method
        self.stopwords, self.stemmer, self.lower = stopwords, stemmer, bool(lower)
        self.n_threads, self.show_progress = n_threads, show_progress
        self._model = None
        self._tokenizer = None

    def settings(self) -> dict[str, Any]:
        return {"k1": self.k1, "b": self.b, "method": self.method, "stemmer": self.stemmer, "lower": self.lower}

    def describe(self) -> dict[str, Any]:
        stopwords = self.stopwords if isinstance(self.stopwords, (str, type(None))) else f"{len(self.stopwords)} words"
        return {"settings": {**self.settings(), "stopwords": stopwords}}

    def index(self, passages: Iterable[Mapping[str, Any]]) -> None:
        bm25s = _import_bm25s()
        tokenizer = self._new_tokenizer(self.stopwords)
        pids: list[str] = []
        texts = iter_passage_texts(passages, pids)
        started = time.monotonic()
        if _bars(self.show_progress):
            from tqdm.auto import tqdm

            texts = tqdm(texts, desc="BM25: tokenizing passages", unit=" passages", total=_length(passages))
        elif self.show_progress:
            texts = _counted(texts, _length(passages))
        token_ids = list(tokenizer.streaming_tokenize(texts, update_vocab=True))
        if not pids:
            raise RagQaArenaError("No passages to index: the corpus is empty")
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        model.index((token_ids, tokenizer.get_vocab_dict()), show_progress=_bars(self.show_progress))
        if self.show_progress and not _bars(True):
            _say(f"BM25: indexed {len(pids):,} passages in {time.monotonic() - started:.1f} s")
        self._model, self._tokenizer, self.pids, self._positions = model, tokenizer, pids, None

    def search(self, queries: Mapping[str, str], k: int = 5) -> Results:
        qids = self._query_ids(queries, k)
        if not qids:
            return {}
        tokens = self._tokenizer.tokenize(
            [queries[q] for q in qids], update_vocab=False, return_as="string", show_progress=False
        )
        n = len(self.pids)
        fetch = min(n, k + 1)  # one more than asked, to see ties across the cut
        docs, scores = self._retrieve(tokens, fetch)
        results: Results = {}
        for row, qid in enumerate(qids):
            row_docs, row_scores = docs[row], scores[row]
            if fetch > k and row_scores[k] > 0 and row_scores[k] == row_scores[k - 1]:
                row_docs, row_scores = self._fetch_past_ties(tokens[row], k, fetch, n)
            pairs = [(self.pids[int(d)], float(s)) for d, s in zip(row_docs, row_scores) if s > 0]
            results[qid] = rank(pairs, k)
        return results

    def _fetch_past_ties(self, query_tokens: list[str], k: int, fetch: int, n: int):
        while True:
            fetch = min(n, fetch * 2)
            docs, scores = self._retrieve([query_tokens], fetch)
            if fetch == n or scores[0][fetch - 1] < scores[0][k - 1]:
                return docs[0], scores[0]

    def _retrieve(self, tokens: list[list[str]], k: int):
        return self._model.retrieve(
            tokens, k=k, show_progress=_bars(self.show_progress) and len(tokens) > 1, n_threads=self.n_threads
        )

    def save(self, path: str | os.PathLike) -> Path:
        self._check_built()
        path = Path(path)
        make_folder(path)
        self._model.save(str(path), allow_pickle=False, show_progress=False)
        self._tokenizer.save_vocab(str(path), _VOCAB_FILE)
        self._tokenizer.save_stopwords(str(path), _STOPWORDS_FILE)
        write_meta(path, self.kind, self.pids, self.settings())
        return path

    @classmethod
    def _load(cls, path: Path, meta: dict, mmap: bool = False, **options: Any) -> BM25Retriever:
        bm25s = _import_bm25s()
        settings = meta["settings"]
        retriever = cls(
            k1=settings["k1"], b=settings["b"], method=settings["method"], stemmer=settings["stemmer"],
            lower=settings["lower"], **options,
        )
        retriever._model = bm25s.BM25.load(str(path), mmap=mmap, allow_pickle=False, load_corpus=False)
        tokenizer = retriever._new_tokenizer(None)
        tokenizer.load_vocab(str(path), _VOCAB_FILE)
        tokenizer.load_stopwords(str(path), _STOPWORDS_FILE)
        retriever._tokenizer = tokenizer
        retriever.stopwords = list(tokenizer.stopwords or [])
        retriever.pids = read_pids(path, meta)
        return retriever

    def _new_tokenizer(self, stopwords):
        from bm25s.tokenization import Tokenizer

        return Tokenizer(lower=self.lower, stopwords=stopwords, stemmer=_stemmer(self.stemmer))


def _stemmer(name: str | None):
    if name is None:
        return None
    try:
        import Stemmer
    except ImportError as error:
        raise MissingDependency(f'stemmer={name!r} needs PyStemmer: pip install PyStemmer') from error
    return Stemmer.Stemmer(name).stemWord


def _import_bm25s():
    try:
        import bm25s
    except ImportError as error:
        raise MissingDependency('BM25 needs bm25s: pip install "rag-qa-arena" (or pip install bm25s)') from error
    return bm25s


#: Piped (not a terminal), a plain progress line every this many passages tokenized.
PLAIN_EVERY = 100_000


def _bars(show: bool) -> bool:
    """Progress bars (tqdm's, bm25s' own) only on a terminal: piped into a log they write carriage returns and
    ANSI codes, so there the build says what it does in plain lines instead (:func:`_say`)."""
    return show and sys.stderr.isatty()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _counted(texts, total: int | None):
    """``texts`` as they are, with a plain line on stderr at the start and every :data:`PLAIN_EVERY` passages."""
    _say(f"BM25: tokenizing {'' if total is None else f'{total:,} '}passages")
    for n, text in enumerate(texts, 1):
        if n % PLAIN_EVERY == 0:
            _say(f"BM25: tokenized {n:,}{'' if total is None else f' of {total:,}'} passages")
        yield text


def _length(passages) -> int | None:
    try:
        return len(passages)
    except TypeError:
        return None
