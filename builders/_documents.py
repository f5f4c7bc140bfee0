"""The RobustQA corpora behind LFRQA: where each raw source lives and how to read it as documents.

=============  ==========================================  ==================================
domain         raw source (under a data folder)            downloaded from
=============  ==========================================  ==================================
lifestyle,     ``lotte/<domain>/<split>/collection.tsv``   ``lotte.tar.gz`` of the ColBERT
recreation,    (or the tarball itself, ``lotte.tar.gz``)   authors (:data:`LOTTE_URL`)
science,
technology,
writing
fiqa           ``fiqa/FiQA_train_doc_final.tsv`` (FiQA     BEIR's ``fiqa.zip``
               2018), ``fiqa/corpus.jsonl`` (BEIR) or      (:data:`FIQA_URL`)
               ``fiqa.zip``
bioasq         ``bioasq/documents.jsonl``                  - (license: bring your own)
=============  ==========================================  ==================================

LFRQA uses the LoTTE *test* collections; ``split="dev"`` gives LoTTE's dev collections. FiQA and
BioASQ have one corpus, served as ``split="test"``.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from builders._bioasq import BIOASQ_DOCUMENTS, iter_bioasq_documents
from builders._bioasq import HOW_TO as BIOASQ_HOW_TO
from builders._fiqa import (
    FIQA_BEIR,
    FIQA_MD5,
    FIQA_TSV,
    FIQA_URL,
    iter_beir_documents,
    iter_fiqa_documents,
)
from builders._lotte import (
    LOTTE_DOMAINS,
    LOTTE_SPLITS,
    LOTTE_TEST_SIZES,
    LOTTE_URL,
    iter_lotte_documents,
    lotte_relpath,
)
from builders._passages import iter_passages
from lfrqa.errors import RagQaArenaError

CORPUS_DOMAINS: tuple[str, ...] = ("bioasq", "fiqa") + LOTTE_DOMAINS
DATA_DIR_ENV = "LFRQA_DATA_DIR"
#: Documents in each distributed test corpus, as the paper's Table 2 counts them (FiQA 2018: 57,638;
#: BioASQ is brought by the user, so its size is not known here).
CORPUS_DOCUMENTS: dict[str, int] = {"fiqa": 57_638, **LOTTE_TEST_SIZES}

__all__ = ["CORPUS_DOCUMENTS", "CORPUS_DOMAINS", "RawSource", "corpus_sizes", "iter_documents", "locate_source"]


@dataclass(frozen=True)
class RawSource:
    """One raw corpus file: a local ``path`` (maybe an archive holding ``member``), or a ``url`` to fetch."""

    domain: str
    split: str
    kind: str  # "lotte" | "fiqa" | "bioasq"
    member: str  # the file's path inside the distributed layout / archive
    path: str | None = None
    url: str | None = None
    md5: str | None = None

    @property
    def is_archive(self) -> bool:
        return self.path is not None and self.path.endswith((".tar.gz", ".tgz", ".tar", ".zip"))


def check_domain_split(domain: str, split: str) -> None:
    if domain not in CORPUS_DOMAINS:
        raise RagQaArenaError(f"Unknown corpus domain {domain!r}. Available: {', '.join(CORPUS_DOMAINS)}")
    splits = LOTTE_SPLITS if domain in LOTTE_DOMAINS else ("test",)
    if split not in splits:
        hint = "" if domain in LOTTE_DOMAINS else f" ({domain} has a single corpus, served as 'test')"
        raise RagQaArenaError(f"Unknown split {split!r} for the {domain} corpus{hint}. Available: {', '.join(splits)}")


def locate_source(domain: str, split: str = "test", data_dir: str | os.PathLike | None = None) -> RawSource:
    """Where the raw corpus of ``domain`` is: in the data folder (``data_dir`` or ``$LFRQA_DATA_DIR``),
    else at its canonical URL. A data folder that lacks the files is an error saying where to put them.
    """
    check_domain_split(domain, split)
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    local = None if chosen is None else Path(chosen).expanduser().resolve()
    if domain in LOTTE_DOMAINS:
        member, url, md5, archive, kind = lotte_relpath(domain, split), LOTTE_URL, None, "lotte.tar.gz", "lotte"
        candidates = [member]
    elif domain == "fiqa":
        member, url, md5, archive, kind = FIQA_BEIR, FIQA_URL, FIQA_MD5, "fiqa.zip", "fiqa"
        candidates = [FIQA_TSV, FIQA_BEIR]
    else:
        member, url, md5, archive, kind = BIOASQ_DOCUMENTS, None, None, None, "bioasq"
        candidates = [BIOASQ_DOCUMENTS]
    if local is None:
        if url is None:
            raise FileNotFoundError(f"No data folder is set for the {domain} corpus. {BIOASQ_HOW_TO}")
        return RawSource(domain, split, kind, member, url=url, md5=md5)
    for relpath in candidates:
        if (local / relpath).is_file():
            return RawSource(domain, split, kind, relpath, path=str(local / relpath))
    if archive is not None and (local / archive).is_file():
        return RawSource(domain, split, kind, member, path=str(local / archive))
    if domain == "bioasq":
        raise FileNotFoundError(f"No BioASQ documents at {local / BIOASQ_DOCUMENTS}. {BIOASQ_HOW_TO}")
    expected = " or ".join(str(local / c) for c in candidates + [archive])
    raise FileNotFoundError(
        f"The raw {domain} corpus is not in the corpus folder {local} (from --corpus-dir/corpus_dir= or "
        f"${DATA_DIR_ENV}): expected {expected}. Download {url} and put it there (as is, or extracted in its "
        f"distributed layout), or give no --corpus-dir and unset ${DATA_DIR_ENV} to let the package download it."
    )


def iter_documents(source: RawSource, path: str | os.PathLike | None = None) -> Iterator[dict[str, str]]:
    """Stream ``{"doc_id", "title", "text"}`` from a raw source.

    ``path`` is where a URL source was downloaded to (the archive itself); local sources are read
    from ``source.path``, archives (``lotte.tar.gz``, ``fiqa.zip``) without extracting them to disk.
    """
    if path is None and source.path is None:
        raise RagQaArenaError(f"The {source.domain} corpus has no local file yet; download {source.url} first")
    archive = path is not None or source.is_archive
    path = str(path if path is not None else source.path)
    if archive and source.kind == "lotte":
        yield from _iter_tar_member(source, path)
    elif archive and source.kind == "fiqa":
        yield from _iter_zip_member(source, path)
    elif source.kind == "lotte":
        with open(path, "rb") as handle:
            yield from iter_lotte_documents(handle, source=path)
    elif source.kind == "fiqa":
        yield from iter_fiqa_documents(path)
    else:
        yield from iter_bioasq_documents(path)


def _iter_tar_member(source: RawSource, path: str) -> Iterator[dict[str, str]]:
    with tarfile.open(path, "r|*") as archive:  # a stream: one pass, nothing extracted to disk
        for info in archive:
            if info.isfile() and _matches(info.name, source.member):
                yield from iter_lotte_documents(archive.extractfile(info), source=f"{path}:{source.member}")
                return
    raise FileNotFoundError(f"{path} has no {source.member}; is it the lotte.tar.gz from {LOTTE_URL}?")


def _iter_zip_member(source: RawSource, path: str) -> Iterator[dict[str, str]]:
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if _matches(n, source.member)]
        if not names:
            raise FileNotFoundError(f"{path} has no {source.member}; is it BEIR's fiqa.zip from {FIQA_URL}?")
        with archive.open(names[0]) as handle:
            yield from iter_beir_documents(handle, source=f"{path}:{source.member}")


def _matches(name: str, member: str) -> bool:
    """``lotte/x/test/collection.tsv`` matches itself, ``./lotte/...`` and ``<folder>/lotte/...``."""
    return name == member or name.endswith("/" + member)


def corpus_sizes(domains: list[str], *, corpus_dir: str | os.PathLike | None = None) -> dict[str, dict]:
    """``{domain: {"corpus_documents", "corpus_passages"}}`` for the paper's Table 2: the known size of each
    test corpus (:data:`CORPUS_DOCUMENTS`; None for BioASQ), and, with ``corpus_dir`` holding the raw
    corpora, documents and 100-word passages counted from the files (None for a corpus not there).

    >>> corpus_sizes(["fiqa", "science"])["science"]
    {'corpus_documents': 1694164, 'corpus_passages': None}
    """
    sizes = {}
    for domain in domains:
        row = {"corpus_documents": CORPUS_DOCUMENTS.get(domain), "corpus_passages": None}
        if corpus_dir is not None:
            try:
                source = locate_source(domain, "test", corpus_dir)
            except RagQaArenaError:  # not in the folder: its known size stands
                source = None
            if source is not None and source.path is not None:
                n_documents = n_passages = 0
                for document in iter_documents(source):
                    n_documents += 1
                    n_passages += sum(1 for _ in iter_passages([document]))
                row = {"corpus_documents": n_documents, "corpus_passages": n_passages}
        sizes[domain] = row
    return sizes
