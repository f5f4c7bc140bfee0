"""``rag-qa-arena push``: upload a judged run folder to a Hugging Face dataset repo."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_DESCRIPTION = """\
Upload a run folder written by `rag-qa-arena judge --out DIR` to a Hugging Face dataset repo:
data/verdicts.parquet (one row per judged pair), summary.json, and a generated README.md dataset card,
so that `datasets.load_dataset("ORG/NAME", split="test")` reads the verdicts. The repo is created if
it does not exist.

The token comes from the usual places (HF_TOKEN, or `hf auth login`) and is never printed or
written. Before uploading, every file is scanned for things that look like credentials (sk-..., hf_...,
AWS/Google/GitHub keys, Bearer tokens, the values of OPENAI_API_KEY / HF_TOKEN and friends); the push
is refused if any is found.
"""

_EPILOG = """\
examples:
  rag-qa-arena push runs/gpt-4o --repo my-org/rag-qa-arena-gpt-4o --private
  HF_TOKEN=... rag-qa-arena push runs/gpt-4o --repo my-org/rag-qa-arena-gpt-4o --token-from-env
  rag-qa-arena push runs/gpt-4o --repo my-org/x --dry-run preview/   # write the files locally instead
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "push",
        help="Upload a judged run folder (verdicts as Parquet, summary, dataset card) to the Hugging Face Hub.",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", metavar="RUN_DIR", help="run folder written by `rag-qa-arena judge --out`")
    parser.add_argument("--repo", required=True, metavar="ORG/NAME", help="dataset repo to upload to (created if missing)")
    parser.add_argument("--private", action="store_true", help="create the repo as private (an existing repo keeps its visibility)")
    parser.add_argument(
        "--token-from-env", action="store_true",
        help="take the token only from $HF_TOKEN (default: HF_TOKEN or the `hf auth login` token)",
    )
    parser.add_argument("--message", metavar="TEXT", help="commit message (default: 'Upload RAG-QA Arena verdicts of RUN')")
    parser.add_argument(
        "--dry-run", metavar="DIR",
        help="write the files that would be uploaded to DIR instead of uploading (no network, no token)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from metric_arena.report import build_push_files, push_run

    err = Console(stderr=True)
    if args.dry_run:
        with err.status("Preparing files"):
            files = build_push_files(args.run, repo_id=args.repo)
        out = Path(args.dry_run)
        for path, data in files.items():
            target = out / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        print(f"Wrote {len(files)} files to {out} (nothing uploaded): {', '.join(sorted(files))}", file=sys.stderr)
        return 0
    with err.status(f"Uploading {args.run} to {args.repo}"):
        url = push_run(
            args.run,
            args.repo,
            private=args.private,
            token_from_env=args.token_from_env,
            commit_message=args.message,
        )
    print(url)
    return 0
