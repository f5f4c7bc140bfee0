"""LFRQA: the long-form RAG QA dataset of the RAG-QA Arena benchmark.

>>> import lfrqa
>>> lfrqa.DOMAINS
('bioasq', 'fiqa', 'lifestyle', 'recreation', 'science', 'technology', 'writing')
>>> ds = lfrqa.load("fiqa", split="test")  # doctest: +SKIP

Importing ``lfrqa`` is light: :func:`load`, :func:`audit` and :func:`dataset_stats` import
``datasets`` on first use. The RobustQA passage corpora are loaded by ``builders.load_corpus``.
"""

from lfrqa.exports import export_names
from lfrqa._domains import DOMAINS, PUBLISHED_DOMAINS, SPLITS
from lfrqa._records import CITATION_GROUP, InvalidRecord, split_cited_sentences
from lfrqa._sources import PINNED_COMMIT, ChecksumError
from lfrqa._sources import read_text as read_pinned_text
from lfrqa.errors import RagQaArenaError

__all__ = [
    "CITATION_GROUP",
    "DOMAINS",
    "PINNED_COMMIT",
    "PUBLISHED_DOMAINS",
    "SPLITS",
    "ChecksumError",
    "InvalidRecord",
    "RagQaArenaError",
    "audit",
    "dataset_stats",
    "load",
    "read_pinned_text",
    "reference_rows",
    "split_cited_sentences",
]

export_names(globals())

_LAZY = {"load": "lfrqa._load", "reference_rows": "lfrqa._load", "audit": "lfrqa._audit", "dataset_stats": "lfrqa._stats"}


def __getattr__(name: str):
    # These stand on `datasets` (and pyarrow, pandas): imported when first asked for.
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        value.__module__ = __name__  # its public path, as export_names gives the others
        return value
    raise AttributeError(f"module 'lfrqa' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
