"""The LFRQA domains and where each one's annotations come from."""

from __future__ import annotations

from lfrqa.errors import RagQaArenaError

DOMAINS: tuple[str, ...] = ("bioasq", "fiqa", "lifestyle", "recreation", "science", "technology", "writing")
#: Domains whose test annotations the benchmark publishes (BioASQ is built from the user's files).
PUBLISHED_DOMAINS: tuple[str, ...] = tuple(d for d in DOMAINS if d != "bioasq")
SPLITS: tuple[str, ...] = ("test", "dev")
NAMES: tuple[str, ...] = DOMAINS + ("all",)


def check_name(name: str) -> str:
    if name not in NAMES:
        raise RagQaArenaError(f"Unknown LFRQA config {name!r}. Available: {', '.join(NAMES)}")
    return name


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise RagQaArenaError(f"Unknown split {split!r}. Available: {', '.join(SPLITS)}")
    return split


def annotation_relpath(domain: str) -> str:
    """Path of a published domain's test annotations inside the benchmark repository."""
    return f"data/annotations_{domain}_with_citation.jsonl"


def dev_relpath(domain: str) -> str:
    """Where a user puts a domain's dev annotations (published format) under the data folder."""
    return f"dev/annotations_{domain}_with_citation.jsonl"
