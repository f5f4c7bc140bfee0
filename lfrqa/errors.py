"""The errors the packages raise on purpose: one tree, rooted here, whatever module defines the branch.

A :class:`RagQaArenaError` always says what was wrong and how to fix it; the CLI prints it as one line
(exit 2). A :class:`~metric_arena.llm.BackendError` is a server's failure, counted per kind. Any other
exception is a bug and keeps its traceback. ``except ArenaError`` catches every one of them::

    ArenaError                          everything raised on purpose             lfrqa.errors
    ├── RagQaArenaError (ValueError)    a user's mistake: the value and the fix  lfrqa.errors
    │   ├── InvalidInputType (TypeError)      a value of the wrong type          lfrqa.errors
    │   ├── MissingDependency (ImportError)   an optional package to install     lfrqa.errors
    │   ├── ChecksumError                     pinned bytes differ                lfrqa
    │   ├── InvalidRecord                     an annotation that is no LFRQA row lfrqa
    │   ├── RunLocked                         an output another process holds    lfrqa.kernel
    │   ├── HubRefusedError                   the Hub refused an upload          builders
    │   ├── SecretFoundError                  a credential in an upload          builders
    │   ├── IndexMismatch                     an index for another corpus        retrieval
    │   ├── ExtensionBuildBusy                a C++ build held by another process  retrieval
    │   ├── CacheCorrupt                      a damaged judgment cache           metric_arena.llm
    │   ├── ComparisonRefused                 two runs the gate cannot compare   metric_arena.report
    │   ├── UnknownMetric                     no registered metric of that name  metric_arena.report.sections
    │   ├── TaskArgumentError                 a bad Inspect task argument        rag_qa_arena.inspect_tasks
    │   └── NoRatingError                     an Inspect run that rated nothing  rag_qa_arena.inspect_tasks
    ├── BackendError                    a backend failed (``kind``: its counter) metric_arena.llm
    │   ├── AuthenticationFailed              the key was refused                metric_arena.llm
    │   ├── ModelNotFound                     the server lacks the model         metric_arena.llm
    │   ├── ServerUnreachable                 no connection                      metric_arena.llm
    │   ├── TransientBackendError             worth retrying (``retry_after``)   metric_arena.llm
    │   └── BadReply                          a reply that is no completion      metric_arena.llm
    └── BatchNotReady (RuntimeError)    Batch API jobs still running             metric_arena.llm.batch

Each name stays importable where it is defined (and where it was exported before); tests/test_errors.py
checks that every exception class of the packages is in this drawing and under :class:`ArenaError`.

>>> try:
...     raise RagQaArenaError("Unknown domain 'fiqa2'. Available: fiqa, lifestyle")
... except ValueError as error:      # a RagQaArenaError is a ValueError too
...     print(error)
Unknown domain 'fiqa2'. Available: fiqa, lifestyle
"""

from __future__ import annotations

__all__ = ["ArenaError", "InvalidInputType", "MissingDependency", "RagQaArenaError"]


class ArenaError(Exception):
    """The root of every error the packages raise on purpose (the tree is drawn in this module's notes)."""


class RagQaArenaError(ArenaError, ValueError):
    """A bad value, file or setting given by the user; the message names it and the fix."""


class InvalidInputType(RagQaArenaError, TypeError):
    """A value of the wrong type (also a ``TypeError``)."""


class MissingDependency(RagQaArenaError, ImportError):
    """An optional package is not installed; the message gives the ``pip install`` line."""
