"""``rag-qa-arena cite``: score the citations of a prediction file against LFRQA's human citations (and, with
``--entailment``, ALCE's support and citation precision) into a run folder. A thin layer over
:func:`metric_arena.citations.cite` and :func:`metric_arena.citations.cite_dry_run`."""

from __future__ import annotations

import argparse

from lfrqa.errors import RagQaArenaError

_EPILOG = """\
inputs: --predictions, the answers (`generate --prompt cite` writes them; any JSONL/Parquet with qid and
answer works); citations are read from [k] markers in the answer ([1], [1, 3], [1][2]; k counts the
passages shown, from 1) or from an explicit "sentences": [{"text", "citations"}] field. --retrieved, the
retrieved file the answers were generated from: it maps passage k to its pid, document and text.

output (--out DIR): citations.jsonl (one row per answer: sentences, cited documents, scores) and
summary.json (means with bootstrap intervals, notes). Re-running resumes; another --system,
--entailment or --passages into the same folder is refused (or --overwrite).

scores: reference_recall / reference_precision (the documents LFRQA's own answer cites),
gold_precision (all the question's gold documents), uncited (share of sentences without a marker),
invalid (share of markers naming no passage); with --entailment: support, citation_recall and
citation_precision as ALCE defines them. An answer without markers gets a note, not zeros.

exit codes: 0 done, 2 bad input (a retrieved file lacking a cited passage, a folder of another design),
3 entailment server unreachable or key rejected (rows scored so far are kept).

examples:
  rag-qa-arena cite --predictions runs/fiqa.cite.jsonl --retrieved runs/fiqa.bm25.jsonl --out runs/fiqa.cite
  rag-qa-arena cite --predictions runs/fiqa.cite.jsonl --retrieved runs/fiqa.bm25.jsonl --out runs/fiqa.cite.nli \\
      --entailment nli:cross-encoder/nli-deberta-v3-xsmall
  rag-qa-arena cite --predictions runs/fiqa.cite.jsonl --retrieved runs/fiqa.bm25.jsonl --out runs/fiqa.cite.llm \\
      --entailment llm:openai:gpt-4o-mini --dry-run
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from rag_qa_arena._options import add_backend_flags, add_rate_limit_flags, add_run_flags

    parser = subparsers.add_parser(
        "cite", help="Score answers' citations against LFRQA's human citations (and ALCE's support).",
        description="Score the [k] citations of each answer: the documents it cites against those LFRQA's own "
                    "answer cites, and (with --entailment) whether the cited passages entail each sentence.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--predictions", required=True, metavar="FILE", help="the answers (JSONL or Parquet)")
    parser.add_argument("--retrieved", required=True, metavar="FILE",
                        help="the retrieved file the answers were generated from (passage order, pids, texts)")
    parser.add_argument("--out", metavar="DIR", help="the run folder (required unless --dry-run); resumed if it exists")
    parser.add_argument("--system", metavar="NAME",
                        help="the system's name in the rows (default: the predictions' model, else the file name)")
    parser.add_argument("--entailment", metavar="SPEC",
                        help="nli:PATH_OR_HUB_ID (a transformers NLI checkpoint with an 'entailment' label) or "
                             "llm:BACKEND:MODEL (our entailment prompt through the LLM backends); default: none, "
                             "only the reference scores")
    parser.add_argument("--passages", type=int, default=5, metavar="N",
                        help="passages shown per question, for predictions without a 'passages' list (default: 5)")
    parser.add_argument("--device", metavar="DEVICE", help="nli: torch device (default: cuda if available)")
    parser.add_argument("--overwrite", action="store_true", help="replace a run folder of another design")
    add_backend_flags(parser, "entailment models")
    add_run_flags(parser, cache="completion cache", cost="the LLM entailment path's expected cost")
    add_rate_limit_flags(parser)
    parser.set_defaults(func=run_cite)


def run_cite(args: argparse.Namespace) -> int:
    from metric_arena.citations import CiteConfig, cite, cite_dry_run
    from rag_qa_arena._options import check_backend_args, run_reporting_failures, run_settings

    if not args.dry_run and not args.out:
        raise RagQaArenaError("--out DIR is required (the run folder), or use --dry-run")
    check_backend_args(args)
    options = {"device": args.device} if args.device else None
    config = CiteConfig(system=args.system, entailment=args.entailment, n_passages=args.passages, options=options)
    run = run_settings(args)
    if args.dry_run:
        estimate = cite_dry_run(args.predictions, args.retrieved, config=config, run=run)
        needed, most = estimate["needed"], estimate["at_most"]
        print(f"dry run: {args.entailment}, nothing sent")
        print(f"  requests: {needed.n_requests:,} needed ({needed.n_cached:,} cached), at most {most.n_requests:,} "
              "(ALCE's precision asks again for sentences citing several passages)")
        print(f"  input tokens: {needed.input_tokens:,} needed, at most {most.input_tokens:,}")
        if needed.cost_usd is None:
            print(f"  cost: unknown for model {needed.model!r}")
            print("estimated_cost_usd: nan")
        else:
            print(f"  cost: ~${needed.cost_usd:,.4f} needed, at most ${most.cost_usd_max:,.4f}")
            print(f"estimated_cost_usd: {needed.cost_usd:.4f}")
        return 0
    result = run_reporting_failures(
        lambda: cite(args.predictions, args.retrieved, out=args.out, config=config, run=run,
                     overwrite=args.overwrite, data_dir=args.data_dir),
        stopped=f"Rows scored before the error are in {args.out}; re-run the same command to resume.",
        where=args.out, kept="Rows scored so far are kept; free space or choose another --out, then re-run.")
    if isinstance(result, int):
        return result
    _print_summary(result)
    return 0


def _print_summary(result: dict) -> None:
    from metric_arena.citations import CITATION_FIELDS

    print(f"{result['system']}: {result['n']:,} answers, {result['n_without_citations']:,} without citations, "
          f"{result['n_failed']:,} failed, {result['n_invalid_markers']:,} invalid markers, "
          f"resumed {result['n_resumed']:,} (entailment: {result['entailment'] or 'none'})")
    for field in CITATION_FIELDS:
        est = result["fields"].get(field.name) or {}
        if est.get("value") is None:
            continue
        interval = f" [{est['low']:.3f}, {est['high']:.3f}]" if est.get("low") is not None else ""
        print(f"  {field.label:<30} {est['value']:.3f}{interval}  (n={est['n']:,})")
    for note in result["notes"]:
        print(f"  note: {note}")
    print(f"  written to {result['out']}")
