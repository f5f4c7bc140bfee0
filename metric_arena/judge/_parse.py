"""Reading judge replies: the rating in ``<rating>`` tags, strictly, and what it means for a pair."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["judge_outcome", "outcome_of", "parse_rating", "valid_reply"]

_RATING_TAG = re.compile(r"<rating>(.*?)</rating>", re.DOTALL)
_RATING_VALUE = re.compile(r"\s*([012])\s*")


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


def judge_outcome(judgments: Sequence[dict], judge: str) -> tuple[str | None, bool]:
    """One judge's outcome for a pair from its judgments (one per order shown), and whether the
    orders disagreed. A failed judgment fails the judge; two orders that disagree are a tie."""
    outcomes = [j["outcome"] for j in judgments if j["judge"] == judge]
    if not outcomes or any(o is None for o in outcomes):
        return None, False
    if len(set(outcomes)) == 1:
        return outcomes[0], False
    return "tie", True
