"""Reading judge replies: the rating in ``<rating>`` tags, strictly (the default) or as the reference
implementation reads it (``parse="reference"``), and what it means for a pair.

The reference parse follows the pinned scripts (``code/compute_correlation.py``, whose per-reply
score is what ``code/report_results.py`` votes and tallies with):

* the first match of ``<rating>.*\\d+.*</rating>`` (greedy, across lines) is taken, or, when
  nothing matches, the whole reply;
* the score is 0 (tie), then 1 if "1" occurs in that text, then 2 if "2" occurs: the highest
  of 0/1/2 present wins ("<rating>12</rating>" is 2, "<rating>3</rating>" a tie);
* so a reply without a ``<rating>`` tag is a tie unless it holds a 1 or a 2 somewhere (the
  script counts it as failed and tied in its own tally, but the score it votes with is that
  digit: "Answer 2 is better." votes 2), and an empty reply is a tie;
* every reply counts: nothing is re-asked.

A request that got no reply at all (errors, refusals) stays a failed judgment in both parses.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence

from lfrqa.errors import RagQaArenaError
from metric_arena.llm import ChatRequest, Completion, RequestResult
from metric_arena.records import Judgment
from metric_arena.stats import judge_outcome, majority_vote

__all__ = [
    "PARSES",
    "REASKS",
    "Ask",
    "check_parse",
    "judge_one",
    "judge_outcome",
    "judgment_record",
    "outcome_of",
    "parse_fields",
    "parse_rating",
    "plain_ask",
    "read_rating",
    "reask_count",
    "reference_rating",
    "strict_outcome",
    "valid_reply",
]

#: How replies are read: ``strict`` (the default) or ``reference`` (as the pinned scripts read them).
PARSES = ("strict", "reference")
#: The re-ask rule, the one place it is written: how many times a reply without a valid rating is asked
#: again, per parse (strict: once; as the reference: never). Every judge path reads it through
#: :func:`reask_count`: :func:`judge_one` (judge_pairs, tournaments, the reward, the callback, the Inspect
#: scorer), the batch and export paths' cache keys.
REASKS = {"strict": 1, "reference": 0}

_RATING_TAG = re.compile(r"<rating>(.*?)</rating>", re.DOTALL)
_RATING_VALUE = re.compile(r"\s*([012])\s*")
_REFERENCE_RATING = re.compile(r"<rating>.*\d+.*</rating>", re.DOTALL)  # the reference's rating_regex


def parse_rating(text: str | None) -> int | None:
    """The rating (0 tie, 1, 2) of a judge reply, or None when the reply has no valid rating.

    >>> parse_rating("<thinking>Answer 2 cites more.</thinking><rating> 1 </rating>")
    1
    >>> parse_rating("I prefer answer 2.") is None           # digits outside the tag never count
    True
    >>> parse_rating("<rating>1</rating> ... <rating>2</rating>") is None
    True
    """
    if not text:
        return None
    values = set()
    for inner in _RATING_TAG.findall(text):
        match = _RATING_VALUE.fullmatch(inner)
        if match is None:
            return None
        values.add(int(match.group(1)))
    return values.pop() if len(values) == 1 else None


def reference_rating(text: str | None) -> int:
    """The rating of a reply read as the reference implementation reads it (see the module notes).

    >>> reference_rating("<rating>1</rating>"), reference_rating("I prefer answer 2."), reference_rating("")
    (1, 2, 0)
    >>> reference_rating("<rating>1</rating> then <rating>0</rating>")   # greedy: "1" and "0" seen
    1
    """
    text = text or ""
    found = _REFERENCE_RATING.findall(text)
    span = found[0] if found else text
    score = 0
    for value in (0, 1, 2):
        if str(value) in span:
            score = value
    return score


def check_parse(parse: str) -> str:
    if parse not in PARSES:
        raise RagQaArenaError(f"Unknown parse {parse!r}. Available: {', '.join(PARSES)}")
    return parse


def read_rating(text: str | None, parse: str, *, valid: bool) -> int | None:
    """The rating of a reply under ``parse``; ``valid``: the reply passed the strict check.
    No reply at all (``text`` None) is no rating under either parse."""
    if parse == "reference":
        return None if text is None else reference_rating(text)
    return parse_rating(text) if valid else None


def reask_count(parse: str) -> int:
    """Re-asks after a reply without a valid rating (:data:`REASKS`): one when strict, none as in the reference."""
    return REASKS[check_parse(parse)]


def strict_outcome(judgments: Sequence[dict], judges: Sequence[str]) -> str | None:
    """The pair's outcome had the same replies been read strictly (no re-ask)."""
    strict = [{**j, "outcome": outcome_of(parse_rating(j.get("raw")), j["a_position"])} for j in judgments]
    return majority_vote([judge_outcome(strict, judge)[0] for judge in judges])


def parse_fields(verdicts: Sequence[dict], parse: str) -> dict:
    """What a run's summary records about the parse: ``parse``, and with ``reference`` how many
    verdicts differ from strict parsing of the same replies (and how many of those strict would fail)."""
    if parse != "reference":
        return {"parse": parse}
    judged = [v for v in verdicts if v.get("judgments")]
    differ = [v for v in judged if v.get("outcome_strict") != v["outcome"]]
    return {"parse": parse, "counting": _REFERENCE_COUNTING, "n_differ_from_strict": len(differ),
            "n_failed_if_strict": sum(v.get("outcome_strict") is None for v in differ)}


#: What a "reference" run's summary says about how it counts (the pinned scripts' conventions).
_REFERENCE_COUNTING = ("reference: replies parsed whole before storage; a failed judge votes 0 (tie); votes that "
                       "all differ are a tie, else the most frequent wins (the first seen on a tie of counts); a "
                       "pair no judge answered is a tie in every rate (n_failed still counts it)")


def valid_reply(completion) -> bool:
    """True when a completion holds exactly one valid rating (what the runner caches as valid)."""
    return parse_rating(completion.text) is not None


def outcome_of(rating: int | None, a_position: int) -> str | None:
    """The evaluated answer's outcome for a rating, given where it was shown (1 or 2)."""
    if rating is None:
        return None
    if rating == 0:
        return "tie"
    return "win" if rating == a_position else "loss"


#: A transport that answers one request: ``ask(request, *, validate, reask)`` re-asks up to ``reask`` times
#: after a reply that fails ``validate`` and returns a :class:`metric_arena.llm.RequestResult`:
#: :meth:`metric_arena.llm.Session.ask` bound to a backend (cache, retries, limits), or :func:`plain_ask`
#: around any ``send``.
Ask = Callable[..., Awaitable[RequestResult]]


def plain_ask(send: Callable[[ChatRequest], Awaitable[str | None]]) -> Ask:
    """An :class:`Ask` on a transport that only sends (an Inspect model, a test double): each attempt is a
    fresh ``send(request)`` returning the reply's text (None: no reply); nothing is cached."""

    async def ask(request: ChatRequest, *, validate: Callable[[Completion], bool], reask: int) -> RequestResult:
        completion, valid, attempts = None, False, 0
        for attempts in range(1, int(reask) + 2):
            text = await send(request)
            completion = None if text is None else Completion(text=text)
            valid = completion is not None and bool(validate(completion))
            if valid:
                break
        return RequestResult(completion, valid, attempts, cached=False,
                             error=None if valid else f"no valid <rating> in the judge's reply after {attempts} attempt(s)")

    return ask


async def judge_one(ask: Ask, request: ChatRequest, a_position: int, *, judge: str, parse: str = "strict") -> Judgment:
    """Judge one prepared request (:func:`~metric_arena.judge.judge_request`) with the configured parse and
    re-asks: ``ask`` it with the validity check (:func:`valid_reply`) and the re-ask rule
    (:func:`reask_count`), read the rating under ``parse`` and return the judgment (the run folder's
    record: ``judge``, ``a_position``, ``rating``, ``outcome``, ``raw``, ``attempts``, ``cached``; ``error``
    when it failed). The one judge loop of the package: judge_pairs, tournaments, the reward, the callback
    and the Inspect scorer all judge through it."""
    result = await ask(request, validate=valid_reply, reask=reask_count(parse))
    return judgment_record(judge, a_position, result, parse)


def judgment_record(judge: str, a_position: int, result: RequestResult, parse: str = "strict") -> Judgment:
    """The judgment record of a request's result (see :func:`judge_one`)."""
    rating = read_rating(result.text, parse, valid=result.valid)
    completion = result.completion
    return {
        "judge": judge,
        "a_position": a_position,
        "rating": rating,
        "outcome": outcome_of(rating, a_position),
        "raw": result.text if result.text is not None else "",
        "attempts": result.attempts,
        "cached": result.cached,
        **({"error": result.error} if result.error and rating is None else {}),
        **({"oversized": completion.original_chars} if completion and completion.original_chars else {}),
        **({"system_folded": True} if completion is not None and completion.system_folded else {}),
        **({"imported": {"file": completion.imported_from, "model": completion.model}}
           if completion is not None and completion.imported_from else {}),
    }
