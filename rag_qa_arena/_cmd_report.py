"""``rag-qa-arena report``: the arena leaderboard from judged run folders; ``calibrate``: a judge card."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from rag_qa_arena._options import confidence_level, decimal, positive_int, print_table
from rag_qa_arena._options import seed as seed_type
from rag_qa_arena.terminal import analysis_tables, elo_study_table, leaderboard_table, metric_tables
from metric_arena.records import LEADERBOARD_FILE, REPORT_FILE, RUN_FILES

_DESCRIPTION = """\
Build the RAG-QA Arena leaderboard from run folders written by `rag-qa-arena judge --out DIR`.

For every system: win and win+tie rates against LFRQA overall and per domain (the paper's Table 3)
and a Bradley-Terry rating on the Elo scale fitted on all judged pairs, system vs LFRQA and system
vs system (`judge --versus`), with LFRQA fixed at 1000 (the paper's Table 5). Intervals are seeded
percentile bootstrap intervals. Adjacent systems are compared on their shared queries (paired
bootstrap interval and exact sign test).

Also: systems judged on different questions are flagged as not directly comparable; the share of
"I couldn't find an answer" replies per system and domain, the rates with and without those
pairs, and the leaderboard rebuilt without them (the paper's Tables 9 and 5); with --retrieved,
per system and domain, how often the passages held a gold document and the rates split by it.
Length: words per answer (and LFRQA's), how often the longer answer wins, rates by length ratio to
LFRQA's answer, length-controlled rates (at equal length) and style-controlled ratings; runs judged
before lengths were recorded are back-filled with --predictions SYSTEM=FILE.

Writes to OUT: leaderboard.json (one entry per system), report.json (everything), win_rates.png, ratings.png,
length_ratio.png, win_matrix.png and leaderboard.html (one self-contained file, offline, with a verdict viewer).
"""

_EPILOG = """\
examples:
  rag-qa-arena report runs/* --out leaderboard/
  rag-qa-arena report runs/gpt-4o runs/llama-3 runs/gpt-4o-vs-llama-3 --out lb/ --n-boot 2000
  rag-qa-arena report runs/* --out lb/ --human-labels human.jsonl --agreement-judge openai:gpt-4o
  rag-qa-arena report runs/* --out lb/ --retrieved fiqa.colbert.jsonl science.colbert.jsonl
  rag-qa-arena report runs/* --out lb/ --retrieved gpt-4o=colbert.jsonl bm25-gpt-4o=bm25.jsonl

human labels (JSONL): {"qid": ..., "system_a": ..., "system_b": ..., "label": 1 | 2 | 0}
  1 (or "win") = system_a's answer is better, 2 (or "loss") = system_b's, 0 (or "tie") = neither.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from metric_arena.records import REFERENCE

    parser = subparsers.add_parser(
        "report",
        help="Build the leaderboard (JSON, terminal table, plots, HTML) from judged run folders.",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders written by `rag-qa-arena judge --out`")
    parser.add_argument("--out", required=True, metavar="OUT", help="folder to write the report to (created if missing)")
    parser.add_argument("--reference", default=REFERENCE, help="name of the reference system, fixed at rating 1000 (default: LFRQA)")
    parser.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap rounds for every interval (default: 1000)")
    parser.add_argument("--seed", type=seed_type, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--confidence", type=confidence_level, default=0.95, help="interval coverage (default: 0.95)")
    parser.add_argument("--human-labels", metavar="FILE", help="JSONL of human pairwise labels: adds Cohen's kappa and Pearson r")
    parser.add_argument(
        "--agreement-judge", metavar="NAME",
        help="judge to compare with the human labels, e.g. openai:gpt-4o (default: each pair's majority verdict)",
    )
    parser.add_argument(
        "--retrieved", nargs="+", metavar="[SYSTEM=]FILE",
        help="the files `rag-qa-arena retrieve` wrote (JSONL, Parquet or a saved Dataset), one or more (e.g. one "
             "per domain): adds the retrieval-aware analysis. FILE serves every system; SYSTEM=FILE one system",
    )
    parser.add_argument("--data-dir", metavar="DIR",
                        help="LFRQA's pinned files, for the gold documents of --retrieved (default: $LFRQA_DATA_DIR, "
                             "else the checksummed download)")
    parser.add_argument(
        "--predictions", nargs="+", metavar="SYSTEM=FILE",
        help="the systems' prediction files: their answers (and questions) are shown in the page's verdict viewer, "
             "and verdicts of runs that predate recorded answer lengths are back-filled (LFRQA's from --data-dir)",
    )
    parser.add_argument("--no-texts", action="store_true", help="the verdict viewer without LFRQA's questions and answers (not loaded)")
    parser.add_argument("--viewer-chars", type=positive_int, default=40_000_000, metavar="N", help="the most characters of text the page's verdict viewer holds, texts cut to fit (default: 40,000,000)")
    parser.add_argument("--style-features", default="words", metavar="SET",
                        help="features of the style-controlled ratings: 'words' (default: whitespace words and one "
                             "markdown total) or 'fastchat' (FastChat's compute_style_control: tokens, headers, "
                             "lists, bold, on the battles file's rows)")
    parser.add_argument("--title", default="RAG-QA Arena leaderboard", help="title of the HTML page")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots (the HTML then has none)")
    parser.add_argument("--format", choices=("text", "markdown"), default="text",
                        help="what to print: text tables (default) or markdown (the leaderboard with intervals and "
                             "per-domain rates, for $GITHUB_STEP_SUMMARY or a pull-request comment)")
    parser.add_argument("--battles", metavar="FILE",
                        help="also write every battle to FILE (.jsonl or .parquet): model_a, model_b, winner, qid, "
                             "domain, judge, first_shown, as Chatbot-Arena-style notebooks read them, then words_a, words_b, "
                             "tokens_a, ... (each answer's length and style)")
    parser.set_defaults(func=_run)

#: What `report` writes into --out.
_REPORT_FILES = (LEADERBOARD_FILE, REPORT_FILE, "ratings.png", "win_rates.png", "length_ratio.png", "win_matrix.png",
                 "leaderboard.html")
#: What a run folder holds that `report` reads.
_RUN_FILES = RUN_FILES


def _refuse_outputs_over_inputs(args: argparse.Namespace) -> None:
    """--out and --battles never write over a run folder's files, --human-labels or --retrieved."""
    from lfrqa.kernel import refuse_output_over_input

    inputs = [("RUN_DIR", Path(run) / name) for run in args.runs for name in _RUN_FILES]
    inputs += [("--human-labels", args.human_labels)]
    inputs += [("--retrieved", item.partition("=")[2] if "=" in item and not Path(item).exists() else item)
               for item in args.retrieved or []]
    refuse_output_over_input(("--out", args.out), inputs, written=_REPORT_FILES)
    refuse_output_over_input(("--battles", args.battles), inputs + [("--out", Path(args.out) / name)
                                                                      for name in _REPORT_FILES])


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from metric_arena.report import ReportAnalyses, ViewerOptions, backfill_styles, load_runs, write_report
    from metric_arena.stats import Intervals
    from metric_arena.style import check_style_features

    check_style_features(args.style_features)
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise RagQaArenaError(f"--out {args.out} is a file: give a folder for the report (created if missing)")
    _refuse_outputs_over_inputs(args)
    from metric_arena.report.sections import metric_only_folders

    paths, scored = metric_only_folders(args.runs)  # e.g. `cite` folders: their metric's section only
    runs, skipped = load_runs(paths, lean=True)  # what the report counts, not the judges' reply texts
    backfill_styles(runs, predictions=_named_files(args.predictions), reference=args.reference,
                    data_dir=args.data_dir)
    err = Console(stderr=True)
    tasks: dict[str, int] = {}
    with Progress(
        TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    ) as bar:

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        board = write_report(
            runs + scored,
            args.out,
            reference=args.reference,
            intervals=Intervals(n_boot=args.n_boot, seed=args.seed, confidence=args.confidence),
            analyses=ReportAnalyses(human_labels=args.human_labels, agreement_judge=args.agreement_judge,
                                    retrieved=args.retrieved, style_features=args.style_features,
                                    plots=not args.no_plots, title=args.title),
            progress=progress,
            data_dir=args.data_dir,
            viewer=ViewerOptions(predictions=_named_files(args.predictions), reference_texts=not args.no_texts, max_total_chars=args.viewer_chars),
        )
    from rag_qa_arena._options import injection_lines

    out = Console()
    if args.format == "markdown":
        from metric_arena.report.markdown import leaderboard_markdown

        from metric_arena.report.sections import sections_markdown

        print(leaderboard_markdown(board, notes=injection_lines(board.injection, indent="")), end="")
        print(sections_markdown(board.metrics), end="")
        out = Console(stderr=True)  # the other tables go to stderr: stdout holds the Markdown alone
    print_table(out, leaderboard_table(board))
    if board.elo_study:
        print_table(out, elo_study_table(board))
    if args.battles:
        from metric_arena.report import write_battles

        n = write_battles(runs, args.battles)
        print(f"Wrote {n:,} battles to {args.battles}", file=sys.stderr)
    for table in [*analysis_tables(board), *metric_tables(board.metrics)]:
        print_table(out, table)
    if board.agreement:
        a = board.agreement
        out.print(
            f"Agreement with human labels ({a['judge']}): n={a['n']}, Cohen's kappa={decimal(a['kappa'], 3)}, "
            f"Pearson r={decimal(a['pearson'], 3)}"
        )
    for line in injection_lines(board.injection, indent=""):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    for warning in skipped + board.warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False, markup=True, soft_wrap=True)
    folder = Path(args.out)
    written = [p for p in _REPORT_FILES if (folder / p).exists()]
    print(f"Wrote {', '.join(str(folder / p) for p in written)}", file=sys.stderr)
    return 0


def _named_files(items: list[str] | None) -> dict[str, str]:
    named = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise RagQaArenaError(f"--predictions {item!r}: give SYSTEM=FILE, the system's name as in its run "
                                  "folder and the prediction file it was judged on")
        named[name] = path
    return named
