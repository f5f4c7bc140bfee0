"""``rag-qa-arena report``: leaderboard from judged run folders (work in progress)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="Build the leaderboard from judged run folders.")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", required=True)
    parser.set_defaults(func=lambda args: 1)
