"""``lfrqa.load``: the LFRQA dataset as a ``datasets.Dataset``."""

from __future__ import annotations

import os

import datasets
from datasets.exceptions import DatasetGenerationError

from lfrqa import _sources
from lfrqa._builder import LFRQA, SPLIT_NAMES, source_files, sources_fingerprint
from lfrqa._domains import check_name, check_split
from lfrqa._records import InvalidRecord


def load(
    name: str = "all",
    split: str = "test",
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> datasets.Dataset:
    """Load one LFRQA domain, or ``"all"`` of them, as a ``datasets.Dataset``.

    Sources are verified against the pinned sha256 hashes on every call, before the Arrow
    cache is used, so a cache built from other bytes is never served.

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
    try:
        builder.download_and_prepare()
    except DatasetGenerationError as error:
        if isinstance(error.__cause__, InvalidRecord):
            raise error.__cause__ from None  # name the file and line, not datasets' wrapper
        raise
    return builder.as_dataset(split=SPLIT_NAMES[split])
