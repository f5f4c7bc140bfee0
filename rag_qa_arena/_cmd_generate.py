"""``rag-qa-arena generate``: answer retrieved questions with an LLM and the paper's prompt.

A thin layer over :func:`metric_arena.generate._run.generate_answers` (and
:func:`metric_arena.generate._run.generation_dry_run` for ``--dry-run``).
"""

from __future__ import annotations

import argparse
import os
import sys

from lfrqa.errors import RagQaArenaError

_EPILOG = """\
input (--retrieved): the JSON Lines `rag-qa-arena retrieve` writes, one
{"qid", "domain", "question", "passages": [{"pid", "doc_id", "text", "score", "rank"}]} per line,
or the same rows as a Parquet file or a folder saved by datasets' Dataset.save_to_disk.

output (--out): one line per question, written as each answer arrives:
{"qid", "domain", "question", "answer", "raw", "model", "prompt", "passages": [pids],
 "finish_reason", "failed"}; "answer" is "raw" cleaned as the reference implementation does
(no <thinking> block, no "Answer:"). A question without a reply after retries is written with
"failed": true and "answer": null (never "I couldn't find an answer."); `judge` counts it as a
failed pair. Replies cut at --max-tokens keep "finish_reason": "length". Counts go to
<out stem>.summary.json. Running the same command again resumes: answered lines are kept,
failed ones are asked again, the rest come from the cache or the model.

exit codes: 0 done (see the failed count), 2 bad input, an output written by another run right
now, or an output folder not writable, 3 key rejected, model not found or server unreachable
(the run stops at once; answers so far are kept), or every question failed.

examples:
  rag-qa-arena generate --retrieved runs/fiqa.bm25.jsonl --model openai:gpt-4o --prompt v2 \\
      --out runs/fiqa.gpt-4o.jsonl
  rag-qa-arena generate --retrieved runs/fiqa.bm25.jsonl --model openai:gpt-4o --dry-run
  rag-qa-arena generate --retrieved runs/fiqa.bm25.jsonl --model openai:meta-llama/Llama-3.1-8B-Instruct \\
      --base-url http://localhost:8000/v1 --out runs/fiqa.llama.jsonl
  rag-qa-arena generate --retrieved runs/fiqa.bm25.jsonl --model hf:Qwen/Qwen2.5-0.5B-Instruct \\
      --batch-size 16 --out runs/fiqa.qwen.jsonl
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from metric_arena.prompts import GENERATION_PROMPTS
    from rag_qa_arena._options import (
        add_backend_flags,
        add_rate_limit_flags,
        add_run_flags,
        add_tensor_parallel_flag,
    )

    parser = subparsers.add_parser(
        "generate",
        help="Answer retrieved questions with an LLM, using the paper's answer-generation prompt.",
        description=(
            "Answer each retrieved question with an LLM using the RAG-QA Arena answer-generation prompt "
            "(the pinned template, passages rendered as the reference implementation renders them, one user "
            "message, greedy decoding), and write the answers as a prediction file for `rag-qa-arena judge`."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--retrieved", required=True, metavar="FILE|NAME",
                        help="the `retrieve` output: JSONL with qid, question and ranked passages per line "
                             "(or the same rows as a Parquet file or a saved datasets.Dataset folder), or the NAME "
                             "of a config retrieved-NAME of the exported dataset folder --dataset")
    parser.add_argument("--dataset", metavar="FOLDER|ORG/NAME",
                        help="an exported LFRQA folder (`data export --retrieved NAME=FILE`), or the Hub dataset it "
                             "was pushed to, whose retrieved-NAME config --retrieved NAME names (default: the "
                             "current folder)")
    parser.add_argument("--model", required=True, metavar="BACKEND:MODEL",
                        help="the answering model as '<backend>:<model>': openai:MODEL (any OpenAI-compatible "
                             "server), hf:PATH_OR_HUB_ID (local transformers chat model), vllm:MODEL")
    parser.add_argument("--prompt", choices=GENERATION_PROMPTS, default="v1",
                        help="prompt version: v1 asks for step-by-step <thinking> before the answer; v2 does not "
                             "(the paper's choice for GPT-4o); cite is OURS, not the paper's: it asks for [k] "
                             "markers into the numbered passages after each sentence (score them with "
                             "`rag-qa-arena cite`). Default: v1")
    parser.add_argument("--passages", type=int, default=5, metavar="N",
                        help="top-ranked passages shown per question (default: 5, as in the paper)")
    parser.add_argument("--limit", type=int, metavar="N",
                        help="only the first N questions of --retrieved, in the file's order (LFRQA's, as "
                             "`retrieve` writes it): the same N gives the same questions, a larger N resumes --out")
    parser.add_argument("--out", metavar="FILE",
                        help="output JSONL of answers (required unless --dry-run); resumed if it exists")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out instead of resuming it")
    add_backend_flags(parser, "models")  # --base-url, --api-key, --max-concurrency, --timeout
    parser.add_argument("--max-tokens", type=int, default=256, metavar="N",
                        help="longest answer in tokens; longer ones are cut and marked finish_reason "
                             "'length' (default: 256, as the reference)")
    parser.add_argument("--max-input-tokens", type=int, metavar="N",
                        help="refuse (do not send, record as failed with the reason) prompts longer than N "
                             "tokens, counted with tiktoken (default: no limit; the server's own limit applies)")
    parser.add_argument("--batch-size", type=int, metavar="N",
                        help="hf models: prompts generated together on the device (default: 8)")
    parser.add_argument("--device", metavar="DEVICE",
                        help="hf models: torch device, e.g. cuda, cuda:1, cpu (default: cuda if available)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="hf/vllm models: run Python code shipped with the model (off by default: only for "
                             "models you trust)")
    # --cache-dir, --no-cache, --data-dir, --dry-run, --no-progress
    add_run_flags(parser, cache="completion cache", cost="the expected cost and its max_tokens bound")
    add_rate_limit_flags(parser)  # --rpm, --tpm
    add_tensor_parallel_flag(parser)
    parser.set_defaults(func=run_generate)


def _backend_options(args: argparse.Namespace) -> dict:
    from metric_arena.llm import HF, OPENAI, VLLM, parse_spec

    backend, _ = parse_spec(args.model)
    options: dict = {}
    local = {"batch_size": args.batch_size, "device": args.device}
    if backend == OPENAI:
        given = [f"--{k.replace('_', '-')}" for k, v in local.items() if v is not None]
        if args.trust_remote_code:
            given.append("--trust-remote-code")
        if args.tensor_parallel_size is not None:
            given.append("--tensor-parallel-size")
        if given:
            raise RagQaArenaError(f"{', '.join(given)} apply to hf/vllm models, not to {args.model!r}")
        return options
    if args.base_url or args.api_key:
        raise RagQaArenaError(f"--base-url/--api-key apply to openai models, not to {args.model!r}")
    if backend == HF:
        options.update({k: v for k, v in local.items() if v is not None})
    elif args.batch_size is not None or args.device is not None:
        raise RagQaArenaError(f"--batch-size/--device apply to hf models, not to {args.model!r}")
    if args.tensor_parallel_size is not None:
        if backend != VLLM:
            raise RagQaArenaError(f"--tensor-parallel-size applies to vllm models, not to {args.model!r}")
        if args.tensor_parallel_size < 1:
            raise RagQaArenaError(f"--tensor-parallel-size must be >= 1, got {args.tensor_parallel_size}")
        options["tensor_parallel_size"] = args.tensor_parallel_size
    if args.trust_remote_code:
        options["trust_remote_code"] = True
    return options


def run_generate(args: argparse.Namespace) -> int:
    from metric_arena.generate import (
        GenerationConfig,
        RunOutput,
        format_generation_estimate,
        generate_answers,
        generation_dry_run,
    )
    from rag_qa_arena._options import (
        FATAL_EXIT,
        all_failed_message,
        check_backend_args,
        run_reporting_failures,
        run_settings,
    )

    if not args.dry_run and not args.out:
        raise RagQaArenaError("--out FILE is required (the answers' JSONL file), or use --dry-run")
    check_backend_args(args)
    for flag, value in (("--passages", args.passages), ("--max-tokens", args.max_tokens),
                        ("--max-input-tokens", args.max_input_tokens), ("--batch-size", args.batch_size),
                        ("--limit", args.limit)):
        if value is not None and value < 1:
            raise RagQaArenaError(f"{flag} must be >= 1, got {value}")
    generation = GenerationConfig(prompt=args.prompt, n_passages=args.passages, max_tokens=args.max_tokens,
                                  max_input_tokens=args.max_input_tokens, options=_backend_options(args) or None)
    run = run_settings(args)
    from builders import resolve_retrieved

    args.retrieved = str(resolve_retrieved(args.retrieved, dataset=args.dataset))

    if args.dry_run:
        estimate = generation_dry_run(args.retrieved, args.model, generation=generation, run=run,
                                      data_dir=args.data_dir, limit=args.limit)
        print(f"dry run: {estimate.n_requests:,} questions, prompt {args.prompt}, {args.passages} passages, "
              "nothing sent")
        print(format_generation_estimate(estimate))
        return 0

    result = run_reporting_failures(
        lambda: generate_answers(
            args.retrieved, args.model, generation=generation, run=run, out=args.out,
            output=RunOutput(overwrite=args.overwrite, progress=not args.no_progress and sys.stderr.isatty()),
            data_dir=args.data_dir, limit=args.limit,
        ),
        stopped=f"Answers finished before the error are in {args.out}; re-run the same command to resume.",
        where=os.path.dirname(os.path.abspath(args.out)),
        kept="Answers written so far are kept and cached; free space or choose another --out, then re-run.",
    )
    if isinstance(result, int):
        return result
    _print_summary(result)
    failed = all_failed_message(result, args.base_url, items="questions", where=args.out)
    if failed:
        print(failed, file=sys.stderr)
        return FATAL_EXIT
    print(f"next: rag-qa-arena judge --predictions {args.out} --judge BACKEND:MODEL --out runs/NAME")
    if args.prompt == "cite":
        print(f"      rag-qa-arena cite --predictions {args.out} --retrieved {args.retrieved} --out runs/NAME.cite")
    return 0


def _print_summary(result: dict) -> None:
    lines = [
        f"{result['model']} (prompt {result['prompt']}, {result['n_passages']} passages): {result['n']:,} questions",
        f"  answered {result['n_answered']:,}, failed {result['n_failed']:,}, truncated {result['n_truncated']:,}, "
        f"no answer {result['n_no_answer']:,}, resumed {result['n_resumed']:,}",
        f"  requests sent {result['n_sent']:,}, from cache {result['n_cached']:,}",
    ]
    if result.get("n_neutralized"):
        lines.append(f"  prompt delimiters defused in {result['n_neutralized']:,} inputs")
    if result.get("errors"):
        lines.append("  errors " + ", ".join(f"{k}: {v}" for k, v in result["errors"].items()))
    out = result.get("out")
    if out:
        from metric_arena.generate import summary_path

        lines.append(f"  written to {out} and {summary_path(out)}")
    print("\n".join(lines))
