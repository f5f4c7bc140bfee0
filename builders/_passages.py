"""Documents -> passages, with RobustQA's rule.

RobustQA (Han et al., ACL Findings 2023), whose corpora LFRQA's answers are written over, cuts
each document into consecutive chunks of at most 100 words and names chunk ``k`` (from 0)
``"<doc_id>-<k>"``. Its words are the pieces of ``text.split(" ")`` - a split on single spaces,
not on any whitespace - joined back with single spaces, so joining a document's passages with
``" "`` gives back its text exactly, and a run of several spaces or a newline counts as RobustQA
counted it. We keep that rule so passage ids and boundaries are the paper's.

One decision of ours: a chunk with no visible text (an empty document, or 100 empty pieces from
a run of spaces) is not emitted. RobustQA wrote it as an empty passage; nothing can be retrieved
from it, and every other passage keeps the id RobustQA gave it (``k`` counts skipped chunks too).
from lfrqa.errors import RagQaArenaError
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from lfrqa.errors import RagQaArenaError

#: RobustQA's passage length, in words.
WORDS_PER_PASSAGE = 100


def split_passages(
    doc_id: str, text: str, title: str = "", words_per_passage: int = WORDS_PER_PASSAGE
) -> list[dict[str, str]]:
    """The passages of one document: ``{"pid", "doc_id", "title", "text"}`` in document order.

    >>> [p["pid"] for p in split_passages("7", " ".join(["w"] * 250))]
    ['7-0', '7-1', '7-2']
    >>> split_passages("7", "a  b", words_per_passage=2)[0]["text"]  # a double space is an empty word
    'a '
    """
    if words_per_passage < 1:
        raise RagQaArenaError(f"words_per_passage must be at least 1, got {words_per_passage!r}")
    doc_id = str(doc_id)
    words = text.split(" ")
    passages = []
    for k, start in enumerate(range(0, len(words), words_per_passage)):
        chunk = " ".join(words[start : start + words_per_passage])
        if chunk.strip():
            passages.append({"pid": f"{doc_id}-{k}", "doc_id": doc_id, "title": title, "text": chunk})
    return passages


def iter_passages(
    documents: Iterable[Mapping[str, str]], words_per_passage: int = WORDS_PER_PASSAGE
) -> Iterator[dict[str, str]]:
    """Stream the passages of documents given as ``{"doc_id", "title", "text"}`` mappings."""
    for document in documents:
        yield from split_passages(
            document["doc_id"], document["text"], document.get("title") or "", words_per_passage
        )


def doc_id_of(pid: str) -> str:
    """The document a passage comes from: its id up to the last ``-``.

    >>> doc_id_of("102494-3")
    '102494'
    """
    doc_id, sep, k = str(pid).rpartition("-")
    if not sep or not doc_id or not k.isdigit():
        raise RagQaArenaError(f"Passage id {pid!r} is not of the form '<doc_id>-<k>' (e.g. '102494-0')")
    return doc_id
