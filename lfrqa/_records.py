"""One LFRQA record: validation and the deliberate handling of the published data's quirks.

Every raw annotation goes through :func:`normalize_record`, which returns the dataset row and
the list of quirks it met (counted by the builder and reported in ``dataset_card.md``):

- ``int_qid`` / ``int_gold_doc_id``: ids are published as numbers in some domains; rows keep
  them as strings, so every id is a string.
- ``answer_missing``: the plain ``answer`` is empty; it is rebuilt from the cited answer.
- ``answer_disagrees``: the plain ``answer`` is not the cited answer without its markers
  (the publisher's marker removal also deleted bracketed text such as IPA symbols); it is
  rebuilt from the cited answer. Answers that agree, up to whitespace, are kept verbatim so
  the judge sees the same bytes as the reference implementation.
- ``citation_numbers_differ``: ``citation_numbers`` disagrees with the in-text markers. The
  in-text markers are the source of truth: wherever the two line up, ``citation_numbers``
  holds a subset of the markers (it keeps only the first index of a group like ``[1, 2]``)
  and it sometimes misses sentences.
- ``citation_out_of_range``: a marker points outside ``1..len(gold_doc_ids)`` (``[0]``, or
  past the end of the list). The document it meant is unknown, so the index is dropped from
  ``citations``; guessing a neighbour would point at the wrong document.
- ``uncited_sentence``: text after the last marker that is more than punctuation; it becomes
  a sentence with no citations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lfrqa.errors import RagQaArenaError

# A citation group: "[3]", "[ 1]" or "[1, 2, 4]". Other brackets ("[ŋ]", "[ ]") are text.
CITATION_GROUP = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_MARKER_WITH_SPACES = re.compile(r"[ \t]*" + CITATION_GROUP.pattern + r"[ \t]*")
_TRAILING_PUNCT = re.compile(r"^[\s.,;:!?\"')\]]*$")

QUIRKS = (
    "int_qid",
    "int_gold_doc_id",
    "answer_missing",
    "answer_disagrees",
    "citation_numbers_differ",
    "citation_out_of_range",
    "uncited_sentence",
)

REQUIRED_FIELDS = ("qid", "question", "faithful_answer_w_citation", "gold_doc_ids")


class InvalidRecord(RagQaArenaError):
    """A raw annotation cannot become a valid LFRQA row."""


@dataclass
class Normalized:
    row: dict
    quirks: list[str] = field(default_factory=list)


def split_cited_sentences(cited: str) -> list[tuple[str, list[int]]]:
    """Split a cited answer into (sentence text with its markers, cited indices) pairs.

    A sentence is the text up to and including a citation group, plus any punctuation that
    directly follows the group ("... entails [2]." keeps its full stop).

    >>> split_cited_sentences("A is B. [1] C is D [1, 2].")
    [('A is B. [1]', [1]), ('C is D [1, 2].', [1, 2])]
    """
    sentences: list[tuple[str, list[int]]] = []
    start = 0
    for match in CITATION_GROUP.finditer(cited):
        end = match.end()
        # Absorb punctuation glued to the marker (not whitespace or newlines).
        while end < len(cited) and cited[end] in ".,;:!?\"')":
            end += 1
        text = cited[start:end].strip()
        indices = [int(x) for x in match.group(1).split(",")]
        if text == match.group(0) and sentences:
            # A bare marker right after another one ("... [1] [2]"): same sentence.
            prev_text, prev_indices = sentences[-1]
            sentences[-1] = (f"{prev_text} {text}", prev_indices + indices)
        else:
            sentences.append((text, indices))
        start = end
    tail = cited[start:]
    if tail.strip():
        if sentences and _TRAILING_PUNCT.match(tail):
            prev_text, prev_indices = sentences[-1]
            sentences[-1] = (prev_text + tail.rstrip(), prev_indices)
        else:
            sentences.append((tail.strip(), []))
    return sentences


def strip_citations(cited: str) -> str:
    """The cited answer without its citation markers, one sentence per line as published.

    Only the spaces around a removed marker change: a marker and the spaces before and after it
    go, leaving one space between words ("A [1] B" -> "A B") and none before punctuation or at
    the end of a line ("D [1]." -> "D."). Everything else is kept as written, spaces before
    punctuation in code (``isset($x) ? $x : 0``) and double spaces included; each line is
    stripped and empty lines dropped.

    >>> strip_citations("A is B. [1] \\nC is [ŋ] D [1, 2].")
    'A is B.\\nC is [ŋ] D.'
    >>> strip_citations("Use `a ? b : c` [2]; see [3] the  manual.")
    'Use `a ? b : c`; see the  manual.'
    """
    lines = []
    for line in cited.split("\n"):
        plain = _MARKER_WITH_SPACES.sub(lambda m: _marker_gap(line, m), line).strip()
        if plain:
            lines.append(plain)
    return "\n".join(lines)


def _marker_gap(line: str, match: re.Match) -> str:
    """What replaces a marker and its surrounding spaces: nothing before punctuation, at either end
    of the line or between two glued words, else one space."""
    after = line[match.end() : match.end() + 1]
    if match.start() == 0 or after == "" or after in ".,;:!?":
        return ""
    return " " if match.group(0) != match.group(0).strip() else ""


def _same_text(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def normalize_record(raw: dict, domain: str, *, line: int | None = None, source: str = "") -> Normalized:
    """Validate one raw annotation and turn it into a dataset row (see the module docstring)."""
    where = f"{source} line {line}" if line is not None else source or "record"
    missing = [name for name in REQUIRED_FIELDS if name not in raw]
    if missing:
        raise InvalidRecord(f"{where}: missing field(s) {', '.join(missing)}; fields found: {', '.join(sorted(raw))}")
    quirks: list[str] = []

    qid = raw["qid"]
    if isinstance(qid, bool) or not isinstance(qid, (int, str)) or str(qid).strip() == "":
        raise InvalidRecord(f"{where}: qid {qid!r} is not a non-empty string or integer")
    if isinstance(qid, int):
        quirks.append("int_qid")
    qid = str(qid).strip()

    question = raw["question"]
    if not isinstance(question, str) or not question.strip():
        raise InvalidRecord(f"{where} (qid {qid}): question {question!r} is empty or not a string")

    gold = raw["gold_doc_ids"]
    if not isinstance(gold, list) or not gold:
        raise InvalidRecord(f"{where} (qid {qid}): gold_doc_ids {gold!r} must be a non-empty list")
    if any(isinstance(g, int) and not isinstance(g, bool) for g in gold):
        quirks.append("int_gold_doc_id")
    if any(isinstance(g, bool) or not isinstance(g, (int, str)) or str(g).strip() == "" for g in gold):
        raise InvalidRecord(f"{where} (qid {qid}): gold_doc_ids {gold!r} must hold integers or non-empty strings")
    gold_ids = [str(g).strip() for g in gold]

    cited = raw["faithful_answer_w_citation"]
    if not isinstance(cited, str) or not cited.strip():
        raise InvalidRecord(f"{where} (qid {qid}): faithful_answer_w_citation is empty; the row has no reference answer")

    sentences = split_cited_sentences(cited)
    citations: list[list[int]] = []
    out_of_range = False
    for _, indices in sentences:
        kept = []
        for index in indices:
            if 1 <= index <= len(gold_ids):
                if index not in kept:
                    kept.append(index)
            else:
                out_of_range = True
        citations.append(kept)
    if out_of_range:
        quirks.append("citation_out_of_range")
    if any(not indices for _, indices in sentences):
        quirks.append("uncited_sentence")

    published_numbers = raw.get("citation_numbers")
    marker_numbers = [indices for _, indices in sentences if indices]
    if published_numbers is not None and published_numbers != marker_numbers:
        quirks.append("citation_numbers_differ")

    answer = raw.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        quirks.append("answer_missing")
        answer = strip_citations(cited)
    elif not _same_text(answer, CITATION_GROUP.sub("", cited)):
        quirks.append("answer_disagrees")
        answer = strip_citations(cited)
    if not answer.strip():
        raise InvalidRecord(f"{where} (qid {qid}): the answer is empty once citations are removed")

    row = {
        "qid": qid,
        "domain": domain,
        "question": question,
        "answer": answer,
        "answer_with_citations": cited,
        "citations": citations,
        "gold_doc_ids": gold_ids,
    }
    return Normalized(row=row, quirks=quirks)
