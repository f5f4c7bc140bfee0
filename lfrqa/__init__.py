"""LFRQA: the long-form RAG QA dataset of the RAG-QA Arena benchmark.

>>> import lfrqa
>>> lfrqa.DOMAINS
('bioasq', 'fiqa', 'lifestyle', 'recreation', 'science', 'technology', 'writing')
>>> ds = lfrqa.load("fiqa", split="test")  # doctest: +SKIP
"""

from lfrqa._audit import audit
from lfrqa._domains import DOMAINS, PUBLISHED_DOMAINS, SPLITS
from lfrqa._load import load
from lfrqa._records import InvalidRecord
from lfrqa._sources import PINNED_COMMIT, ChecksumError
from lfrqa._stats import dataset_stats

__all__ = [
    "DOMAINS",
    "PUBLISHED_DOMAINS",
    "SPLITS",
    "PINNED_COMMIT",
    "ChecksumError",
    "InvalidRecord",
    "audit",
    "dataset_stats",
    "load",
    "load_corpus",
]


def __getattr__(name: str):
    # load_corpus stands on builders/, which itself reads LFRQA: import it on first use.
    if name == "load_corpus":
        from lfrqa._corpus import load_corpus

        return load_corpus
    raise AttributeError(f"module 'lfrqa' has no attribute {name!r}")
