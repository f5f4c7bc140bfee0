"""``rag-qa-arena push``: upload a run folder to a Hub dataset repo (work in progress)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("push", help="Upload a judged run folder to a Hugging Face dataset repo.")
    parser.add_argument("run")
    parser.add_argument("--repo", required=True)
    parser.set_defaults(func=lambda args: 1)
