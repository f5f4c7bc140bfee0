"""Flags and failure handling shared by the commands that call an LLM (``judge`` and ``generate``).

The flags: where the OpenAI-compatible server is and its key, requests in flight, the request
timeout, the completion cache (one SQLite cache serves both commands), the benchmark's pinned
files, ``--dry-run`` and ``--no-progress``. The failures: a rejected key or unknown model stops
the run with exit 3, and so does a server that cannot be reached (nothing got through within
the fail-fast window) or a run in which every item failed; an output that cannot be written (full
disk, read-only folder) exits 2. Each prints one line saying why, and what is kept. :mod:`rag_qa_arena._scale_options` holds the scale flags.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable
from typing import TypeVar

from lfrqa.errors import RagQaArenaError

__all__ = [
    "FATAL_EXIT",
    "WRITE_EXIT",
    "add_backend_flags",
    "add_run_flags",
    "all_failed_message",
    "api_key",
    "cannot_write_message",
    "check_backend_args",
    "run_reporting_failures",
]

#: Exit status when the server rejects the key, does not serve the model or cannot be reached (the
#: run stops at once), and when a run ends with every item failed.
FATAL_EXIT = 3
#: Exit status when the output cannot be written (bad input exits 2 as well).
WRITE_EXIT = 2

_WRITE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT, errno.EFBIG, errno.EIO,
                 errno.ENOTDIR, errno.EEXIST, errno.EISDIR}

T = TypeVar("T")


def add_backend_flags(parser: argparse.ArgumentParser, kind: str) -> None:
    """``--base-url``, ``--api-key``, ``--max-concurrency`` and ``--timeout``; ``kind`` names what
    the command calls in the help ("judges", "models")."""
    parser.add_argument("--base-url", metavar="URL",
                        help=f"OpenAI-compatible server for openai {kind}, e.g. http://localhost:8000/v1 "
                             "(default: $OPENAI_BASE_URL, else OpenAI)")
    parser.add_argument("--api-key", metavar="KEY",
                        help=f"API key for openai {kind} (default: $OPENAI_API_KEY; prefer the environment "
                             "variable: command lines end up in shell history). Never written anywhere.")
    parser.add_argument("--max-concurrency", type=int, default=16, metavar="N",
                        help="requests in flight at once (default: 16)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help=f"the longest one attempt at a request to openai {kind} may take, start to last "
                             "byte (default: 120)")


def add_run_flags(parser: argparse.ArgumentParser, *, cache: str, cost: str) -> None:
    """``--cache-dir``, ``--no-cache``, ``--data-dir``, ``--dry-run`` and ``--no-progress``;
    ``cache`` names the cache in the help ("judgment cache"), ``cost`` what a dry run prints."""
    parser.add_argument("--cache-dir", metavar="DIR",
                        help=f"{cache} folder, shared by `judge` and `generate` (default: $RAG_QA_ARENA_CACHE, "
                             "else ~/.cache/rag_qa_arena)")
    parser.add_argument("--no-cache", action="store_true", help=f"neither read nor write the {cache}")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="local copy of the benchmark's pinned files (default: $LFRQA_DATA_DIR, else download)")
    parser.add_argument("--dry-run", action="store_true",
                        help=f"print requests, tokens and {cost} (ending with 'estimated_cost_usd: N'), send nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def check_backend_args(args: argparse.Namespace) -> None:
    """Reject a ``--max-concurrency`` below 1 or a ``--timeout`` that is not positive."""
    if args.max_concurrency < 1:
        raise RagQaArenaError(f"--max-concurrency must be >= 1, got {args.max_concurrency}")
    if args.timeout <= 0:
        raise RagQaArenaError(f"--timeout must be > 0 seconds, got {args.timeout:g}")


def api_key(args: argparse.Namespace) -> str | None:
    """``--api-key``, else ``$OPENAI_API_KEY``."""
    return args.api_key or os.environ.get("OPENAI_API_KEY")


def cannot_write_message(error: OSError, where: str | None) -> str | None:
    """``"cannot write to DIR: <reason> (disk full or read-only?)"`` for a failed write (full
    disk, read-only or forbidden folder, a file where a folder should be), else None."""
    if error.errno is None:
        return str(error) if isinstance(error, PermissionError) else None
    if error.errno not in _WRITE_ERRNOS:
        return None
    place = error.filename or where or "the output folder"
    if error.errno in (errno.EEXIST, errno.ENOTDIR):
        return f"cannot write to {place}: a file is where a folder should be (remove it or choose another path)"
    if error.errno == errno.EISDIR:
        return f"cannot write to {place}: it is a folder, not a file (give a file path or remove the folder)"
    return f"cannot write to {place}: {os.strerror(error.errno)} (disk full or read-only?)"


def all_failed_message(result: dict, base_url: str | None, *, items: str, where: str) -> str | None:
    """The error line for a run that ended with every item failed (``items``: "pairs", "questions";
    ``where``: the file whose lines say why), else None. Connection errors and timeouts only: the
    server was never reached, so the line names ``--base-url``."""
    n = result.get("n") or 0
    if not n or result.get("n_failed") != n:
        return None
    errors = result.get("errors") or {}
    counts = ", ".join(f"{k}: {v}" for k, v in errors.items())
    if errors and set(errors) <= {"connection", "timeout"}:
        place = base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
        return (f"rag-qa-arena: error: no request got through to {place} (connection errors or timeouts only: "
                f"{counts}): check --base-url and the network, then run the same command again")
    why = f" (errors {counts})" if counts else ""
    return f"rag-qa-arena: error: every one of the {n:,} {items} failed{why}: each line of {where} says why"


def run_reporting_failures(call: Callable[[], T], *, stopped: str, where: str | None, kept: str) -> T | int:
    """``call()``'s result, or an exit code after an error line and a line saying what is kept:
    :data:`FATAL_EXIT` when the server rejects the key or the model (then ``stopped`` is printed)
    or cannot be reached (one line), :data:`WRITE_EXIT` when an output cannot be written
    (``where``: the place, when the error does not name it; then ``kept``). Other errors propagate."""
    from metric_arena.llm import AuthenticationFailed, ModelNotFound, ServerUnreachable

    try:
        return call()
    except ServerUnreachable as error:
        print(f"rag-qa-arena: error: {error}. Check --base-url and that the server is running, then run the same "
              "command again", file=sys.stderr)
        return FATAL_EXIT
    except (AuthenticationFailed, ModelNotFound) as error:
        print(f"rag-qa-arena: error: {error}", file=sys.stderr)
        print(stopped, file=sys.stderr)
        return FATAL_EXIT
    except OSError as error:
        message = cannot_write_message(error, where)
        if message is None:
            raise
        print(f"rag-qa-arena: error: {message}", file=sys.stderr)
        print(kept, file=sys.stderr)
        return WRITE_EXIT
