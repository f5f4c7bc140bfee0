"""Counts of the published data's quirks and of how the builder handled them."""

from __future__ import annotations

import os
from collections import Counter

from lfrqa import _sources
from lfrqa._builder import iter_raw, source_files
from lfrqa._domains import check_name, check_split
from lfrqa._records import QUIRKS, normalize_record


def audit(name: str = "all", split: str = "test", data_dir: str | os.PathLike | None = None) -> dict[str, dict[str, int]]:
    """Per domain: ``rows`` and the number of rows with each quirk of :data:`lfrqa._records.QUIRKS`.

    >>> audit("science")["science"]["rows"]  # doctest: +SKIP
    1404
    """
    check_name(name)
    check_split(split)
    report: dict[str, dict[str, int]] = {}
    for domain, kind, paths in source_files(name, split, _sources.resolve_data_dir(data_dir)):
        counts: Counter = Counter({quirk: 0 for quirk in QUIRKS})
        for source, line, raw in iter_raw(kind, paths):
            normalized = normalize_record(raw, domain, line=line, source=source)
            counts["rows"] += 1
            counts.update(normalized.quirks)
        report[domain] = {"rows": counts.pop("rows"), **dict(counts)}
    return report
