"""``rag-qa-arena report``: the arena leaderboard from judged run folders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError

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

Writes to OUT: leaderboard.json (one entry per system), report.json (everything), win_rates.png,
ratings.png and leaderboard.html (one self-contained file: open it in any browser, offline).
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
    parser = subparsers.add_parser(
        "report",
        help="Build the leaderboard (JSON, terminal table, plots, HTML) from judged run folders.",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders written by `rag-qa-arena judge --out`")
    parser.add_argument("--out", required=True, metavar="OUT", help="folder to write the report to (created if missing)")
    parser.add_argument("--reference", default="LFRQA", help="name of the reference system, fixed at rating 1000 (default: LFRQA)")
    parser.add_argument("--n-boot", type=_positive_int, default=1000, help="bootstrap rounds for every interval (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--confidence", type=_confidence, default=0.95, help="interval coverage (default: 0.95)")
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
    parser.add_argument("--title", default="RAG-QA Arena leaderboard", help="title of the HTML page")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots (the HTML then has none)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from metric_arena.report import write_report

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise RagQaArenaError(f"--out {args.out} is a file: give a folder for the report (created if missing)")
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
            args.runs,
            args.out,
            reference=args.reference,
            n_boot=args.n_boot,
            seed=args.seed,
            confidence=args.confidence,
            human_labels=args.human_labels,
            agreement_judge=args.agreement_judge,
            title=args.title,
            plots=not args.no_plots,
            progress=progress,
            retrieved=args.retrieved,
            data_dir=args.data_dir,
        )
    out = Console()
    out.print(leaderboard_table(board))
    from rag_qa_arena._report_tables import analysis_tables

    for table in analysis_tables(board):
        out.print(table)
    if board.agreement:
        a = board.agreement
        out.print(
            f"Agreement with human labels ({a['judge']}): n={a['n']}, Cohen's kappa={_f(a['kappa'], 3)}, "
            f"Pearson r={_f(a['pearson'], 3)}"
        )
    for warning in board.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, markup=True)
    folder = Path(args.out)
    written = [p for p in ("leaderboard.json", "report.json", "ratings.png", "win_rates.png", "leaderboard.html") if (folder / p).exists()]
    print(f"Wrote {', '.join(str(folder / p) for p in written)}", file=sys.stderr)
    return 0


def leaderboard_table(board):
    """A rich table of the leaderboard (what ``report`` prints)."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    conf = board.settings.get("confidence", 0.95)
    table = Table(
        title=escape(f"RAG-QA Arena leaderboard: {board.n_queries:,} queries, judge {', '.join(board.judges) or '?'}"),
        caption=escape(
            f"Win % and win+tie % against {board.reference}; second line: {conf:.0%} bootstrap interval; "
            f"{board.reference} fixed at rating 1000"
        ),
    )
    table.add_column("Rank", justify="right", no_wrap=True)
    table.add_column("System", overflow="fold", min_width=12)
    table.add_column("Rating", justify="right", no_wrap=True)
    table.add_column("Win %", justify="right", no_wrap=True)
    table.add_column("Win+tie %", justify="right", no_wrap=True)
    table.add_column("Queries", justify="right")
    table.add_column("Failed", justify="right")
    for e in board.entries:
        rating = Text("–")
        if e["rating"] is not None:
            rating = Text(f"{e['rating']:.0f}\n")
            rating.append(f"{e['rating_ci'][0]:.0f}-{e['rating_ci'][1]:.0f}", style="dim")
        table.add_row(
            "–" if e.get("rank") is None else str(e["rank"]),
            Text(e["system"], style="bold red" if e.get("reference") else "bold"),  # Text: names are never markup
            rating,
            _rate(e, "win_rate"),
            _rate(e, "win_tie_rate"),
            f"{e['n']:,}" if e.get("n") else "–",
            "–" if e.get("reference") else f"{e.get('n_failed', 0):,}",
        )
    return table


def _rate(entry: dict, key: str):
    from rich.text import Text

    value = entry.get(key)
    if value is None or value != value:
        return Text("–")
    low, high = entry.get(f"{key}_ci") or (value, value)
    text = Text(f"{value * 100:.1f}\n")
    text.append(f"{low * 100:.0f}-{high * 100:.0f}", style="dim")
    return text


def _f(value, digits: int) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive integer, e.g. 1000")
    return value


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1, e.g. 0.95")
    return value
