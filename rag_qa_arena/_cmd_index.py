"""``rag-qa-arena index push``: share a built retrieval index as a Hugging Face dataset repo."""

from __future__ import annotations

import argparse
import sys

_PUSH = """\
Upload an index folder built by `rag-qa-arena retrieve --index-dir DIR` (BM25 or ColBERTv2) to the
Hugging Face dataset repo ORG/NAME in one commit: the index's files, its manifest.json (retriever,
settings, corpus fingerprint, sha256 of every file) and a generated README.md card. Anyone can then
search it without building it: `rag-qa-arena retrieve --index-from ORG/NAME --index-revision COMMIT`.

The files are checked against the manifest first (a damaged index is not pushed) and scanned for
things that look like credentials. The token comes from HF_TOKEN or `hf auth login` and is never
printed or written. The passage texts stay home (ColBERT's collection.tsv and logs are left out).
"""

_EPILOG = """\
examples:
  rag-qa-arena retrieve --domain fiqa --retriever bm25 --data-dir data/ --index-dir indexes/fiqa --out runs/fiqa.jsonl
  rag-qa-arena index push indexes/fiqa --repo my-org/lfrqa-fiqa-bm25 --dry-run preview/   # the files, no upload
  rag-qa-arena index push indexes/fiqa --repo my-org/lfrqa-fiqa-bm25 --private
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    index = subparsers.add_parser(
        "index",
        help="share a built retrieval index on the Hugging Face Hub",
        description="Retrieval indexes that describe themselves (manifest.json): push one to the Hub, then "
        "search it anywhere with `retrieve --index-from`.",
    )
    commands = index.add_subparsers(dest="index_command", metavar="ACTION")
    push = commands.add_parser("push", help="upload an index folder as a Hub dataset repo", description=_PUSH,
                               epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    push.add_argument("index_dir", metavar="INDEX_DIR", help="folder written by `rag-qa-arena retrieve --index-dir`")
    push.add_argument("--repo", required=True, metavar="ORG/NAME", help="dataset repo to upload to (created if missing)")
    push.add_argument("--private", action="store_true", help="create the repo as private (an existing repo keeps its visibility)")
    push.add_argument("--token-from-env", action="store_true",
                      help="take the token only from $HF_TOKEN (default: HF_TOKEN or the `hf auth login` token)")
    push.add_argument("--message", metavar="TEXT", help="commit message (default: 'Upload a rag-qa-arena index of INDEX_DIR')")
    push.add_argument("--dry-run", metavar="DIR",
                      help="write the folder that would be uploaded to DIR instead (no network, no token)")
    push.set_defaults(func=_push)
    index.set_defaults(func=lambda args: (index.print_help(), 2)[1])


def _push(args: argparse.Namespace) -> int:
    from builders import check_repo_id
    from retrieval import export_index, push_index

    if args.dry_run:
        folder = export_index(args.index_dir, args.dry_run, repo_id=check_repo_id(args.repo))
        print(f"Wrote the files of {args.repo} to {folder} (nothing uploaded)", file=sys.stderr)
        return 0
    print(push_index(args.index_dir, args.repo, private=args.private, token_from_env=args.token_from_env,
                     commit_message=args.message))
    return 0
