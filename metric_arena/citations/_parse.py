"""Reading an answer's citations: its sentences, the markers each carries, and what those name.

The parsing rule (documented in the README):

- **Sentences.** Each line of the answer is split after ``.``, ``!`` or ``?`` (with any closing quotes or
  brackets) where whitespace follows, except after a few abbreviations (``e.g.``, ``i.e.``, ``etc.``,
  ``vs.``, ``Dr.``...) and a lone initial or number (``J. Smith``, ``1. first``). Citation markers right after
  a sentence end ("... is B. [1]") belong to that sentence, as they do in LFRQA's own answers.
- **Markers.** ``[k]``, ``[k, m, ...]`` (spaces allowed) and runs such as ``[1][2]``; the numbers are passage
  numbers from 1 in the order the answer's prompt showed them. Each number counts once per sentence, in the
  order first written. Other brackets (``[a]``, ``[ ]``) are text.
- **Explicit citations.** A prediction row with ``sentences: [{"text", "citations"}]`` is read as given instead
  (``citations`` holding passage numbers or pids; a string of digits is a passage number, as Parquet stores
  them); the answer's text is not parsed then.
- **Resolution.** Passage k is the k-th pid of the prediction's ``passages`` (what ``generate`` writes), else
  of the retrieved row's first ``n_passages`` passages; its document is the retrieved passage's ``doc_id``, else
  the pid without its ``-<k>`` suffix. A marker that names no passage the answer was given (``[0]``, ``[7]`` of
  five, a pid not among them) is *invalid*: kept in the sentence's ``invalid`` list and counted, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lfrqa import CITATION_GROUP
from lfrqa.errors import RagQaArenaError

__all__ = ["ParsedSentence", "Passages", "cited_sentences", "parse_sentences", "resolved", "strip_markers"]

_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "al.", "dr.", "mr.", "mrs.", "ms.", "prof.", "st.", "no.",
                  "fig.", "approx.", "u.s.", "inc.", "ltd.", "jr.", "sr."}
# A sentence end: terminal punctuation (and closing quotes/brackets), then whitespace.
_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)")
_MARKERS_AHEAD = re.compile(r"(?:\s*" + CITATION_GROUP.pattern + r")+[.,;:!?]*")
_MARKER_WITH_SPACE = re.compile(r"[ \t]*" + CITATION_GROUP.pattern)
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class ParsedSentence:
    """One sentence: its text without markers and the markers it carries (numbers or pids, each once)."""

    text: str
    markers: tuple[int | str, ...]


def strip_markers(text: str) -> str:
    """``text`` without citation markers (and the spaces before them).

    >>> strip_markers("Paris is in France [1, 2]. [3]")
    'Paris is in France.'
    """
    return _SPACE_BEFORE_PUNCT.sub(r"\1", _MARKER_WITH_SPACE.sub("", text)).strip()


def _markers(text: str) -> tuple[int, ...]:
    seen: list[int] = []
    for match in CITATION_GROUP.finditer(text):
        for number in match.group(1).split(","):
            if int(number) not in seen:
                seen.append(int(number))
    return tuple(seen)


def _is_break(line: str, end: int, start: int) -> bool:
    """Whether the punctuation ending at ``end`` ends a sentence (not an abbreviation or a lone initial)."""
    word = line[start:end].rsplit(None, 1)[-1].lower() if line[start:end].split() else ""
    word = word.lstrip("(\"'")
    if word in _ABBREVIATIONS:
        return False
    core = word.rstrip(".")
    return not (word.endswith(".") and (len(core) == 1 or core.isdigit()))


def _split_line(line: str) -> list[str]:
    pieces, start, pos = [], 0, 0
    while True:
        match = _END.search(line, pos)
        if match is None:
            break
        end = match.end()
        ahead = _MARKERS_AHEAD.match(line, end)
        if ahead:
            end = ahead.end()  # "... B. [1]" keeps its markers
        if _is_break(line, match.end(), start) or ahead:
            pieces.append(line[start:end])
            start = end
        pos = max(end, match.end())
    pieces.append(line[start:])
    return [p.strip() for p in pieces if p.strip()]


def parse_sentences(answer: str) -> list[ParsedSentence]:
    """The sentences of ``answer`` with their markers (see the module's rule).

    >>> [(s.text, s.markers) for s in parse_sentences("A is B [1][2]. C is D. [3] E, e.g. F [1, 3].")]
    [('A is B.', (1, 2)), ('C is D.', (3,)), ('E, e.g. F.', (1, 3))]
    """
    sentences: list[ParsedSentence] = []
    for line in answer.splitlines():
        for piece in _split_line(line):
            text, markers = strip_markers(piece), _markers(piece)
            if not re.search(r"\w", text):  # a bare marker line ("[2]"): the sentence before it cites it
                if sentences and markers:
                    last = sentences[-1]
                    sentences[-1] = ParsedSentence(last.text, last.markers + tuple(m for m in markers
                                                                                 if m not in last.markers))
                continue
            sentences.append(ParsedSentence(text, markers))
    return sentences


@dataclass(frozen=True)
class Passages:
    """The passages one answer was given, in prompt order: ``pids``, and ``doc_ids``/``texts`` by pid (from the
    retrieved row; a pid missing there has no text)."""

    pids: tuple[str, ...]
    doc_ids: Mapping[str, str]
    texts: Mapping[str, str]

    @classmethod
    def of(cls, prediction: Mapping, retrieved: Mapping | None, n_passages: int) -> Passages:
        found = list(retrieved["passages"]) if retrieved is not None else []
        shown = prediction.get("passages")
        pids = tuple(str(p) for p in shown) if isinstance(shown, list) else tuple(p["pid"] for p in found[:n_passages])
        doc_ids = {p["pid"]: str(p["doc_id"]) for p in found if p.get("doc_id") is not None}
        return cls(pids, doc_ids, {p["pid"]: p["text"] for p in found})

    def resolve(self, marker: int | str) -> str | None:
        """The pid ``marker`` names (a passage number from 1, or a pid), or None when it names none given."""
        if isinstance(marker, int):
            return self.pids[marker - 1] if 1 <= marker <= len(self.pids) else None
        return marker if marker in self.pids else None

    def doc_id(self, pid: str) -> str:
        return self.doc_ids.get(pid) or pid.rsplit("-", 1)[0]


def _explicit(sentences, where: str) -> list[ParsedSentence]:
    if not isinstance(sentences, list):
        raise RagQaArenaError(f"{where}: sentences must be a list of {{'text', 'citations'}} objects")
    parsed = []
    for k, item in enumerate(sentences):
        cites = item.get("citations") if isinstance(item, Mapping) else None
        if not isinstance(item, Mapping) or not isinstance(item.get("text"), str) or not isinstance(cites, list) or any(
                isinstance(c, bool) or not isinstance(c, (int, str)) for c in cites):
            raise RagQaArenaError(f"{where}: sentences[{k}] must be {{'text': str, 'citations': [passage numbers or "
                                  f"pids]}}, got {item!r:.80}")
        cites = [int(c) if isinstance(c, str) and c.strip().isdigit() else c for c in cites]  # "3" (Parquet): passage 3
        parsed.append(ParsedSentence(item["text"].strip(), tuple(dict.fromkeys(cites))))
    return parsed


def cited_sentences(prediction: Mapping, where: str = "prediction") -> list[ParsedSentence]:
    """A prediction's sentences: its explicit ``sentences`` field when it has one, else its answer parsed."""
    if prediction.get("sentences") is not None:
        return _explicit(prediction["sentences"], where)
    return parse_sentences(prediction.get("answer") or "")


def resolved(sentences: Sequence[ParsedSentence], passages: Passages) -> list[dict]:
    """Each sentence as a :class:`~metric_arena.records.ScoredSentence` without verdicts: markers, pids, docs, invalid."""
    rows = []
    for sentence in sentences:
        pids, invalid = [], []
        for marker in sentence.markers:
            pid = passages.resolve(marker)
            (pids if pid is not None else invalid).append(pid if pid is not None else marker)
        pids = list(dict.fromkeys(pids))
        docs = list(dict.fromkeys(passages.doc_id(pid) for pid in pids))
        rows.append({"text": sentence.text, "markers": list(sentence.markers), "pids": pids, "docs": docs,
                     "invalid": invalid})
    return rows
