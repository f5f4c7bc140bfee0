"""``rag-qa-arena retrieve``: top-k RobustQA passages for each LFRQA question (see :func:`retrieval.retrieve`),
and ``rag-qa-arena index push``: share a built index as a Hub dataset repo (see :func:`retrieval.push_index`)."""

from __future__ import annotations

import argparse
import sys

from builders import CORPUS_DOMAINS
from lfrqa.errors import RagQaArenaError
from retrieval import RETRIEVERS, retrieve

_EPILOG = """examples:
  rag-qa-arena retrieve --domain fiqa --retriever bm25 --corpus-dir data/ --out runs/fiqa.bm25.jsonl
  rag-qa-arena retrieve --domain writing --retriever colbert --index-dir indexes/writing \\
      --nranks 4 --k 5 --out runs/writing.colbert.jsonl
  rag-qa-arena retrieve --domain writing --corpus-dir data/ --index-from my-org/lfrqa-writing-colbert \\
      --index-revision COMMIT --out runs/writing.colbert.jsonl   # shared index (`index push`), not rebuilt

Raw corpora are read from --corpus-dir (or $LFRQA_DATA_DIR) in their distributed layout:
lotte/<domain>/test/collection.tsv (or lotte.tar.gz), fiqa/FiQA_train_doc_final.tsv (or BEIR's
fiqa/corpus.jsonl / fiqa.zip), bioasq/documents.jsonl; with no data folder, LoTTE and FiQA are
downloaded. The questions (and gold documents) are LFRQA's, read with lfrqa.load like every
other command: from $LFRQA_DATA_DIR, else the checksummed download. Each output line: {"qid", "domain", "question", "passages": [{"pid", "doc_id", "text",
"score", "rank"}]}, the input of answer generation.

ColBERT compiles its C++ extensions on first use (in $TORCH_EXTENSIONS_DIR): a lock left there by a
killed build is removed first (one line says so); a build still running elsewhere is waited for, at most
$RAG_QA_ARENA_EXTENSION_WAIT seconds (default 1800). README: "A killed extension build never hangs"."""


_PUSH = """\
Upload an index folder built by `rag-qa-arena retrieve --index-dir DIR` (BM25 or ColBERTv2) to the
Hugging Face dataset repo ORG/NAME in one commit: the index's files, its manifest.json (retriever,
settings, corpus fingerprint, sha256 of every file) and a generated README.md card. Anyone can then
search it without building it: `rag-qa-arena retrieve --index-from ORG/NAME --index-revision COMMIT`.

The files are checked against the manifest first (a damaged index is not pushed) and scanned for
things that look like credentials. The token comes from HF_TOKEN or `hf auth login` and is never
printed or written. The passage texts stay home (ColBERT's collection.tsv and logs are left out).
"""

_PUSH_EPILOG = """\
examples:
  rag-qa-arena retrieve --domain fiqa --retriever bm25 --corpus-dir data/ --index-dir indexes/fiqa --out runs/fiqa.jsonl
  rag-qa-arena index push indexes/fiqa --repo my-org/lfrqa-fiqa-bm25 --dry-run preview/   # the files, no upload
  rag-qa-arena index push indexes/fiqa --repo my-org/lfrqa-fiqa-bm25 --private
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "retrieve",
        help="retrieve the top-k corpus passages for each LFRQA question (ColBERTv2 or BM25)",
        description="Retrieve the top-k RobustQA passages for each LFRQA question of a domain, write them as "
        "JSON lines, and print hit@k / recall@k against LFRQA's gold documents.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--domain", required=True, choices=CORPUS_DOMAINS, help="LFRQA domain (and its corpus)")
    parser.add_argument(
        "--retriever", choices=RETRIEVERS,
        help="colbert: ColBERTv2 PLAID index, as in the paper (GPU advised); bm25: bm25s, CPU only "
        "(required unless --index-from gives a shared index, whose retriever it then must match)",
    )
    parser.add_argument("--k", type=int, default=5, help="passages kept per question (default: 5, as in the paper)")
    parser.add_argument("--out", required=True, help="output JSONL file, one line per question")
    parser.add_argument(
        "--index-dir",
        help="folder of the index: loaded if it holds one, else built there from the corpus and kept "
        "(default: built in a temporary folder and dropped)",
    )
    parser.add_argument(
        "--index-from", metavar="ORG/NAME_OR_FOLDER",
        help="search a ready index instead of building one: a Hub dataset repo pushed with `rag-qa-arena index "
        "push` (downloaded once, cached) or a folder; its files are checked against their sha256 and its "
        "manifest against this corpus",
    )
    parser.add_argument("--index-revision", metavar="REV",
                        help="commit, branch or tag of the --index-from repo (pin a commit for runs that repeat)")
    parser.add_argument("--trust-index", action="store_true",
                        help="use an --index-from index even if its manifest names another corpus or checkpoint")
    parser.add_argument(
        "--checkpoint",
        help="ColBERT checkpoint: a Hugging Face id or a local folder (default: colbert-ir/colbertv2.0)",
    )
    parser.add_argument("--corpus-dir", metavar="DIR",
                        help="folder of the raw corpora (default: $LFRQA_DATA_DIR, else their download)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="LFRQA's pinned files, for the questions and gold documents, as in every command "
                             "(default: $LFRQA_DATA_DIR, else the checksummed download); the raw corpora are "
                             "--corpus-dir's")
    parser.add_argument("--split", default="test", choices=("test", "dev"), help="LFRQA split / LoTTE collection (default: test)")
    parser.add_argument("--limit", type=int, help="only the first N questions (for a quick check)")
    parser.add_argument(
        "--questions",
        help="JSONL of your own questions ({'qid', 'question', optional 'gold_doc_ids'} per line) instead of LFRQA's",
    )
    parser.add_argument("--nranks", type=int, help="ColBERT indexing processes (default: one per GPU used)")
    parser.add_argument("--gpus", help="GPUs for ColBERT's indexing ranks: a count or a list like 0,1 (default: all visible; "
        "for CPU on a GPU machine set CUDA_VISIBLE_DEVICES= instead)")
    parser.add_argument("--batch-size", type=int, default=256, help="questions searched and written per batch (default: 256)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run: keep --out's lines, skip their qids; with colbert, also "
                             "continue an unfinished index build in --index-dir (its encoded chunks are kept)")
    parser.add_argument("--chunk-passages", type=int, metavar="N",
                        help="ColBERT: passages per saved chunk (default: ColBERT's 25,000); a crashed build loses "
                             "at most one chunk's work with --resume")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)
    _register_index(subparsers)


def _register_index(subparsers: argparse._SubParsersAction) -> None:
    index = subparsers.add_parser(
        "index",
        help="share a built retrieval index on the Hugging Face Hub",
        description="Retrieval indexes that describe themselves (manifest.json): push one to the Hub, then "
        "search it anywhere with `retrieve --index-from`.",
    )
    commands = index.add_subparsers(dest="index_command", metavar="ACTION")
    push = commands.add_parser("push", help="upload an index folder as a Hub dataset repo", description=_PUSH,
                               epilog=_PUSH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    push.add_argument("index_dir", metavar="INDEX_DIR", help="folder written by `rag-qa-arena retrieve --index-dir`")
    push.add_argument("--repo", required=True, metavar="ORG/NAME", help="dataset repo to upload to (created if missing)")
    push.add_argument("--private", action="store_true", help="create the repo as private (an existing repo keeps its visibility)")
    push.add_argument("--token-from-env", action="store_true",
                      help="take the token only from $HF_TOKEN (default: HF_TOKEN or the `hf auth login` token)")
    push.add_argument("--message", metavar="TEXT", help="commit message (default: 'Upload a rag-qa-arena index of INDEX_DIR')")
    push.add_argument("--dry-run", metavar="DIR",
                      help="write the folder that would be uploaded to DIR instead (no network, no token)")
    push.set_defaults(func=_push_index)
    index.set_defaults(func=lambda args: (index.print_help(), 2)[1])


def _push_index(args: argparse.Namespace) -> int:
    from builders import check_repo_id
    from retrieval import export_index, push_index

    if args.dry_run:
        folder = export_index(args.index_dir, args.dry_run, repo_id=check_repo_id(args.repo))
        print(f"Wrote the files of {args.repo} to {folder} (nothing uploaded)", file=sys.stderr)
        return 0
    from builders import HubUpload

    print(push_index(args.index_dir, args.repo, upload=HubUpload(private=args.private, token_from_env=args.token_from_env,
                                                                 commit_message=args.message)))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.retriever is None and args.index_from is None:
        raise RagQaArenaError("--retriever is required (bm25 or colbert), unless --index-from gives a shared index")
    if args.index_from is None and (args.index_revision is not None or args.trust_index):
        raise RagQaArenaError("--index-revision and --trust-index go with --index-from ORG/NAME_OR_FOLDER")
    options = {}
    if args.retriever == "colbert":
        if args.nranks is not None:
            options["nranks"] = args.nranks
        if args.gpus is not None:
            options["gpus"] = int(args.gpus) if args.gpus.isdigit() else args.gpus
        if args.chunk_passages is not None:
            from retrieval import ColBERTIndexing

            options["indexing"] = ColBERTIndexing(chunk_passages=args.chunk_passages)
    elif args.retriever == "bm25" and (args.nranks is not None or args.gpus is not None or args.checkpoint is not None
                                       or args.chunk_passages is not None):
        raise RagQaArenaError("--nranks, --gpus, --checkpoint and --chunk-passages are ColBERT options; drop them "
                              "with --retriever bm25")
    from pathlib import Path

    from lfrqa.kernel import refuse_output_over_input

    for written in (args.out, Path(args.out).with_name(Path(args.out).stem + ".metrics.json")):
        refuse_output_over_input(("--out", written), [("--questions", args.questions)])
    corpus_dir, data_dir = args.corpus_dir, args.data_dir
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        metrics = _retrieve(args, options, corpus_dir, data_dir)
    for warning in caught:
        if "corpus is incomplete" in str(warning.message):
            print(f"rag-qa-arena: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    _print_metrics(metrics, args.out)
    return 0


def _retrieve(args: argparse.Namespace, options: dict, corpus_dir, data_dir) -> dict:
    from retrieval import IndexOptions, RetrieveRun

    return retrieve(
        args.domain,
        args.out,
        retriever=args.retriever,
        k=args.k,
        index=IndexOptions(index_dir=args.index_dir, index_from=args.index_from, revision=args.index_revision,
                           trust=args.trust_index, checkpoint=args.checkpoint, options=options),
        corpus_dir=corpus_dir,
        data_dir=data_dir,
        split=args.split,
        questions=None if args.questions is None else _read_questions(args.questions),
        run=RetrieveRun(batch_size=args.batch_size, limit=args.limit, resume=args.resume, overwrite=args.overwrite,
                        show_progress=not args.no_progress),
    )


def _read_questions(path: str) -> list[dict]:
    import os

    from lfrqa.kernel import iter_records, saved_dataset

    hint = 'Each line must be one {"qid", "question"} object.'
    if not os.path.isfile(path) and not saved_dataset(path):
        what = "is a folder, not a file" if os.path.isdir(path) else "does not exist"
        raise FileNotFoundError(f"Questions file {path} {what}: give a JSONL file with one "
                                '{"qid", "question"} object per line (or Parquet, or a saved datasets.Dataset), '
                                "or drop --questions to use LFRQA's")
    rows = [row for _, row in iter_records(path, hint=hint)]
    if not rows:
        raise RagQaArenaError(f"{path} holds no questions: write one {{\"qid\", \"question\"}} object per line")
    return rows


def _print_metrics(metrics: dict, out: str) -> None:
    ks = sorted(int(key.split("@")[1]) for key in metrics if key.startswith("hit@"))
    corpus = metrics.get("corpus") or {}
    whose = " whose gold documents are in the (incomplete) corpus" if corpus.get("incomplete") else " with gold documents"
    print(f"{metrics['retriever']} on {metrics['domain']}: {metrics['n']} questions{whose} -> {out}")
    if metrics["n_missing"]:
        print(f"  {metrics['n_missing']} questions have no results", file=sys.stderr)
    header = "  " + " ".join(f"{name + '@' + str(k):>10}" for k in ks for name in ("hit", "recall"))
    print(header)
    cells = []
    for k in ks:
        for name in ("hit", "recall"):
            value = metrics.get(f"{name}@{k}")
            cells.append(f"{'-' if value is None else format(value, '.4f'):>10}")
    print("  " + " ".join(cells))
    print(f"next: rag-qa-arena generate --retrieved {out} --model BACKEND:MODEL --out ANSWERS.jsonl")
