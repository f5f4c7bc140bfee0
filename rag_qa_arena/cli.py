"""Entry point of ``rag-qa-arena``. Each command group lives in its own ``_cmd_<name>`` module
that exposes ``register(subparsers)``; every command calls one public function of the packages."""

from __future__ import annotations

import argparse
import importlib
import sys

# Order in which command groups appear in --help.
_COMMAND_MODULES = ("data", "retrieve", "generate", "judge", "report", "push")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag-qa-arena",
        description=(
            "RAG-QA Arena: the LFRQA dataset, retrieval over the RobustQA corpora, answer "
            "generation, and a pairwise LLM judge that compares long-form answers with LFRQA's."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        module = importlib.import_module(f"rag_qa_arena._cmd_{name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("Interrupted; everything finished so far is saved.", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, FileExistsError, PermissionError, KeyError, ImportError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"rag-qa-arena: error: {message}", file=sys.stderr)
        return 2
