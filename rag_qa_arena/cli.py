"""Entry point of ``rag-qa-arena``. Each command group lives in its own ``_cmd_<name>`` module
that exposes ``register(subparsers)``; every command calls public functions of the packages.

Errors: a :class:`~lfrqa.errors.RagQaArenaError` (a bad value, file or setting) and an OS error on a
file print one line and exit 2; anything else is a bug and keeps its traceback (``--debug``
shows tracebacks for all).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import package_version

# Order in which command groups appear in --help.
_COMMAND_MODULES = ("data", "retrieve", "generate", "judge", "cite", "tournament", "report", "compare", "push")  # push: also `metric`
#: Command groups whose module lives in rag_qa_arena/commands/ (the package's folder is full).
_IN_COMMANDS = {"cite": "rag_qa_arena.commands.cite"}
# Command groups in the sub-package (rag_qa_arena/ holds its twelve modules), after those above.
_MORE_COMMAND_MODULES = ("rag_qa_arena.commands._cmd_requests",)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag-qa-arena",
        description=(
            "RAG-QA Arena: the LFRQA dataset, retrieval over the RobustQA corpora, answer "
            "generation, and a pairwise LLM judge that compares long-form answers with LFRQA's."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of every error")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for path in [_IN_COMMANDS.get(name, f"rag_qa_arena._cmd_{name}") for name in _COMMAND_MODULES] + list(_MORE_COMMAND_MODULES):
        importlib.import_module(path).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # --help and --version print here
    except BrokenPipeError:
        return _stdout_closed()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("Interrupted; everything finished so far is saved.", file=sys.stderr)
        return 130
    except (RagQaArenaError, OSError) as error:
        if args.debug:
            raise
        print(f"rag-qa-arena: error: {error}", file=sys.stderr)
        return 2


def _stdout_closed() -> int:
    """The reader of stdout went away (``rag-qa-arena report … | head``): nothing more can be said
    there. Exit status 1, quietly, as Python's own documentation and ``rich`` do on a closed pipe;
    stdout then points at /dev/null so that the flush at exit stays quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 1
