"""Checks of a single setting, shared by every part of the package (one wording for each mistake).

>>> check_int("k", 5, minimum=1)
5
>>> check_int("k", 0, minimum=1)
Traceback (most recent call last):
...
lfrqa.RagQaArenaError: k must be a positive integer, got 0
>>> check_int("seed", True)
Traceback (most recent call last):
...
lfrqa.errors.InvalidInputType: seed must be an integer, got True
"""

from __future__ import annotations

from lfrqa.errors import InvalidInputType, RagQaArenaError

__all__ = ["check_int"]


def check_int(name: str, value, *, minimum: int | None = None, optional: bool = False, hint: str = "") -> int | None:
    """``value`` when it is an ``int`` (never a ``bool``) of at least ``minimum``; else a one-line error
    naming ``name``, what it must be (``hint``, e.g. ``"the number of pairs to judge"``, in brackets)
    and the value given. ``optional``: None is accepted (and returned), and the error says so.

    A wrong type raises :class:`~lfrqa.errors.InvalidInputType`, a value out of range
    :class:`~lfrqa.errors.RagQaArenaError` (both ``ValueError``).
    """
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputType(_message(name, value, minimum, optional, hint))
    if minimum is not None and value < minimum:
        raise RagQaArenaError(_message(name, value, minimum, optional, hint))
    return value


def _message(name: str, value, minimum: int | None, optional: bool, hint: str) -> str:
    kind = {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
        minimum, f"an integer of at least {minimum}")
    return f"{name} must be {kind}{f' ({hint})' if hint else ''}{', or None' if optional else ''}, got {value!r}"
