"""``rag-qa-arena data``: export, push and describe the LFRQA dataset."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    data = subparsers.add_parser(
        "data",
        help="export, push and describe the LFRQA dataset",
        description="Work with the LFRQA dataset: Hub-ready export, upload, and per-domain statistics.",
    )
    commands = data.add_subparsers(dest="data_command", metavar="ACTION")

    def retrieved_flags(parser):
        parser.add_argument("--retrieved", nargs="+", action="extend", default=[], metavar="NAME=FILE",
                            help="add the passages of a `retrieve --out` FILE as config retrieved-NAME (qid, domain, "
                                 "question, passages: pid, doc_id, text, rank); repeatable")
        parser.add_argument("--retrieved-index", nargs="+", action="extend", default=[], metavar="NAME=DIR",
                            help="the index folder (--index-dir of retrieve) that retrieved NAME: its manifest goes "
                                 "beside the config and the card names its retriever and checkpoint")

    def data_dir_flag(parser):
        parser.add_argument(
            "--data-dir",
            default=None,
            help="folder with the benchmark's files in their published layout (default: $LFRQA_DATA_DIR, "
            "else download them from the pinned commit)",
        )

    export = commands.add_parser(
        "export",
        help="write a Hub-ready folder (Parquet + README dataset card)",
        description="Write LFRQA as Parquet files per config and split plus a README.md whose YAML configs make "
        "datasets.load_dataset(OUT, 'fiqa', split='test') work without this package.",
    )
    export.add_argument("out", help="new or empty folder to write")
    data_dir_flag(export)
    export.add_argument("--no-corpora", action="store_true", help="skip the passage corpora even if raw files exist")
    export.add_argument("--corpus-dir", metavar="DIR",
                        help="raw RobustQA corpora to export as passages (default: the --data-dir folder)")
    export.add_argument("--no-eval-yaml", action="store_true",
                        help="write no eval.yaml (the Hub Benchmark file) into the folder")
    retrieved_flags(export)
    export.set_defaults(func=_export)

    push = commands.add_parser(
        "push",
        help="upload the exported dataset to a Hugging Face Hub dataset repo",
        description="Export LFRQA (or take --from FOLDER) and commit it to the dataset repo REPO_ID. The token comes "
        "from HF_TOKEN or `hf auth login`; it is never printed or written. The token and the Hub are checked before "
        "anything is exported; every file is scanned for credentials before the upload.",
    )
    push.add_argument("repo_id", metavar="REPO_ID", help="ORG/NAME of the dataset repository")
    push.add_argument("--from", dest="folder", default=None, help="an already exported folder to upload")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--token-from-env", action="store_true",
                      help="take the token only from $HF_TOKEN (default: HF_TOKEN or the `hf auth login` token)")
    push.add_argument("--message", metavar="TEXT",
                      help="commit message (default: 'Upload LFRQA exported by rag-qa-arena')")
    push.add_argument("--dry-run", metavar="DIR",
                      help="write the files that would be uploaded to DIR (new or empty) instead of uploading "
                           "(no network, no token)")
    data_dir_flag(push)
    push.add_argument("--corpus-dir", metavar="DIR",
                      help="raw RobustQA corpora to export as passages (default: the --data-dir folder)")
    push.add_argument("--no-eval-yaml", action="store_true",
                      help="leave eval.yaml out of the push (by default it goes up; if the Hub refuses it, the "
                           "data goes up without it and one line says why)")
    retrieved_flags(push)
    push.set_defaults(func=_push)

    stats = commands.add_parser(
        "stats",
        help="per-domain table: queries, words per answer, documents per query",
        description="Print a per-domain table like the paper's Table 2 for the data actually loaded.",
    )
    stats.add_argument("--name", default="all", help="a domain or 'all' (default: all)")
    stats.add_argument("--split", default="test", help="test or dev (default: test)")
    data_dir_flag(stats)
    stats.add_argument("--quirks", action="store_true", help="also count the published data's quirks per domain")
    stats.add_argument("--corpus-dir", metavar="DIR",
                       help="raw RobustQA corpora (as for `retrieve --corpus-dir`): count their documents and 100-word "
                            "passages instead of showing the known document counts")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=_stats)
    data.set_defaults(func=lambda args: (data.print_help(), 2)[1])


def _export(args: argparse.Namespace) -> int:
    from rich.console import Console

    from builders import export_dataset

    import datasets

    console = Console(stderr=True)
    done: list[str] = []  # what was written, said once at the end (no log line per config)
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # no "Creating parquet" bar per config either
    try:
        with console.status("Exporting LFRQA…"):
            folder = export_dataset(args.out, data_dir=args.data_dir, corpora=not args.no_corpora,
                                    progress=done.append, corpus_dir=args.corpus_dir, eval_yaml=not args.no_eval_yaml,
                                    retrieved=_named(args.retrieved, "--retrieved", "FILE"),
                                    retrieved_index=_named(args.retrieved_index, "--retrieved-index", "DIR"))
    finally:
        if bars:
            datasets.enable_progress_bars()
    print(f"Exported LFRQA to {Path(folder).resolve()}: {', '.join(done)}", file=sys.stderr)
    print(folder)
    return 0


def _push(args: argparse.Namespace) -> int:
    from builders import (
        BENCHMARK_FILE,
        check_hub_access,
        check_repo_id,
        export_dataset,
        push_dataset,
        write_dry_run,
    )

    check_repo_id(args.repo_id)
    export = {"data_dir": args.data_dir, "corpus_dir": args.corpus_dir, "eval_yaml": not args.no_eval_yaml,
              "retrieved": _named(args.retrieved, "--retrieved", "FILE"),
              "retrieved_index": _named(args.retrieved_index, "--retrieved-index", "DIR")}
    if args.folder and (export["retrieved"] or export["retrieved_index"]):
        from lfrqa.errors import RagQaArenaError

        raise RagQaArenaError("--retrieved goes with a push that exports (drop --from), or export the folder with "
                              "`rag-qa-arena data export OUT --retrieved NAME=FILE` and push it with --from OUT")
    if args.dry_run:
        source = args.folder or export_dataset(args.dry_run, **export)
        files = write_dry_run(source, args.dry_run, what=f"to {args.repo_id}",
                              leave_out=[BENCHMARK_FILE] if args.no_eval_yaml else [])
        print(f"Wrote {len(files)} files to {args.dry_run} (nothing uploaded): {', '.join(files)}", file=sys.stderr)
        return 0
    token = check_hub_access(args.repo_id, token_from_env=args.token_from_env)
    from builders import HubUpload

    options = {"upload": HubUpload(private=args.private, token=token, commit_message=args.message),
               "eval_yaml": not args.no_eval_yaml, "on_note": lambda line: print(line, file=sys.stderr)}
    if args.folder:
        print(push_dataset(args.folder, args.repo_id, **options))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = export_dataset(f"{tmp}/lfrqa", **export)
        print(push_dataset(folder, args.repo_id, **options))
    return 0


def _named(values: list[str], flag: str, what: str) -> dict[str, str]:
    """``{NAME: value}`` from ``NAME=VALUE`` arguments; a bad one is a one-line error naming it."""
    from lfrqa.errors import RagQaArenaError

    named: dict[str, str] = {}
    for value in values:
        name, sep, target = value.partition("=")
        if not sep or not name or not target:
            raise RagQaArenaError(f"Bad {flag} {value!r}: give NAME={what}, e.g. {flag} bm25=fiqa.bm25.jsonl")
        if name in named:
            raise RagQaArenaError(f"{flag} {name}=... is given twice: one {what} per name")
        named[name] = target
    return named


def _stats(args: argparse.Namespace) -> int:
    import lfrqa

    import builders

    dataset = lfrqa.load(args.name, split=args.split, data_dir=args.data_dir)
    table = lfrqa.dataset_stats(dataset)
    domains = [row["domain"] for row in table if row["domain"] != "all"]
    sizes = builders.corpus_sizes(domains, corpus_dir=args.corpus_dir)
    for row in table:
        parts = [sizes[d] for d in (domains if row["domain"] == "all" else [row["domain"]])]
        for key in ("corpus_documents", "corpus_passages"):
            values = [part[key] for part in parts]
            row[key] = None if None in values else sum(values)
    quirks = lfrqa.audit(args.name, split=args.split, data_dir=args.data_dir) if args.quirks else None
    if args.json:
        print(json.dumps({"stats": table, **({"quirks": quirks} if quirks else {})}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    view = Table(title=f"LFRQA {args.split} ({args.name})")
    for column in ("domain", "queries", "words / answer", "docs / query", "corpus docs", "corpus passages"):
        view.add_column(column, justify="left" if column == "domain" else "right")
    for row in table:
        view.add_row(
            row["domain"],
            str(row["queries"]),
            f"{row['words_per_answer']:.1f}",
            f"{row['documents_per_query']:.2f}",
            "-" if row["corpus_documents"] is None else f"{row['corpus_documents']:,}",
            "-" if row["corpus_passages"] is None else f"{row['corpus_passages']:,}",
        )
    console.print(view)
    if quirks:
        names = [key for key in next(iter(quirks.values())) if key != "rows"]
        qview = Table(title="Quirks handled (rows affected)")
        qview.add_column("quirk", no_wrap=True)
        for domain in quirks:
            qview.add_column(domain, justify="right")
        for name in names:
            qview.add_row(name, *(str(quirks[d][name]) for d in quirks))
        console.print(qview)
    return 0
