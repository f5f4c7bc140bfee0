"""How a ColBERT build runs: resuming an interrupted one, its chunk size, its progress lines.

A build writes ``build.json`` beside its index before ColBERT starts: the passages' digest and the
settings. ColBERT saves its plan, its codec and then one chunk of passages at a time; a build that
dies keeps those files. :func:`resumable` says whether a folder holds an unfinished build of the same
passages and settings, which ColBERT's own resume mode (``overwrite="resume"``) then continues: it
loads the plan and the codec and skips every chunk already on disk. :func:`chunk_size` bounds the work a
crash can lose (ColBERT's chunks hold 25,000 passages). :func:`chunk_progress` replaces ColBERT's
progress bar over chunks by plain lines when stderr is not a terminal (a pipe, a CI log).
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, read_json_file

BUILD_FILE = "build.json"
COLBERT_CHUNK = 25_000  # ColBERT's own upper bound of passages per chunk


def passages_digest(pids: Sequence[str]) -> str:
    """A digest of the passage ids in order: an index is continued only over the same passages."""
    digest = hashlib.sha256()
    for pid in pids:
        digest.update(pid.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def start_build(work: Path, pids: Sequence[str], settings: dict[str, Any]) -> None:
    """Record what the build in ``work`` is doing, before ColBERT writes anything."""
    atomic_write(work / BUILD_FILE, dumps_json({"passages": passages_digest(pids), "count": len(pids),
                                               "settings": settings}))


def finish_build(work: Path) -> None:
    (work / BUILD_FILE).unlink(missing_ok=True)


def done_chunks(plaid: Path) -> list[int]:
    """The chunks ColBERT finished writing (its ``N.metadata.json`` is written last)."""
    found = []
    for path in plaid.glob("*.metadata.json"):
        number = path.name.split(".", 1)[0]
        if number.isdigit():
            found.append(int(number))
    return sorted(found)


def resumable(work: Path, plaid: Path, pids: Sequence[str], settings: dict[str, Any]) -> bool:
    """Whether ``work`` holds an unfinished build of these passages and settings to continue.

    False (with a note on stderr) when there is nothing to continue; a one-line error when the
    unfinished build is of other passages or settings, since continuing it would mix two indexes.
    """
    file = work / BUILD_FILE
    if not file.is_file() or not (plaid / "plan.json").is_file():
        print(f"ColBERT: no unfinished build in {work} to resume: building from the start", file=sys.stderr)
        return False
    state = read_json_file(file, fix="delete it and build without --resume")
    if not isinstance(state, dict) or state.get("passages") != passages_digest(pids):
        count = state.get("count") if isinstance(state, dict) else None
        raise RagQaArenaError(
            f"{work} holds an unfinished build of other passages ({count} then, {len(pids)} now): it cannot be "
            "continued; build without --resume to start over, or pick another --index-dir"
        )
    if state.get("settings") != settings:
        changed = sorted(key for key in set(settings) | set(state.get("settings") or {})
                         if settings.get(key) != (state.get("settings") or {}).get(key))
        raise RagQaArenaError(
            f"{work} holds an unfinished build with other settings ({', '.join(changed)} differ): pass the same "
            "settings to resume it, or build without --resume to start over"
        )
    _drop_torn_chunks(plaid)
    done = done_chunks(plaid)
    print(f"ColBERT: resuming the build in {work}: {len(done)} chunk(s) already encoded are kept",
          file=sys.stderr, flush=True)
    return True


def _drop_torn_chunks(plaid: Path) -> None:
    """A chunk whose metadata a crash cut short is encoded again: ColBERT checks only that files exist."""
    for path in plaid.glob("*.metadata.json"):
        try:
            read_json_file(path)
        except (RagQaArenaError, ValueError, OSError):
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def chunk_size(passages: int | None) -> Iterator[None]:
    """ColBERT's chunks at most ``passages`` long while the block runs (None: ColBERT's own size)."""
    if passages is None:
        yield
        return
    if not isinstance(passages, int) or passages < 1:
        raise RagQaArenaError(f"chunk_passages={passages!r} must be a whole number >= 1 (ColBERT's default is "
                              f"{COLBERT_CHUNK:,})")
    from colbert.data.collection import Collection

    original = Collection.get_chunksize

    def smaller(self) -> int:
        return min(passages, original(self))

    Collection.get_chunksize = smaller
    try:
        yield
    finally:
        Collection.get_chunksize = original


@contextlib.contextmanager
def chunk_progress(show: bool) -> Iterator[None]:
    """ColBERT's progress while it builds: its bars as they are on a terminal; when stderr is piped (a
    CI log), one plain line per chunk encoded and compressed and one for k-means, with no carriage
    returns or ANSI codes; nothing when ``show`` is False."""
    if show and sys.stderr.isatty():
        yield
        return
    import faiss
    from colbert.indexing import collection_indexer, utils
    from colbert.indexing.codecs import residual_embeddings
    from colbert.modeling import checkpoint

    class Bars:  # stands in for the ``tqdm`` module in ColBERT's indexing modules
        @staticmethod
        def tqdm(iterable, *args, **options):
            return _plain_lines(iterable) if show else iter(iterable)

    class Kmeans(faiss.Kmeans):  # faiss' verbose k-means rewrites one line with carriage returns
        def __init__(self, d, k, **options):
            super().__init__(d, k, **{**options, "verbose": False})

        def train(self, x, *args, **options):
            if show:
                print(f"ColBERT: k-means, {self.k:,} centroids over {len(x):,} sampled embeddings", file=sys.stderr,
                      flush=True)
            return super().train(x, *args, **options)

    saved = [(module, "tqdm", module.tqdm) for module in (collection_indexer, utils, residual_embeddings)]
    saved += [(checkpoint, "tqdm", checkpoint.tqdm), (faiss, "Kmeans", faiss.Kmeans)]
    for module in (collection_indexer, utils, residual_embeddings):
        module.tqdm = Bars
    checkpoint.tqdm = lambda iterable, *args, **options: iterable
    faiss.Kmeans = Kmeans
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _plain_lines(items) -> Iterator:
    """The items; after each (chunk, offset, passages) batch of the encoding loop, a line on stderr."""
    started = time.monotonic()
    for item in items:
        yield item
        if isinstance(item, tuple) and len(item) == 3:
            chunk, offset, passages = item
            print(f"ColBERT: chunk {chunk} done ({offset + len(passages):,} passages so far, "
                  f"{time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
