"""``rag-qa-arena metric``: the evaluate module as a folder (``export``) and as a Hub Space (``push``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_EXPORT = """\
Write the RAG-QA Arena evaluate module in evaluate's own layout: DIR/<name of DIR>.py (the module),
README.md (the metric card with evaluate's YAML metadata), app.py (evaluate's gradio widget), a
wheel of this package (built from its source tree, or --wheel FILE) and requirements.txt, which
installs that wheel from the folder (`pip install -r DIR/requirements.txt`; only the dependencies
come from the package index). With --requirement REQ your own requirements file is used instead
and no wheel is shipped. Then evaluate.load("DIR") works from any folder; from the folder that
holds it, `rag-qa-arena metric export rag_qa_arena` makes evaluate.load("rag_qa_arena") work too.
"""

_PUSH = """\
Upload the evaluate module to the Hugging Face Space ORG/NAME (created as a gradio Space if it does
not exist; the module goes up as NAME.py, with its card, requirements.txt and app.py), so that
evaluate.load("ORG/NAME") works for anyone; the Space installs the package from the wheel it holds
(or from --requirement REQ). The token comes from HF_TOKEN
or `hf auth login` and is never printed or written; every file is scanned for credentials first.
"""


def register(subparsers) -> None:
    metric = subparsers.add_parser(
        "metric",
        help="export the evaluate module as a folder, or push it to the Hub as a Space",
        description="The RAG-QA Arena evaluate module: export it (evaluate.load(DIR)) or push it as a Space "
        "(evaluate.load('ORG/NAME')).",
    )
    commands = metric.add_subparsers(dest="metric_command", metavar="ACTION")

    export = commands.add_parser("export", help="write the evaluate module folder to DIR", description=_EXPORT,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("out", metavar="DIR", help="new or empty folder; the module is named after it")
    _package_flags(export)
    export.set_defaults(func=_export)

    push = commands.add_parser("push", help="upload the evaluate module as a Hub Space ORG/NAME", description=_PUSH,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    push.add_argument("repo_id", metavar="ORG/NAME", help="the Space to upload to (created if missing)")
    push.add_argument("--private", action="store_true", help="create the Space as private")
    push.add_argument("--token-from-env", action="store_true",
                      help="take the token only from $HF_TOKEN (default: HF_TOKEN or the `hf auth login` token)")
    push.add_argument("--message", metavar="TEXT", help="commit message")
    push.add_argument("--dry-run", metavar="DIR",
                      help="write the files that would be uploaded to DIR instead (no network, no token)")
    _package_flags(push)
    push.set_defaults(func=_push)
    metric.set_defaults(func=lambda args: (metric.print_help(), 2)[1])


def _package_flags(parser: argparse.ArgumentParser) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--wheel", metavar="FILE",
                     help="ship this wheel of the package (default: build one from the package's source tree)")
    how.add_argument("--requirement", metavar="REQ",
                     help="use this pip requirements file as requirements.txt instead (no wheel shipped)")


def _export(args: argparse.Namespace) -> int:
    from metric_arena.space import export_metric

    folder = export_metric(args.out, wheel=args.wheel, requirements=args.requirement)
    print(folder)
    return 0


def _push(args: argparse.Namespace) -> int:
    from metric_arena.space import export_metric, push_metric

    if args.dry_run:
        from builders import check_repo_id

        name = check_repo_id(args.repo_id).split("/")[1]
        folder = export_metric(Path(args.dry_run), name=name, wheel=args.wheel, requirements=args.requirement)
        print(f"Wrote the files of {args.repo_id} to {folder} (nothing uploaded)", file=sys.stderr)
        return 0
    print(push_metric(args.repo_id, private=args.private, token_from_env=args.token_from_env,
                      commit_message=args.message, wheel=args.wheel, requirements=args.requirement))
    return 0
