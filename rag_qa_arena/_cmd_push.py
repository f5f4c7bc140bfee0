"""``rag-qa-arena push`` and ``rag-qa-arena metric``: run verdicts and the evaluate module on the Hub.

``rag-qa-arena push``: upload a judged run folder to a Hugging Face dataset repo."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfrqa.kernel import make_folder
from metric_arena.records import SUMMARY_FILE, VERDICTS_FILE

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
  # also report the win rate on the model's page: a PR adding .eval_results/NAME.yaml to the model repo
  rag-qa-arena push runs/gpt-4o --repo my-org/x --eval-results my-org/my-model --dataset my-org/lfrqa \\
      --dataset-revision COMMIT          # the commit of my-org/lfrqa the run used (or --no-revision)
  # offline preview: tasks from the local eval.yaml that `data export` wrote
  rag-qa-arena push runs/gpt-4o --repo my-org/x --eval-results my-org/my-model --dataset my-org/lfrqa \\
      --eval-yaml lfrqa_hub/eval.yaml --no-revision --source-org my-org --dry-run preview/
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
    results = parser.add_argument_group(
        "Hub eval results",
        "With --eval-results, a pull request on the model repo adds .eval_results/NAME.yaml (huggingface_hub's "
        "EvalResultEntry): the run's win rate (%) per task of the benchmark's eval.yaml that the run covers "
        "completely, the dataset revision, its date, a source pointing at the verdicts pushed to --repo and "
        "naming who measured, and notes naming the judge and the parse (judge=... parse=...).",
    )
    results.add_argument("--eval-results", metavar="ORG/MODEL", help="model repo to open the pull request on")
    results.add_argument("--dataset", metavar="ORG/NAME",
                         help="the LFRQA benchmark dataset (pushed with `rag-qa-arena data push`); task ids come "
                              "from its eval.yaml")
    results.add_argument("--eval-yaml", metavar="FILE",
                         help="read the tasks from this local eval.yaml (e.g. from `data export`) instead of "
                              "downloading the dataset's")
    results.add_argument("--eval-name", metavar="NAME",
                         help="file name in .eval_results/ (default: rag-qa-arena-<system>-<judge>-<parse>, so "
                              "another judge or parse adds a file)")
    results.add_argument("--dataset-revision", metavar="COMMIT",
                         help="the commit of --dataset the run used (dataset.revision; default: the run's own "
                              "record); eval.yaml is read at that commit")
    results.add_argument("--no-revision", action="store_true",
                         help="write results that pin no dataset version (refused otherwise when the revision "
                              "is unknown)")
    results.add_argument("--source-org", metavar="ORG",
                         help="credit the result to this organisation (source.org; default: the token's user)")
    results.add_argument("--allow-partial", action="store_true",
                         help="also write tasks the run covers in part (notes give the coverage, e.g. "
                              "60/3570 questions); by default a task needs every one of its questions judged")
    results.add_argument("--data-dir", metavar="DIR",
                         help="LFRQA's files, to count each task's questions (default: $LFRQA_DATA_DIR, else "
                              "the pinned download)")
    parser.set_defaults(func=_run)
    _register_metric(subparsers)


def _eval_result_files(args: argparse.Namespace, token: str | None, user: str | None = None) -> dict[str, bytes] | None:
    """The .eval_results file for --eval-results (None without it); errors before anything is uploaded."""
    from metric_arena.report import ResultPin, build_eval_result_files, read_benchmark

    if not _wants_eval_results(args):
        return None
    benchmark = read_benchmark(args.dataset, eval_yaml=args.eval_yaml, revision=args.dataset_revision, token=token)
    pin = ResultPin(dataset_revision=args.dataset_revision, require_revision=not args.no_revision,
                    source_user=user, source_org=args.source_org, allow_partial=args.allow_partial)
    return build_eval_result_files(args.run, dataset_id=args.dataset, benchmark=benchmark, source_repo=args.repo,
                                   name=args.eval_name, extra_secrets=[token] if token else [], pin=pin,
                                   data_dir=args.data_dir)


def _wants_eval_results(args: argparse.Namespace) -> bool:
    from lfrqa.errors import RagQaArenaError

    if not (args.eval_results or args.dataset or args.eval_yaml or args.eval_name or args.dataset_revision
            or args.no_revision or args.source_org or args.allow_partial):
        return False
    if not (args.eval_results and args.dataset):
        raise RagQaArenaError("Hub eval results need both --eval-results ORG/MODEL and --dataset ORG/LFRQA "
                              "(the benchmark dataset whose eval.yaml names the tasks)")
    return True


def _write(files: dict[str, bytes], out: Path) -> None:
    for path, data in files.items():
        target = out / path
        make_folder(target.parent, target=target)
        target.write_bytes(data)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from builders import check_hub_access
    from metric_arena.report import build_push_files, push_eval_results, push_run

    err = Console(stderr=True)
    wants_results = _wants_eval_results(args)
    if args.dry_run:
        from lfrqa.kernel import refuse_output_over_input

        refuse_output_over_input(("--dry-run", args.dry_run), [("RUN_DIR", args.run)] + [
            ("RUN_DIR", Path(args.run) / name) for name in (VERDICTS_FILE, SUMMARY_FILE)],
            written=(SUMMARY_FILE, "README.md", "data/verdicts.parquet"))
        with err.status("Preparing files"):
            files = build_push_files(args.run, repo_id=args.repo)
            results = _eval_result_files(args, None)
        out = Path(args.dry_run)
        _write(files, out)
        print(f"Wrote {len(files)} files to {out} (nothing uploaded): {', '.join(sorted(files))}", file=sys.stderr)
        if results:
            _write(results, out / "model")
            print(f"Wrote the eval results for {args.eval_results} to {out / 'model'} (nothing uploaded): "
                  f"{', '.join(sorted(results))}", file=sys.stderr)
        return 0
    results, token = None, None
    if wants_results:
        from metric_arena.report import hub_user

        token = check_hub_access(args.eval_results, token_from_env=args.token_from_env)
        user = None if args.source_org else hub_user(args.eval_results, token=token)
        results = _eval_result_files(args, token, user)
    from builders import HubUpload

    with err.status(f"Uploading {args.run} to {args.repo}"):
        url = push_run(
            args.run,
            args.repo,
            upload=HubUpload(private=args.private, token_from_env=args.token_from_env, commit_message=args.message,
                             token=token),
        )
    print(url)
    if results:
        with err.status(f"Opening a pull request on {args.eval_results}"):
            print(push_eval_results(args.eval_results, results, token=token))
    return 0


# ------------------------------------------------------------------------------------------
# metric: the evaluate module as a folder (export) and as a Hub Space (push)
# ------------------------------------------------------------------------------------------
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


def _register_metric(subparsers) -> None:
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

    folder = Path(export_metric(args.out, wheel=args.wheel, requirements=args.requirement)).resolve()
    print(f"Wrote the evaluate module to {folder} ({', '.join(sorted(p.name for p in folder.iterdir()))}). "
          f"Use it: pip install -r {folder / 'requirements.txt'} (in a fresh environment), then "
          f"evaluate.load({str(folder)!r})", file=sys.stderr)
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
    from builders import HubUpload

    print(push_metric(args.repo_id, upload=HubUpload(private=args.private, token_from_env=args.token_from_env,
                                                     commit_message=args.message),
                      wheel=args.wheel, requirements=args.requirement))
    return 0
