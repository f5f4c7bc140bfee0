"""The one retriever interface: index passages, search queries, save and load a built index.

A saved index is a folder holding ``retriever.json`` (which retriever, its settings, how many
passages), ``pids.json`` (our string passage ids in the retriever's internal order) and the
retriever's own files. Nothing is pickled. :meth:`Retriever.load` reads any of them. An index that
:func:`retrieval.retrieve` builds also gets a ``manifest.json`` (``retrieval/_manifest.py``), which lets it
be shared (``retrieval/_share.py``).
"""

from __future__ import annotations

import abc
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, make_folder, package_version, read_json_file

META_FILE = "retriever.json"
PIDS_FILE = "pids.json"
FORMAT = "rag-qa-arena/retriever-index"
FORMAT_VERSION = 1
#: The largest ``pids.json`` read: 2 GiB (about 100 million passage ids).
PIDS_LIMIT = 2 * 1024**3

#: ``{qid: [(pid, score), ...]}``, best first.
Results = dict[str, list[tuple[str, float]]]


class Retriever(abc.ABC):
    """Index passages (``{"pid", "text"}`` rows), then return the top-k passage ids per query.

    >>> from retrieval import BM25Retriever
    >>> retriever = BM25Retriever()
    >>> retriever.index([{"pid": "1-0", "text": "tax on stock options"}, {"pid": "2-0", "text": "a cat"}])
    >>> retriever.search({"q1": "stock options"}, k=1)  # doctest: +ELLIPSIS
    {'q1': [('1-0', ...)]}
    """

    #: Name written to ``retriever.json`` and accepted by the CLI's ``--retriever``.
    kind: ClassVar[str] = ""
    #: The distribution that builds and searches the index (its version goes into the manifest).
    library: ClassVar[str] = ""
    #: Entries of a saved index folder that stay home when the index is shared (logs, corpus copies).
    local_only: ClassVar[tuple[str, ...]] = ()
    _registry: ClassVar[dict[str, type[Retriever]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.kind:
            Retriever._registry[cls.kind] = cls

    def __init__(self) -> None:
        self.pids: list[str] = []
        self._positions: dict[str, int] | None = None

    # -- the interface -------------------------------------------------------------------------
    @abc.abstractmethod
    def index(self, passages: Iterable[Mapping[str, Any]]) -> None:
        """Build the index from passages (a ``datasets.Dataset`` or any iterable of ``{"pid", "text"}``)."""

    @abc.abstractmethod
    def search(self, queries: Mapping[str, str], k: int = 5) -> Results:
        """Top-``k`` passages per query, ``{qid: [(pid, score), ...]}``, best first, ties broken by pid."""

    @abc.abstractmethod
    def save(self, path: str | os.PathLike) -> Path:
        """Write the built index to the folder ``path`` (created if needed); return it."""

    @classmethod
    def load(cls, path: str | os.PathLike, **options: Any) -> Retriever:
        """Load a saved index; on the base class, whichever retriever built it. Its JSON files are
        parsed by the package's bounded reader first, and whatever the libraries raise on damaged or
        hostile files (a pickled array, which is never unpickled; bad JSON; wrong shapes) is one
        :class:`~lfrqa.errors.RagQaArenaError`."""
        path = Path(path)
        meta = read_meta(path)
        kind = meta.get("kind")
        target = Retriever._registry.get(kind)
        if target is None:
            raise RagQaArenaError(f"{path / META_FILE} names retriever {kind!r}; known: {', '.join(sorted(Retriever._registry))}")
        if cls is not Retriever and not issubclass(target, cls):
            raise RagQaArenaError(f"{path} holds a {kind!r} index, not a {cls.kind!r} one; load it with Retriever.load")
        check_json_files(path, skip=target.local_only)
        import pickle

        try:
            return target._load(path, meta, **options)
        except RagQaArenaError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OSError, EOFError, RecursionError,
                MemoryError, pickle.UnpicklingError, RuntimeError) as error:  # hostile files: nothing is unpickled
            reason = (str(error).splitlines() or [""])[0][:300]
            raise RagQaArenaError(f"{path} cannot be loaded as a {kind!r} index ({type(error).__name__}: {reason}): "
                                  "its files are not an index this version reads; build or download it again") from None

    @staticmethod
    def kinds() -> tuple[str, ...]:
        """The names of the known retrievers."""
        return tuple(sorted(Retriever._registry))

    @staticmethod
    def local_only_of(kind: str) -> tuple[str, ...]:
        """What a ``kind`` index folder keeps home when shared (see :attr:`local_only`)."""
        target = Retriever._registry.get(kind)
        return target.local_only if target is not None else ()

    @classmethod
    @abc.abstractmethod
    def _load(cls, path: Path, meta: dict, **options: Any) -> Retriever: ...

    def describe(self) -> dict[str, Any]:
        """What the manifest records about how this index was built: ``{"settings": ...}``, plus
        ``"checkpoint": {"name", "revision"}`` for a retriever with a model."""
        return {"settings": self.settings()}

    def settings(self) -> dict[str, Any]:
        return {}

    # -- shared helpers ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.pids)

    def position(self, pid: str) -> int:
        """Where ``pid`` sits in the indexed order (the row of the corpus it was built from)."""
        if self._positions is None:
            self._positions = {p: i for i, p in enumerate(self.pids)}
        try:
            return self._positions[pid]
        except KeyError:
            raise KeyError(f"Passage id {pid!r} is not in this index") from None

    def _check_built(self) -> None:
        if not self.pids:
            raise RagQaArenaError(f"The {self.kind} retriever has no index yet: call index(passages) or load(path) first")

    def _query_ids(self, queries: Mapping[str, str], k: int) -> list[str]:
        """The ids of ``queries`` in order, once the queries, ``k`` and the index are checked."""
        check_queries(queries, k)
        self._check_built()
        return list(queries)


def iter_passage_texts(passages: Iterable[Mapping[str, Any]], pids: list[str]) -> Iterator[str]:
    """Texts of ``passages`` in order, appending their ids to ``pids`` and refusing repeats or bad rows."""
    seen: set[str] = set()
    for number, passage in enumerate(_rows(passages)):
        try:
            pid, text = passage["pid"], passage["text"]
        except (KeyError, TypeError):
            raise RagQaArenaError(
                f"Passage #{number} is not a mapping with 'pid' and 'text' (got {type(passage).__name__}); "
                "pass builders.load_corpus(...) or dicts like {'pid': '12-0', 'text': '...'}"
            ) from None
        if not isinstance(pid, str) or not pid:
            raise RagQaArenaError(f"Passage #{number}: pid must be a non-empty string, got {pid!r}")
        if not isinstance(text, str):
            raise RagQaArenaError(f"Passage {pid!r}: text must be a string, got {type(text).__name__}")
        if pid in seen:
            raise RagQaArenaError(f"Passage id {pid!r} is repeated (second time at #{number}); passage ids must be unique")
        seen.add(pid)
        pids.append(pid)
        yield text


def _rows(passages: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Rows of a ``datasets.Dataset`` read in Arrow batches (fast), or of any iterable as is."""
    select = getattr(passages, "select_columns", None)
    if select is not None and hasattr(passages, "iter"):
        for batch in select(["pid", "text"]).iter(batch_size=10_000):
            for pid, text in zip(batch["pid"], batch["text"]):
                yield {"pid": pid, "text": text}
    else:
        yield from passages


def check_queries(queries: Mapping[str, str], k: int) -> None:
    if not isinstance(queries, Mapping):
        raise RagQaArenaError(f"queries must be a mapping {{qid: text}}, got {type(queries).__name__}")
    check_int("k", k, minimum=1)
    for qid, text in queries.items():
        if not isinstance(text, str):
            raise RagQaArenaError(f"Query {qid!r}: text must be a string, got {type(text).__name__}")


def rank(pairs: Iterable[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    """Best first; equal scores ordered by pid, so results never depend on the library's tie order."""
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))[:k]


def write_meta(path: Path, kind: str, pids: list[str], settings: dict) -> None:
    make_folder(path)
    atomic_write(path / PIDS_FILE, json.dumps(pids, ensure_ascii=False))
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "n_passages": len(pids),
        "settings": settings,
        "package_version": package_version(),
    }
    atomic_write(path / META_FILE, dumps_json(meta))


def read_meta(path: Path) -> dict:
    file = path / META_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{path} is not a saved retriever index (no {META_FILE}); build one with index() + save()")
    meta = read_json_file(file, fix="the index is damaged: build or download it again")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise RagQaArenaError(f"{file} is not a version-{FORMAT_VERSION} {FORMAT} file: rebuild the index")
    return meta


def check_json_files(path: Path, *, skip: Iterable[str] = ()) -> None:
    """Parse every ``.json`` file of the index folder ``path`` (but the entries ``skip``) with the
    package's bounded reader before a library does: the libraries' fast parsers (``orjson`` in
    bm25s) crash the process on a document nested 100,000 deep instead of raising."""
    skip = set(skip)
    for file in sorted(path.rglob("*.json")):
        if file.relative_to(path).parts[0] not in skip and file.is_file():
            read_json_file(file, limit=PIDS_LIMIT, strict=False, fix="the index is damaged: build or download it again")


def read_pids(path: Path, meta: dict) -> list[str]:
    pids = read_json_file(path / PIDS_FILE, limit=PIDS_LIMIT, fix="the index is damaged: build or download it again")
    if not isinstance(pids, list) or len(pids) != meta.get("n_passages") \
            or not all(isinstance(pid, str) for pid in pids):
        raise RagQaArenaError(f"{path / PIDS_FILE} does not hold the {meta['n_passages']} passage ids of the index: rebuild it")
    return pids
