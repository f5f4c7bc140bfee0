"""LoTTE collections (lifestyle, recreation, science, technology, writing) -> documents.

The ColBERT authors distribute LoTTE as ``lotte.tar.gz``; each ``lotte/<domain>/<split>/
collection.tsv`` holds one document per line, ``<id>\\t<text>``, ids running 0..N-1 in line
order. RobustQA read it that way (stripping ``\\n``, ``\\r`` and spaces from both ends of a
line, taking an optional third column as the title), and LFRQA's ``gold_doc_ids`` for these
domains are those ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from lfrqa.errors import RagQaArenaError

LOTTE_DOMAINS: tuple[str, ...] = ("lifestyle", "recreation", "science", "technology", "writing")
LOTTE_SPLITS: tuple[str, ...] = ("test", "dev")
LOTTE_URL = "https://downloads.cs.stanford.edu/nlp/data/colbert/colbertv2/lotte.tar.gz"

#: Documents in each distributed test collection; LFRQA's gold ids must fall below these.
LOTTE_TEST_SIZES: dict[str, int] = {
    "lifestyle": 119_461,
    "recreation": 166_975,
    "science": 1_694_164,
    "technology": 638_509,
    "writing": 199_994,
}


def lotte_relpath(domain: str, split: str = "test") -> str:
    """Where a LoTTE collection sits inside the tarball (and under a data folder)."""
    return f"lotte/{domain}/{split}/collection.tsv"


def iter_lotte_documents(lines: Iterable[str | bytes], source: str = "collection.tsv") -> Iterator[dict[str, str]]:
    """Parse a LoTTE ``collection.tsv`` (text or binary lines) into ``{"doc_id", "title", "text"}``.

    >>> list(iter_lotte_documents(["0\\tfirst doc\\n", "1\\tsecond doc \\n"]))
    [{'doc_id': '0', 'title': '', 'text': 'first doc'}, {'doc_id': '1', 'title': '', 'text': 'second doc'}]
    """
    expected = 0
    for number, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise RagQaArenaError(f"{source} line {number}: not UTF-8 ({error})") from error
        line = line.strip("\n\r ")
        if not line:
            continue
        doc_id, tab, rest = line.partition("\t")
        if number == 1 and doc_id == "id":  # a header line, as some copies carry
            continue
        if not tab:
            raise RagQaArenaError(
                f"{source} line {number}: expected '<id>\\t<text>' (LoTTE's collection.tsv layout), got {line[:80]!r}"
            )
        if not doc_id.isdigit() or int(doc_id) != expected:
            raise RagQaArenaError(
                f"{source} line {number}: document id {doc_id!r}, expected {expected} (LoTTE ids run 0..N-1 in "
                "line order); is this an unmodified collection.tsv from lotte.tar.gz?"
            )
        text, _, title = rest.partition("\t")
        title = title.split("\t", 1)[0]
        yield {"doc_id": doc_id, "title": title, "text": text}
        expected += 1
