"""ColBERTv2 retrieval through ``colbert-ai`` (a PLAID index, 2-bit residuals), as the paper did.

RobustQA, whose retrieval the RAG-QA Arena paper reuses, indexed each corpus's 100-word passages
(text only, no title) with the ``colbertv2.0`` checkpoint and ``nbits=2``; those are the defaults
here. The index folder holds ColBERT's own PLAID index (``plaid/``), the ``collection.tsv`` it
was built from (line ``i`` is ColBERT's passage ``i``), ``pids.json`` (ColBERT's integer ids ->
our string pids) and ``retriever.json``.

Real corpora need GPUs: encoding runs ~3 passages/s per CPU core, and LoTTE science has ~1.7M
documents. Index building spreads over GPUs with ColBERT's ranks (``nranks``, ``gpus``); search
uses one GPU when present. For example, on a machine with 8 GPUs::

    # passages of a corpus -> PLAID index, one rank per GPU
    rag-qa-arena retrieve --domain science --retriever colbert --index-dir indexes/science \\
        --corpus-dir data/ --nranks 8 --k 5 --out runs/science.colbert.jsonl

    # or from Python
    from lfrqa import load_corpus
    from retrieval import ColBERTRetriever
    retriever = ColBERTRetriever("colbert-ir/colbertv2.0", index_dir="indexes/fiqa", nranks=8)
    retriever.index(load_corpus("fiqa", corpus_dir="data/"))   # written to indexes/fiqa as it is built
    hits = ColBERTRetriever.load("indexes/fiqa").search({"q1": "what is an index fund"}, k=5)

With several ranks ColBERT starts worker processes (``spawn``): run such a script under
``if __name__ == "__main__":``. On CPU, indexing runs in-process (``avoid_fork_if_possible``).
ColBERT compiles four small C++ extensions the first time it searches (~100 s, cached in
``$TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``); a lock left there by a killed
build is found and removed first (``retrieval/_torch_extensions.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import make_folder, read_json_file
from retrieval._base import (
    META_FILE,
    Results,
    Retriever,
    iter_passage_texts,
    rank,
    read_pids,
    write_meta,
)
from retrieval._colbert_build import chunk_progress, chunk_size, finish_build, resumable, start_build

DEFAULT_CHECKPOINT = "colbert-ir/colbertv2.0"
INSTALL_HINT = 'ColBERT retrieval needs colbert-ai, faiss and torch: pip install "rag-qa-arena[colbert]"'
_PLAID = "plaid"
_COLLECTION = "collection.tsv"
_TO_SPACE = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


@dataclass(frozen=True, kw_only=True)
class ColBERTIndexing:
    """ColBERT's indexing settings (None keeps the checkpoint's): ``doc_maxlen``, ``query_maxlen``,
    ``kmeans_niters``, ``index_bsize``; ``options``: any other ``ColBERTConfig`` fields, as a mapping;
    ``chunk_passages``: passages per saved chunk (ColBERT's default: 25,000). A build saves one chunk at a
    time, so this bounds what a crash loses; ``index(..., resume=True)`` keeps the rest."""

    doc_maxlen: int | None = None
    query_maxlen: int | None = None
    kmeans_niters: int | None = None
    index_bsize: int | None = None
    options: Mapping[str, Any] | None = None
    chunk_passages: int | None = None


@dataclass(frozen=True, kw_only=True)
class PlaidSearch:
    """PLAID's search settings: ``ncells``, ``centroid_score_threshold``, ``ndocs``; None lets ColBERT pick
    them from k."""

    ncells: int | None = None
    centroid_score_threshold: float | None = None
    ndocs: int | None = None


class ColBERTRetriever(Retriever):
    """ColBERTv2 (PLAID) over passages, built and searched with ``colbert-ai``.

    Args:
        checkpoint: a Hugging Face id (default ``colbert-ir/colbertv2.0``) or a local checkpoint folder.
        index_dir: where :meth:`index` builds the index (a temporary folder if None; then :meth:`save` it).
        nbits: bits per residual dimension (2, as RobustQA).
        nranks: ColBERT processes for indexing; default one per GPU used (1 on CPU).
        gpus: GPUs for the indexing ranks: a count, ``"0,1"``, or a list; default all visible. (To run
            on CPU on a machine with GPUs, hide them: ``CUDA_VISIBLE_DEVICES=`` before starting Python.)
        indexing: ColBERT's indexing settings (:class:`ColBERTIndexing`; the checkpoint's by default).
        search: PLAID's search settings (:class:`PlaidSearch`; picked from k by default).

    The loose keywords of earlier releases (``doc_maxlen``, ``query_maxlen``, ``kmeans_niters``,
    ``index_bsize``, ``colbert_options``; ``ncells``, ``centroid_score_threshold``, ``ndocs``) work for one
    release, with a ``DeprecationWarning``.
    """

    kind = "colbert"
    library = "colbert-ai"
    local_only = ("runs", "collection.tsv")  # logs, and a copy of the corpus that search never reads

    @grouped_keywords("indexing", ColBERTIndexing, {"doc_maxlen": "doc_maxlen", "query_maxlen": "query_maxlen",
                                                    "kmeans_niters": "kmeans_niters", "index_bsize": "index_bsize",
                                                    "colbert_options": "options"})
    @grouped_keywords("search", PlaidSearch, ["ncells", "centroid_score_threshold", "ndocs"])
    def __init__(
        self,
        checkpoint: str | os.PathLike = DEFAULT_CHECKPOINT,
        *,
        index_dir: str | os.PathLike | None = None,
        nbits: int = 2,
        nranks: int | None = None,
        gpus: int | str | list[int] | None = None,
        indexing: ColBERTIndexing | None = None,
        search: PlaidSearch | None = None,
        show_progress: bool = True,
    ) -> None:
        indexing = indexing if indexing is not None else ColBERTIndexing()
        search = search if search is not None else PlaidSearch()
        super().__init__()
        checkpoint = str(checkpoint)
        if os.path.exists(checkpoint):
            checkpoint = str(Path(checkpoint).resolve())
        self.checkpoint = checkpoint
        self.index_dir = None if index_dir is None else Path(index_dir).resolve()
        self.nbits, self.nranks, self.gpus = nbits, nranks, gpus
        self.index_options = {
            k: v
            for k, v in dict(doc_maxlen=indexing.doc_maxlen, query_maxlen=indexing.query_maxlen,
                             kmeans_niters=indexing.kmeans_niters, index_bsize=indexing.index_bsize).items()
            if v is not None
        }
        self.index_options.update(indexing.options or {})
        self.search_options = {"ncells": search.ncells, "centroid_score_threshold": search.centroid_score_threshold,
                               "ndocs": search.ndocs}
        self.show_progress = show_progress
        self.chunk_passages = indexing.chunk_passages
        self._searcher = None

    def settings(self) -> dict[str, Any]:
        return {"checkpoint": self.checkpoint, "nbits": self.nbits, "index_options": self.index_options}

    def describe(self) -> dict[str, Any]:
        """Settings as ColBERT used them (read back from the PLAID metadata) and the checkpoint's revision."""
        settings = {"nbits": self.nbits, "index_options": self.index_options}
        metadata = self.index_dir / _PLAID / "metadata.json" if self.index_dir is not None else None
        if metadata is not None and metadata.is_file():
            data = read_json_file(metadata, strict=False, fix="the index is damaged: build or download it again")
            config = data.get("config") if isinstance(data, dict) else None
            config = config if isinstance(config, dict) else {}
            settings.update({key: config[key] for key in ("dim", "doc_maxlen", "query_maxlen", "similarity")
                             if key in config})
        return {"settings": settings, "checkpoint": checkpoint_identity(self.checkpoint)}

    # -- indexing ------------------------------------------------------------------------------
    def index(self, passages: Iterable[Mapping[str, Any]], *, resume: bool = False) -> None:
        """Build the index; with ``resume=True``, continue an unfinished build of the same passages and
        settings in ``index_dir`` (its encoded chunks are kept), or build from the start if there is none."""
        _import_colbert()
        nranks, gpus = self._ranks_and_gpus()  # fail before writing anything
        _check_checkpoint(self.checkpoint)
        work = self.index_dir or Path(tempfile.mkdtemp(prefix="colbert-index-"))
        make_folder(work)
        (work / META_FILE).unlink(missing_ok=True)  # until the new index is complete, the folder holds none
        pids: list[str] = []
        collection = work / _COLLECTION
        texts = iter_passage_texts(passages, pids)
        if self.show_progress and sys.stderr.isatty():  # piped: one plain line once written (below)
            from tqdm.auto import tqdm

            texts = tqdm(texts, desc="ColBERT: writing collection.tsv", unit=" passages", total=_length(passages))
        with open(collection, "w", encoding="utf-8", newline="\n") as handle:
            for number, text in enumerate(texts):
                handle.write(f"{number}\t{text.translate(_TO_SPACE)}\n")
        if not pids:
            raise RagQaArenaError("No passages to index: the corpus is empty")
        if self.show_progress and not sys.stderr.isatty():
            print(f"ColBERT: wrote collection.tsv ({len(pids):,} passages); encoding", file=sys.stderr, flush=True)
        if nranks > 1:  # the ranks are new processes, which load the GPU extensions without our check
            from retrieval._torch_extensions import check_build_locks, colbert_extension_names

            check_build_locks(colbert_extension_names(use_gpu=True))
        from colbert import Indexer
        from colbert.infra import ColBERTConfig, RunConfig

        config = ColBERTConfig(nbits=self.nbits, **self.index_options)
        run = RunConfig(
            nranks=nranks, gpus=gpus, root=str(work / "runs"), index_root=str(work), experiment="rag-qa-arena",
            avoid_fork_if_possible=True,
        )
        build = {**self.settings(), "chunk_passages": self.chunk_passages}
        resume = resume and resumable(work, work / _PLAID, pids, build)
        start_build(work, pids, build)
        with _colbert_context(run), chunk_size(self.chunk_passages), chunk_progress(self.show_progress):
            indexer = Indexer(checkpoint=self.checkpoint, config=config, verbose=1)
            indexer.index(name=_PLAID, collection=str(collection),
                          overwrite="resume" if resume else "force_silent_overwrite")
        self.pids, self._positions, self._searcher, self.index_dir = pids, None, None, work
        write_meta(work, self.kind, pids, self.settings())  # the folder is now a complete saved index
        finish_build(work)

    def _ranks_and_gpus(self) -> tuple[int, Any]:
        import torch

        visible = torch.cuda.device_count()
        gpus = self.gpus
        if gpus is None:
            gpus = visible
        if isinstance(gpus, str):
            gpus = [int(g) for g in gpus.split(",") if g.strip()]
        used = gpus if isinstance(gpus, int) else len(gpus)
        if used > visible:
            raise RagQaArenaError(f"gpus={self.gpus!r} asks for {used} GPU(s) but {visible} are visible")
        nranks = self.nranks if self.nranks is not None else max(1, used)
        if nranks < 1:
            raise RagQaArenaError(f"nranks must be at least 1, got {nranks!r}")
        if nranks > 1 and used == 0:
            raise RagQaArenaError(f"nranks={nranks} needs GPUs (ColBERT's ranks share GPUs): on CPU use nranks=1")
        return nranks, gpus

    # -- search --------------------------------------------------------------------------------
    def search(self, queries: Mapping[str, str], k: int = 5) -> Results:
        qids = self._query_ids(queries, k)
        if not qids:
            return {}
        searcher = self._get_searcher()
        k_colbert = min(k, len(self.pids))
        results: Results = {}
        with _quiet():
            encoded = searcher.encode([queries[q] for q in qids])
            rows = range(len(qids))
            if self.show_progress and len(qids) > 1:
                from tqdm.auto import tqdm

                rows = tqdm(rows, desc="ColBERT: searching", unit=" queries", file=sys.stderr)
            for row in rows:
                searcher.configure(**self.search_options)  # let ColBERT pick PLAID settings for this k
                ids, _, scores = searcher.dense_search(encoded[row : row + 1], k=k_colbert)
                results[qids[row]] = rank(((self.pids[int(i)], float(s)) for i, s in zip(ids, scores)), k)
        return results

    def _get_searcher(self):
        if self._searcher is None:
            _import_colbert()
            _check_checkpoint(self.checkpoint)
            from colbert import Searcher
            from colbert.data import Collection
            from colbert.infra import ColBERTConfig, RunConfig

            # The searcher never reads passage texts: give it a stand-in instead of loading millions of them.
            collection = Collection(path=str(self.index_dir / _COLLECTION), data=["(not loaded)"])
            run = RunConfig(root=str(self.index_dir / "runs"), index_root=str(self.index_dir), experiment="rag-qa-arena")
            with _colbert_context(run):
                self._searcher = Searcher(
                    index=_PLAID, checkpoint=self.checkpoint, collection=collection,
                    config=ColBERTConfig(**{k: v for k, v in self.search_options.items() if v is not None}),
                    index_root=str(self.index_dir), verbose=1,
                )
        return self._searcher

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        self._check_built()
        path = Path(path).resolve()
        if path != self.index_dir:
            make_folder(path)
            for name in (_PLAID, _COLLECTION):
                source, target = self.index_dir / name, path / name
                if not source.exists():  # collection.tsv stays home when an index is shared
                    continue
                if source.is_dir():
                    shutil.copytree(source, target, dirs_exist_ok=True)
                else:
                    shutil.copy2(source, target)
        write_meta(path, self.kind, self.pids, self.settings())
        return path

    @classmethod
    def _load(cls, path: Path, meta: dict, checkpoint: str | None = None, **options: Any) -> ColBERTRetriever:
        settings = meta["settings"]
        saved = dict(settings.get("index_options", {}))
        named = {f: saved.pop(f) for f in ("doc_maxlen", "query_maxlen", "kmeans_niters", "index_bsize") if f in saved}
        search = {f: options.pop(f) for f in ("ncells", "centroid_score_threshold", "ndocs") if f in options}
        retriever = cls(
            checkpoint or settings["checkpoint"], index_dir=path, nbits=settings["nbits"],
            indexing=ColBERTIndexing(**named, options=saved or None), search=PlaidSearch(**search), **options,
        )
        if not (path / _PLAID).is_dir():
            raise FileNotFoundError(f"{path} has no ColBERT index folder {_PLAID}/: rebuild the index")
        retriever.pids = read_pids(path, meta)
        return retriever


@contextlib.contextmanager
def _colbert_context(run):
    """ColBERT's Run context, with its chatter on stderr and the environment it edits restored."""
    from colbert.infra import Run

    saved = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        with _quiet(), Run().context(run):
            yield
    finally:
        if saved is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = saved


@contextlib.contextmanager
def _quiet():
    """Send ColBERT's and faiss' progress chatter (Python prints and C++ writes to fd 1) to stderr,
    so that stdout stays free for results."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real fd 1 (embedded interpreters): Python-level redirect only
        saved = None
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _import_colbert():
    try:
        import colbert  # noqa: F401
        import faiss  # noqa: F401  (ColBERT's k-means)
        import torch  # noqa: F401
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error
    from retrieval import _colbert_compat, _torch_extensions

    _colbert_compat.apply()  # colbert-ai <= 0.2.22 under transformers 5: see retrieval/_colbert_compat.py
    _colbert_compat.tolerate_detached_head()  # ColBERT stamps configs with the cwd's git branch
    _torch_extensions.guard_colbert_loads()  # a killed build's lock never hangs a load (see that module)


def _check_checkpoint(checkpoint: str) -> None:
    """Fail early, naming the fix, when ``checkpoint`` is neither a model folder nor a Hub id that
    can be downloaded or is cached (offline, ColBERT would otherwise fail deep inside, with a traceback)."""
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(checkpoint)
    except (OSError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RagQaArenaError(
            f"Cannot load the ColBERT checkpoint {checkpoint!r} ({reason.rstrip('.')}). Give --checkpoint (checkpoint=) "
            "a local checkpoint folder, or run once with network access so that the Hub id is cached"
        ) from None


def checkpoint_identity(checkpoint: str) -> dict[str, str | None]:
    """``{"name", "revision"}`` of a checkpoint: a local folder's revision is the sha256 of its files,
    a Hub id's the commit of the copy transformers resolves (None when it cannot be resolved)."""
    from lfrqa.kernel import sha256_file

    folder = Path(checkpoint)
    if folder.is_dir():
        import hashlib

        digest = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
            digest.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\n".encode())
        return {"name": folder.name, "revision": "sha256:" + digest.hexdigest()}
    revision = None
    with contextlib.suppress(OSError, ValueError):
        from transformers import AutoConfig

        revision = getattr(AutoConfig.from_pretrained(checkpoint), "_commit_hash", None)
    return {"name": checkpoint, "revision": revision}


def _length(passages) -> int | None:
    try:
        return len(passages)
    except TypeError:
        return None


def make_tiny_checkpoint(
    path: str | os.PathLike, words: Iterable[str] = (), dim: int = 32, seed: int = 0, hidden: int = 32
) -> Path:
    """A tiny random ColBERT checkpoint, offline, for tests and benchmarks (retrieval quality: none).

    The vocabulary holds BERT's special tokens, ``[unused0]``/``[unused1]`` (ColBERT's query and
    document markers), single characters and ``words``.
    """
    _import_colbert()
    import string

    import torch
    from colbert.infra import ColBERTConfig
    from colbert.modeling.base_colbert import BaseColBERT
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = Path(path)
    make_folder(path)
    vocab = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [c for c in string.ascii_lowercase + string.digits + string.punctuation]
    vocab += sorted({w.lower() for w in words} - set(vocab))
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    tokenizer = BertTokenizerFast.from_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=2 * hidden, max_position_embeddings=512,
    )
    BertModel(config).save_pretrained(str(path))
    with _quiet():
        model = BaseColBERT(str(path), colbert_config=ColBERTConfig(dim=dim, doc_maxlen=128, query_maxlen=32))
        model.save(str(path))  # adds ColBERT's linear layer and artifact.metadata
    return path
