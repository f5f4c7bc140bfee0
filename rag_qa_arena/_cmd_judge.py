"""``rag-qa-arena judge``: pairwise LLM judging of a prediction file (work in progress)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("judge", help="Judge a system's answers against LFRQA's with an LLM.")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise NotImplementedError("rag-qa-arena judge is being written")
