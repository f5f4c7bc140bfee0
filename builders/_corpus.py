"""``builders.load_corpus``: the RobustQA corpora that LFRQA's answers are written over.

The raw sources (LoTTE's ``collection.tsv``, FiQA's document file, BioASQ's abstracts; see
:mod:`builders._documents`) are streamed through a ``datasets`` builder into an Arrow cache, as
documents or as RobustQA's 100-word passages (``pid = "<doc_id>-<k>"``, see
:mod:`builders._passages`). Nothing holds the whole corpus in memory: the builder's generator
yields one row at a time, and the returned ``Dataset`` is memory-mapped.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import datasets

from builders import _documents, _passages
from builders._documents import CORPUS_DOMAINS, RawSource, iter_documents, locate_source
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import download_errors

LEVELS: tuple[str, ...] = ("passages", "documents")
#: Our split names -> the ``datasets`` split each is stored as (as in :func:`lfrqa.load`).
SPLIT_NAMES = {"test": "test", "dev": "validation"}

FEATURES = {
    "documents": datasets.Features(
        {"doc_id": datasets.Value("string"), "title": datasets.Value("string"), "text": datasets.Value("string")}
    ),
    "passages": datasets.Features(
        {
            "pid": datasets.Value("string"),
            "doc_id": datasets.Value("string"),
            "title": datasets.Value("string"),
            "text": datasets.Value("string"),
        }
    ),
}

_DESCRIPTION = (
    "The RobustQA corpora (Han et al., ACL Findings 2023) behind LFRQA: LoTTE (lifestyle, recreation, science, "
    "technology, writing), FiQA and BioASQ, as documents or as RobustQA's 100-word passages."
)


@dataclass
class CorpusConfig(datasets.BuilderConfig):
    corpus_domain: str = ""
    corpus_level: str = "passages"
    corpus_split: str = "test"
    corpus_data_dir: str | None = None
    words_per_passage: int = _passages.WORDS_PER_PASSAGE


class RobustQACorpus(datasets.GeneratorBasedBuilder):
    """One config per domain; ``corpus_level``/``corpus_split``/``corpus_data_dir`` pick the rest."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = CorpusConfig
    BUILDER_CONFIGS = [CorpusConfig(name=d, corpus_domain=d, description=f"RobustQA {d} corpus") for d in CORPUS_DOMAINS]

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=_DESCRIPTION, features=FEATURES[self.config.corpus_level])

    def _split_generators(self, dl_manager):
        config = self.config
        source = locate_source(config.corpus_domain, config.corpus_split, config.corpus_data_dir)
        path = None
        if source.path is None:
            path = _download(dl_manager, source)
        return [
            datasets.SplitGenerator(
                name=SPLIT_NAMES[config.corpus_split], gen_kwargs={"source": source, "path": path}
            )
        ]

    def _generate_examples(self, source: RawSource, path: str | None):
        documents = iter_documents(source, path)
        if self.config.corpus_level == "documents":
            for document in documents:
                yield document["doc_id"], document
        else:
            for passage in _passages.iter_passages(documents, self.config.words_per_passage):
                yield passage["pid"], passage


def load_corpus(
    domain: str,
    split: str = "test",
    data_dir: str | os.PathLike | None = None,
    level: str = "passages",
    cache_dir: str | os.PathLike | None = None,
    words_per_passage: int = _passages.WORDS_PER_PASSAGE,
    *,
    corpus_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """A RobustQA corpus as a ``datasets.Dataset`` of passages (default) or documents.

    Raw files are read from ``corpus_dir`` (``data_dir`` is its older name; else ``$LFRQA_DATA_DIR``)
    in their distributed layout -
    ``lotte/<domain>/<split>/collection.tsv`` (or ``lotte.tar.gz``), ``fiqa/FiQA_train_doc_final.tsv``
    (or BEIR's ``fiqa/corpus.jsonl`` / ``fiqa.zip``), ``bioasq/documents.jsonl`` - or, with no data
    folder set, downloaded once from their canonical location (LoTTE, FiQA) and cached.

    >>> import lfrqa
    >>> passages = builders.load_corpus("writing", data_dir="data/")  # doctest: +SKIP
    >>> passages[0]  # doctest: +SKIP
    {'pid': '0-0', 'doc_id': '0', 'title': '', 'text': '...'}
    """
    if level not in LEVELS:
        raise RagQaArenaError(f"Unknown corpus level {level!r}. Available: {', '.join(LEVELS)}")
    if corpus_dir is not None:
        if data_dir is not None and Path(data_dir) != Path(corpus_dir):
            raise RagQaArenaError("corpus_dir= and data_dir= both name the raw corpora here: give corpus_dir= only")
        data_dir = corpus_dir
    source = locate_source(domain, split, data_dir)  # validates domain/split, fails early on missing files
    builder = RobustQACorpus(
        config_name=domain,
        dataset_name="robustqa_corpus",
        hash=_fingerprint(source, level, words_per_passage),
        cache_dir=None if cache_dir is None else str(cache_dir),
        corpus_level=level,
        corpus_split=split,
        corpus_data_dir=None if data_dir is None else str(Path(data_dir).expanduser().resolve()),
        words_per_passage=words_per_passage,
    )
    try:
        builder.download_and_prepare()
    except datasets.exceptions.DatasetGenerationError as error:
        if isinstance(error.__cause__, (ValueError, FileNotFoundError)):
            raise error.__cause__ from None  # name the file and line, not datasets' wrapper
        raise
    return builder.as_dataset(split=SPLIT_NAMES[split])


def _download(dl_manager, source: RawSource) -> str:
    try:
        path = dl_manager.download(source.url)
    except download_errors() as error:  # offline, DNS, HTTP errors: all end the same way
        raise FileNotFoundError(
            f"Could not download the raw {source.domain} corpus from {source.url} ({type(error).__name__}: {error}). "
            f"Download it yourself and put it in a data folder as {source.url.rsplit('/', 1)[-1]} or extracted "
            f"({source.member}), then pass it with --corpus-dir DIR (corpus_dir=...) or set ${_documents.DATA_DIR_ENV}."
        ) from error
    if source.md5 is not None:
        digest = hashlib.md5()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != source.md5:
            raise RagQaArenaError(
                f"{source.url} downloaded to {path} has md5 {digest.hexdigest()}, expected {source.md5}: delete the "
                "file and download it again."
            )
    return str(path)


def _fingerprint(source: RawSource, level: str, words_per_passage: int) -> str:
    """Arrow cache key: the reading code, the source's identity and (for local files) size and mtime."""
    digest = hashlib.sha256()
    root = Path(_documents.__file__).parent
    for module in (Path(__file__), root / "_documents.py", root / "_lotte.py", root / "_fiqa.py",
                   root / "_bioasq.py", root / "_passages.py"):
        digest.update(module.read_bytes())
    digest.update(f"{source.kind}|{source.member}|{source.path}|{source.url}|{level}|{words_per_passage}".encode())
    if source.path is not None:
        stat = os.stat(source.path)
        digest.update(f"{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]
