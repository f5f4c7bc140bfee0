"""The errors every part of the package raises for a user's mistake.

A :class:`RagQaArenaError` always says what was wrong and how to fix it; the CLI prints it as
one line (exit 2). Any other exception is a bug and keeps its traceback.

>>> try:
...     raise RagQaArenaError("Unknown domain 'fiqa2'. Available: fiqa, lifestyle")
... except ValueError as error:      # a RagQaArenaError is a ValueError too
...     print(error)
Unknown domain 'fiqa2'. Available: fiqa, lifestyle
"""

from __future__ import annotations

__all__ = ["InvalidInputType", "MissingDependency", "RagQaArenaError"]


class RagQaArenaError(ValueError):
    """A bad value, file or setting given by the user; the message names it and the fix."""


class InvalidInputType(RagQaArenaError, TypeError):
    """A value of the wrong type (also a ``TypeError``)."""


class MissingDependency(RagQaArenaError, ImportError):
    """An optional package is not installed; the message gives the ``pip install`` line."""

