"""``lfrqa.load``: the LFRQA dataset as a ``datasets.Dataset``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import datasets
from datasets.exceptions import DatasetGenerationError

from lfrqa import _sources
from lfrqa._builder import LFRQA, SPLIT_NAMES, source_files, sources_fingerprint
from lfrqa._domains import check_name, check_split
from lfrqa._records import InvalidRecord
from lfrqa.kernel import atomic_write, sha256_file


def load(
    name: str = "all",
    split: str = "test",
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """Load one LFRQA domain, or ``"all"`` of them, as a ``datasets.Dataset``.

    Sources are verified against the pinned sha256 hashes on every call, before the Arrow
    cache is used, so a cache built from other bytes is never served (a source whose size and
    modification time are those it had when hashed earlier in the process is not read again); the Arrow files are checked
    against the sha256 recorded when they were built, and built again when they differ (an edited
    or damaged cache is never served either).

    >>> import lfrqa
    >>> ds = lfrqa.load("science")  # doctest: +SKIP
    >>> ds.num_rows, ds.column_names[:3]  # doctest: +SKIP
    (1404, ['qid', 'domain', 'question'])
    """
    check_name(name)
    check_split(split)
    local = _sources.resolve_data_dir(data_dir)
    sources = source_files(name, split, local)
    builder = LFRQA(
        config_name=name,
        dataset_name="lfrqa",
        hash=sources_fingerprint(sources),
        cache_dir=None if cache_dir is None else str(cache_dir),
        lfrqa_data_dir=None if local is None else str(local),
        lfrqa_split=split,
    )
    existed = Path(builder.cache_dir).is_dir()
    with _quiet_datasets():
        _prepare(builder, name=name, split=split, announce=not existed)
        if not _arrow_verified(Path(builder.cache_dir), fresh=not existed):
            # An Arrow file changed since it was built (edited, damaged, or built by a version that
            # recorded no digests): build it again from the verified sources.
            shutil.rmtree(builder.cache_dir, ignore_errors=True)
            _prepare(builder, name=name, split=split, announce=True)
            _arrow_verified(Path(builder.cache_dir), fresh=True)
        return builder.as_dataset(split=SPLIT_NAMES[split])


def reference_rows(data_dir: str | os.PathLike | None = None) -> dict[str, dict[str, str]]:
    """LFRQA's references by qid, every available domain: ``{qid: {"question", "answer", "domain"}}``
    (what a judge run takes as its references; see :class:`metric_arena.judge.References`)."""
    columns = load("all", data_dir=data_dir).select_columns(["qid", "question", "answer", "domain"]).to_dict()
    return {qid: {"question": question, "answer": answer, "domain": domain}  # whole columns: 30x faster than rows
            for qid, question, answer, domain in zip(columns["qid"], columns["question"], columns["answer"],
                                                     columns["domain"])}


@contextlib.contextmanager
def _quiet_datasets():
    """No progress bars and only errors from ``datasets`` while LFRQA is built and opened (hundreds of
    "Generating test split" updates, ANSI codes in logs); the caller's settings are restored after."""
    bars = datasets.is_progress_bar_enabled()
    verbosity = datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()


def _prepare(builder, *, name: str, split: str, announce: bool) -> None:
    """Build the Arrow cache if it is missing; a build says so in one line on stderr (a cached load says nothing)."""
    started = time.monotonic()
    try:
        builder.download_and_prepare()
    except DatasetGenerationError as error:
        if isinstance(error.__cause__, InvalidRecord):
            raise error.__cause__ from None  # name the file and line, not datasets' wrapper
        raise
    if announce:
        rows = builder.info.splits[SPLIT_NAMES[split]].num_examples if builder.info.splits else None
        counted = "" if rows is None else f" ({rows:,} questions)"
        print(f"lfrqa: built {name} {split}{counted} from the verified sources in {time.monotonic() - started:.1f} s; "
              f"cached in {builder.cache_dir}", file=sys.stderr, flush=True)


#: Beside the Arrow files of each cached config: their sha256, recorded when they were built.
ARROW_DIGESTS = "lfrqa-arrow.sha256.json"


def _arrow_verified(folder: Path, *, fresh: bool) -> bool:
    """Whether the Arrow files in ``folder`` are those built there. ``fresh``: just built, so their
    digests are recorded now. Returns False for files that differ from their record (or have none)."""
    digests = {path.name: sha256_file(path) for path in sorted(folder.glob("*.arrow"))}
    record = folder / ARROW_DIGESTS
    if fresh:
        with contextlib.suppress(OSError):  # a read-only cache still loads; it is checked next time it can be
            atomic_write(record, json.dumps(digests, indent=1, sort_keys=True) + "\n")
        return True
    try:
        return json.loads(record.read_text(encoding="utf-8")) == digests
    except (OSError, ValueError):
        return False
