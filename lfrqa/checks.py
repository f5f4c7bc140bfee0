"""Checks of a single setting, shared by every part of the package (one wording for each mistake), and
the deprecation path of loose keywords grouped into an option object (:func:`grouped_keywords`).

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

import functools
import inspect
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence

from lfrqa.errors import InvalidInputType, RagQaArenaError

__all__ = ["caller_level", "check_int", "grouped_keywords"]


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


def caller_level(*also: str) -> int:
    """The ``stacklevel`` (for a warning raised by the caller of this function) of the first frame outside this
    module and the files ``also`` (the user's call, past stacked deprecation decorators)."""
    skipped = {__file__, *also}
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in skipped:
        frame, level = frame.f_back, level + 1
    return level


def grouped_keywords(group: str, options: type | None, names: Mapping[str, str] | Sequence[str], *,
                     defaults: Mapping[str, object] | None = None, build: Callable[[dict], object] | None = None
                     ) -> Callable:
    """A decorator that keeps an entry point's old loose keywords working for one release after they were
    grouped into the option object ``options`` given as ``group=``: a call with any of ``names`` (old
    keyword -> the option's field; a sequence: the same names) gets a ``DeprecationWarning`` naming the
    new form, and ``group=options(**those)`` (over ``defaults``, the fields the entry point's own default
    sets) is passed instead; ``build``, when given, makes the new value from the old keywords instead
    (a renamed keyword: ``build=lambda old: old["lfrqa_data_dir"]``). Giving both the old keywords and
    ``group=`` is refused. The entry point's signature (``inspect.signature``) is its new, narrow one.

    >>> import dataclasses, warnings
    >>> @dataclasses.dataclass(frozen=True, kw_only=True)
    ... class Interval:
    ...     n_boot: int = 1000
    >>> @grouped_keywords("intervals", Interval, ["n_boot"])
    ... def rate(x, *, intervals=None):
    ...     return (intervals or Interval()).n_boot
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     rate(1, n_boot=20), seen[0].category.__name__
    (20, 'DeprecationWarning')
    """
    moves = dict(names) if isinstance(names, Mapping) else {name: name for name in names}

    def decorate(function: Callable) -> Callable:
        def translated(kwargs: dict) -> dict:
            old = {key: kwargs.pop(key) for key in list(kwargs) if key in moves}
            if not old:
                return kwargs
            new = f"{group}=..." if options is None or build is not None else \
                f"{group}={options.__name__}({', '.join(f'{moves[key]}=...' for key in old)})"
            if kwargs.get(group) is not None:
                raise RagQaArenaError(f"{function.__qualname__}() got {group}= and the old keyword(s) "
                                      f"{', '.join(old)}: give {new} only")
            warnings.warn(f"{function.__qualname__}({', '.join(f'{key}=...' for key in old)}) is deprecated: pass "
                          f"{new}", DeprecationWarning, stacklevel=caller_level())
            kwargs[group] = build(old) if build is not None else \
                options(**{**(defaults or {}), **{moves[key]: value for key, value in old.items()}})
            return kwargs

        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def wrapper(*args, **kwargs):
                return await function(*args, **translated(kwargs))
        else:
            @functools.wraps(function)
            def wrapper(*args, **kwargs):
                """The entry point, its loose keywords of earlier releases translated (``__wrapped__``)."""
                return function(*args, **translated(kwargs))
        return wrapper

    return decorate
