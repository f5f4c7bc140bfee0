"""``rag-qa-arena retrieve``: top-k passages per LFRQA question (placeholder, being written)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("retrieve", help="retrieve top-k passages per question")
    parser.set_defaults(func=lambda args: 1)
