"""``rag-qa-arena judge``: judge a prediction file against LFRQA (or another system) with an LLM.

A thin layer over :func:`metric_arena.judge.prepare_judge_inputs`, :func:`metric_arena.judge_pairs`
and :func:`metric_arena.judge.judge_dry_run` (``--dry-run``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from rag_qa_arena._options import BATCH_NOT_READY_EXIT, api_key, judge_settings, run_settings
from metric_arena.records import RUN_FILES

_EPILOG = """\
prediction files: JSON Lines, one {"qid": "...", "answer": "..."} per line (LFRQA qids), or
the same columns as a Parquet file or a folder saved by datasets' Dataset.save_to_disk.
Questions, reference answers and domains come from LFRQA by qid; lines may also carry
"question" and "domain" to judge without LFRQA (with --versus). Lines marked "failed": true
(written by `generate` when a question got no answer) are failed pairs and are never judged.

run folder (--out): verdicts.jsonl (one line per pair, appended as each pair finishes) and
summary.json (win/tie/loss rates with 95% bootstrap intervals, per domain). Judgments are cached
in SQLite: re-running the same command resumes without asking anything twice. One run at a time
may write a folder; a folder holding a run with another judge, system, opponent or order is
refused unless --overwrite (its verdicts are replaced once the new set is complete).

exit codes: 0 done, 2 bad input, a busy or refused run folder, or an output not writable,
3 key rejected, model not found, server unreachable (nothing got through in the first ~20 s),
or every pair failed.

examples:
  rag-qa-arena judge --predictions preds.jsonl --judge openai:gpt-4o --out runs/my-system
  rag-qa-arena judge --predictions preds.jsonl --judge openai:gpt-4o --dry-run
  rag-qa-arena judge --predictions A.jsonl --versus B.jsonl --judge openai:gpt-4o --out runs/A-vs-B
  rag-qa-arena judge --predictions preds.jsonl --judge openai:Qwen/Qwen2.5-72B-Instruct \\
      --base-url http://localhost:8000/v1 --out runs/my-system
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from metric_arena.judge import DEFAULT_JUDGE, ORDERS, PARSES
    from rag_qa_arena._options import (
        add_backend_flags,
        add_judge_scale_flags,
        add_run_flags,
    )

    parser = subparsers.add_parser(
        "judge",
        help="Judge a system's answers against LFRQA's (or another system's) with an LLM.",
        description=(
            "Compare each answer of a prediction file with the LFRQA reference answer (or with "
            "another system's answer, --versus) using the RAG-QA Arena pairwise LLM judge, exactly "
            "as the paper does, and write the verdicts and win rates to a run folder."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--predictions", metavar="FILE",
                        help='the evaluated system\'s answers: JSONL with {"qid", "answer"} per line, or Parquet / '
                             "a saved datasets.Dataset with those columns (required, except with --batch-status); an "
                             "answer over 200,000 characters (MAX_TEXT_CHARS) is refused before anything is sent")
    parser.add_argument("--judge", action="append", metavar="BACKEND:MODEL",
                        help=f"judge model as '<backend>:<model>' (backends: openai, hf, vllm); repeat the flag "
                             f"for several judges that vote (default: {DEFAULT_JUDGE})")
    add_backend_flags(parser, "judges")  # --base-url, --api-key, --max-concurrency, --timeout
    parser.add_argument("--out", metavar="DIR",
                        help="run folder for verdicts.jsonl and summary.json (required unless --dry-run)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a run folder that holds a run with other settings (judges, system, opponent, "
                             "order); without it such a folder is refused")
    parser.add_argument("--name", metavar="NAME",
                        help="the evaluated system's name in verdicts and leaderboards (default: the --out folder's "
                        "name; with --versus, the --predictions file name without extension). Use the names of "
                        "your runs against LFRQA so the leaderboard links the battles")
    parser.add_argument("--versus", metavar="FILE",
                        help="judge against this other system's prediction file instead of LFRQA, on the qids "
                             "both files answer (the order rule puts --predictions in the prediction's place)")
    parser.add_argument("--versus-name", metavar="NAME",
                        help="the --versus system's name (default: its file name without extension)")
    parser.add_argument("--references", metavar="FILE",
                        help="another benchmark's references instead of LFRQA's: JSONL (or Parquet) rows with qid, "
                             "question, answer and domain; named after the file (--references-name NAME)")
    parser.add_argument("--references-name", metavar="NAME", help="the --references side's name in the verdicts")
    parser.add_argument("--order", choices=ORDERS, default="paper",
                        help="answer order shown to the judge: 'paper' (the reference's rule: an even number of "
                             "words in the question shows the prediction first), 'random' (seeded per qid), "
                             "'both' (judge both orders; disagreement = tie, reported as position_flip_rate). "
                             "Default: paper")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the random order and of the bootstrap intervals (default: 0)")
    parser.add_argument("--max-input-tokens", type=int, metavar="N",
                        help="refuse (do not send; count the judgment as failed, with the reason) judge prompts "
                             "longer than N tokens, counted with tiktoken (default: no limit; an over-long prompt "
                             "rejected by the server also fails its pair)")
    parser.add_argument("--parse", choices=PARSES, default="strict",
                        help="how judge replies are read: 'strict' (default: only a <rating> tag holding 0, 1 or 2 "
                             "counts; a reply without one is asked once more, then the pair fails) or 'reference' "
                             "(as the paper's scripts read them: never re-asked, the first <rating>...digit...</rating> "
                             "span or else the whole reply, its highest of 0/1/2 wins, none is a tie). The summary "
                             "records the parse and, with 'reference', how many verdicts differ from strict parsing")
    # --cache-dir, --no-cache, --data-dir, --dry-run, --no-progress
    add_run_flags(parser, cache="judgment cache", cost="estimated cost")
    add_judge_scale_flags(parser)
    from rag_qa_arena.exchange import add_exchange_flags

    add_exchange_flags(parser, judge=True)
    parser.set_defaults(func=run_judge)


def import_results(args: argparse.Namespace, run, judge, match: dict | None = None) -> None:
    """``--import-results``: store the answers to this judge's requests (of ``match``, the run at hand, and of
    ``--export-dir``), say what was stored and what was refused."""
    from metric_arena.judge import exported_request_ids, import_judge_results, judge_request_ids

    if match is None and not args.export_dir:
        raise RagQaArenaError("--import-results without --predictions needs --export-dir DIR (the --export-requests "
                              "folder the results answer): only answers to requests exported for this judge are stored")
    expected = judge_request_ids([match], judge=judge, run=run, data_dir=args.data_dir) if match is not None else None
    if args.export_dir:
        exported = exported_request_ids(args.export_dir, judge=judge, run=run)
        expected = exported if expected is None else expected | exported
    counts = import_judge_results(args.import_results, expected=expected, run=run,
                                  accept_model_alias=args.accept_model_alias)
    errors = ", ".join(f"{k}: {v}" for k, v in counts["errors"].items())
    per_file = ", ".join(f"{name}: {n:,}" for name, n in counts["stored_per_file"].items()) or "none"
    print(f"imported {counts['n_answers']:,} answers from {len(counts['files'])} file(s) ({counts['n_valid']:,} with a "
          f"valid rating, {counts['n_invalid']:,} without, {counts['n_oversized']:,} cut at the size cap; stored per "
          f"file: {per_file}); {counts['n_errors']:,} failed lines{f' ({errors})' if errors else ''}", file=sys.stderr)
    why = {"unknown_ids": "have no cache key as custom_id (not from --export-requests)",
           "other_judge": "answer requests exported for another judge",
           "not_exported": "answer no request of this judge (not one of --predictions' requests, nor exported for "
                           "it in --export-dir)",
           "conflicting": "answer the same request twice with different ratings (neither kept)",
           "model_refused": "name another model than the one requested (pass --accept-model-alias if the server "
                            "aliases names)",
           "already_cached": "answer requests the cache already answers (kept as they were)"}
    for kind, text in why.items():
        if counts[f"n_{kind}"]:
            named = "; ".join(counts["examples"].get(kind, []))
            print(f"rag-qa-arena: warning: {counts[f'n_{kind}']:,} line(s) {text}: not stored"
                  f"{f' (e.g. {named})' if named else ''}", file=sys.stderr)
    if counts["n_model_alias"] and args.accept_model_alias:
        models = ", ".join(f"{m!r}: {n:,}" for m, n in counts["reply_models"].items())
        print(f"rag-qa-arena: warning: {counts['n_model_alias']:,} stored answer(s) name another model than the one "
              f"requested ({models}); the verdicts record it", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
def _system_name(out: str | None, name: str | None) -> str:
    if name:
        return name
    if out:
        return Path(out).resolve().name
    return "system"


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------
def run_judge(args: argparse.Namespace) -> int:
    from metric_arena.judge import (
        DEFAULT_JUDGE,
        format_estimate,
        judge_dry_run,
        judge_pairs,
        lfrqa_references,
        prepare_judge_inputs,
        read_references,
    )
    from rag_qa_arena import _options as scale
    from rag_qa_arena._options import (
        FATAL_EXIT,
        all_failed_message,
        check_backend_args,
        run_reporting_failures,
    )

    judges = args.judge or [DEFAULT_JUDGE]

    scale.check_judge_scale_args(args)
    if (args.export_dir or args.accept_model_alias) and not args.import_results:
        raise RagQaArenaError("--export-dir and --accept-model-alias go with --import-results FILE...")
    if args.batch_status:
        return run_batch_status(args)
    if args.import_results and not args.predictions:  # only the import: a tournament (or a later run) uses it
        import_results(args, scale.run_settings(args), scale.judge_settings(judges, args, build=False))
        return 0
    if not args.predictions:
        raise RagQaArenaError("--predictions FILE is required (the evaluated system's answers, JSONL)")
    if not args.dry_run and not args.out and not args.batch and not args.export_requests:
        raise RagQaArenaError("--out DIR is required (the run folder for verdicts.jsonl and summary.json), or use --dry-run")
    check_backend_args(args)
    from lfrqa.kernel import refuse_output_over_input

    refuse_output_over_input(("--out", args.out), [("--predictions", args.predictions), ("--versus", args.versus),
                                                   ("--references", args.references)],
                             written=RUN_FILES)
    if args.references_name and not args.references:
        raise RagQaArenaError("--references-name names the --references FILE: give --references too")
    references = (partial(read_references, args.references, name=args.references_name) if args.references
                  else partial(lfrqa_references, args.data_dir))  # the benchmark, read only when needed
    inputs = prepare_judge_inputs(args.predictions, references, versus=args.versus, versus_name=args.versus_name)
    if args.dry_run:  # (--batch/--batch-collect skip failed lines like the online run)
        inputs = inputs.without_failed()
    inputs = replace(inputs, sample=args.sample, target_width=args.target_width)
    n = len(inputs.predictions)
    if args.sample is not None and args.sample > n:
        print(f"rag-qa-arena: warning: --sample {args.sample:,} exceeds the {n:,} predictions: all "
              f"{n:,} are judged (summary.json: sample_judged)", file=sys.stderr)

    if args.dry_run:

        estimates = judge_dry_run(inputs, judge=scale.judge_settings(judges, args, build=False),
                                  run=scale.run_settings(args), data_dir=args.data_dir)
        n_pairs = n if args.sample is None else min(args.sample, n)
        print(f"dry run: {n_pairs:,} pairs{' (stratified sample)' if args.sample else ''}, order {args.order!r}"
              f"{', Batch API prices' if args.batch else ''}, nothing sent"
              f"{' (an upper bound: --target-width may stop earlier)' if args.target_width else ''}")
        print(format_estimate(estimates, batch=bool(args.batch)))
        return 0

    if args.export_requests:
        from rag_qa_arena.exchange import export_requests

        return export_requests(args, [inputs], scale.judge_settings(judges, args, build=False), scale.run_settings(args))
    if args.import_results:
        import_results(args, scale.run_settings(args), scale.judge_settings(judges, args, build=False), inputs)
    # Against LFRQA the system is named after the run folder; in a --versus run the folder holds a
    # pair, so both sides default to their prediction files' names.
    system = args.name or Path(args.predictions).stem if args.versus else _system_name(args.out, args.name)
    from metric_arena.judge import RunOutput, check_system_names

    check_system_names(system, inputs.opponent)
    inputs = replace(inputs, system=system)
    if args.batch or args.batch_collect:
        code = run_batch_step(args, inputs, judges=judges)
        if code is not None:
            return code
    result = run_reporting_failures(
        lambda: judge_pairs(
            inputs, judge=scale.judge_settings(judges, args), run=scale.run_settings(args), out=args.out,
            output=RunOutput(progress=not args.no_progress and sys.stderr.isatty(), overwrite=args.overwrite),
            data_dir=args.data_dir,
        ),
        stopped=f"Verdicts finished before the error are in {args.out}/verdicts.jsonl; answers are cached.",
        where=args.out,
        kept="Judgments so far are cached: free space or choose another --out, then re-run.",
    )
    if isinstance(result, int):
        return result
    _print_summary(result, args.out)
    failed = all_failed_message(result, args.base_url, items="pairs", where=f"{args.out}/verdicts.jsonl")
    if failed:
        print(failed, file=sys.stderr)
        return FATAL_EXIT
    print(_next_step(args.out))
    return 0


def _print_summary(result: dict, out: str) -> None:
    def pct(value) -> str:
        return "n/a" if value is None or value != value else f"{100 * value:.1f}%"

    def ci(values) -> str:
        return "" if not values or values[0] != values[0] else f" [{100 * values[0]:.1f}, {100 * values[1]:.1f}]"

    lines = [
        f"{result['system']} vs {result['opponent']} judged by {', '.join(result['judges'])} (order {result['order']})",
        f"  pairs {result['n']:,}, failed {result['n_failed']:,}, requests sent {result['n_sent']:,}, "
        f"from cache {result['n_cached']:,}",
        f"  win {pct(result['win_rate'])}{ci(result['win_rate_ci'])}  tie {pct(result['tie_rate'])}  "
        f"loss {pct(result['loss_rate'])}  win+tie {pct(result['win_tie_rate'])}{ci(result['win_tie_rate_ci'])}",
    ]
    if result.get("no_answer_rate") is not None:
        lines.append(f"  no-answer rate {pct(result['no_answer_rate'])}")
    if result.get("parse") == "reference":
        lines.append(f"  parse 'reference': {result['n_differ_from_strict']:,} verdict(s) differ from strict parsing "
                     f"({result['n_failed_if_strict']:,} of them would fail)")
    if "position_flip_rate" in result:
        lines.append(f"  position flip rate {pct(result['position_flip_rate'])}")
    from rag_qa_arena._options import injection_lines, stop_note

    lines.extend(stop_note(result))
    lines.extend(injection_lines(result.get("injection")))
    for domain, part in result.get("per_domain", {}).items():
        lines.append(f"  {domain:<12} n {part['n']:>6,}  win {pct(part['win_rate']):>6}  win+tie {pct(part['win_tie_rate']):>6}")
    if result.get("errors"):
        lines.append("  errors " + ", ".join(f"{k}: {v}" for k, v in result["errors"].items()))
    if result.get("imports", {}).get("n_judgments"):
        files = ", ".join(f"{name}: {n:,}" for name, n in result["imports"]["files"].items())
        lines.append(f"  imported judgments {result['imports']['n_judgments']:,} ({files})")
    lines.append(f"  written to {out}/verdicts.jsonl and {out}/summary.json")
    print("\n".join(lines))
    for spec, endpoint in result.get("endpoints", {}).items():
        for replica in endpoint["replicas"]:
            if replica["flagged"]:
                print(f"rag-qa-arena: warning: replica {replica['url']} of {spec} {replica['flagged']}: taken out, "
                      f"its {replica['n_discarded']:,} answer(s) not used (re-sent to the other replicas)",
                      file=sys.stderr)


def _next_step(out: str) -> str:
    """The report of the run folders beside ``out``, written beside them (never among them)."""
    import os

    folder = os.path.normpath(out)
    parent = os.path.dirname(folder)
    if not parent:
        return f"next: rag-qa-arena report {folder} --out leaderboard"
    return f"next: rag-qa-arena report {os.path.join(parent, '*')} --out {parent}-leaderboard"


# --------------------------------------------------------------------------------------------
# The OpenAI Batch API steps (--batch, --batch-status, --batch-collect)
# --------------------------------------------------------------------------------------------
def run_batch_status(args: argparse.Namespace) -> int:
    """``--batch-status DIR``: one line per request file."""
    from metric_arena.judge import judge_batch_status
    from metric_arena.llm.batch import TERMINAL_STATUSES

    rows_by_judge = _api_call(lambda: judge_batch_status(args.batch_status, run=run_settings(args)), api_key(args))
    if isinstance(rows_by_judge, int):
        return rows_by_judge
    ended = True
    for judge, rows in rows_by_judge.items():
        print(f"judge {judge}")
        for row in rows:
            counts = row["request_counts"] or {}
            done = f"{counts.get('completed', 0):,}/{counts.get('total', row['n_requests']):,} done" if counts else ""
            failed = f", {counts['failed']:,} failed" if counts.get("failed") else ""
            print(f"  {row['file']}  {row['batch_id'] or '-'}  {row['status']}  {done}{failed}")
            for error in row["errors"]:
                print(f"    error: {error}")
            ended = ended and row["status"] in TERMINAL_STATUSES
    if ended:
        print(f"all batches ended: finish the run with the same command and --batch-collect {args.batch_status}")
    return 0


def run_batch_step(args: argparse.Namespace, inputs, *, judges) -> int | None:
    """``--batch DIR`` (write + submit; returns the exit code) or the collection step of
    ``--batch-collect DIR`` (returns None: the caller then runs the judge, which finds the answers
    in the cache). Returns an exit code when the run cannot go on."""
    from metric_arena.judge import collect_judge_batch, submit_judge_batch
    from metric_arena.llm.batch import BatchNotReady

    if args.batch:
        result = _api_call(lambda: submit_judge_batch(
            inputs, args.batch, judge=judge_settings(judges, args, build=False), run=run_settings(args),
            data_dir=args.data_dir), api_key(args))
        if isinstance(result, int):
            return result
        for judge in result["judges"]:
            print(f"judge {judge['judge']}: {judge['n_requests']:,} requests to send "
                  f"({judge['n_reasks']:,} of them re-asks), {judge['n_cached']:,} already answered in the cache"
                  + (f", {judge['n_refused']:,} over --max-input-tokens (not sent)" if judge["n_refused"] else ""))
            for path, batch_id in zip(judge["files"], judge["batch_ids"]):
                print(f"  {path} -> batch {batch_id}")
        if result["n_requests"] == 0:
            print("nothing to send: the cache answers every request; run the same command without --batch")
            return 0
        print(f"submitted. Check with --batch-status {args.batch}; once ended, run the same command with "
              f"--batch-collect {args.batch} --out DIR")
        return 0
    if not args.out:
        raise RagQaArenaError("--batch-collect finishes the judge run: give --out DIR for verdicts.jsonl and summary.json")
    try:
        counts = _api_call(lambda: collect_judge_batch(args.batch_collect, run=run_settings(args)), api_key(args))
    except BatchNotReady as error:
        print(f"rag-qa-arena: {error}", file=sys.stderr)
        return BATCH_NOT_READY_EXIT
    if isinstance(counts, int):
        return counts
    errors = ", ".join(f"{code}: {n}" for code, n in counts["errors"].items())
    print(f"collected {counts['n_answers']:,} answers into the cache ({counts['n_valid']:,} with a valid rating, "
          f"{counts['n_invalid']:,} without: {'failed' if args.batch_only else 're-asked online'}); "
          f"{counts['n_errors']:,} requests failed in the batch{f' ({errors})' if errors else ''}"
          f"{' and are failed' if args.batch_only else ' and are asked online'}")
    return None


def _api_call(call, key: str | None):
    """Run a Files/Batches API call; auth errors exit 3 and other API errors exit 2, with the server's words."""
    import openai

    from metric_arena.llm import redact

    try:
        return call()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        print(f"rag-qa-arena: error: the Batch API refused the credentials (HTTP {error.status_code}): "
              f"{redact(error.message, key)}. Check OPENAI_API_KEY", file=sys.stderr)
        return 3
    except openai.APIStatusError as error:
        print(f"rag-qa-arena: error: the Batch API answered HTTP {error.status_code}: "
              f"{redact(error.message, key)}", file=sys.stderr)
        return 2
    except openai.APIConnectionError as error:
        print(f"rag-qa-arena: error: cannot reach the Batch API ({type(error).__name__}); check --base-url and the "
              "network, then run the same command again (nothing is submitted twice)", file=sys.stderr)
        return 2
