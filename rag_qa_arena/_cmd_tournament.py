"""``rag-qa-arena tournament``: every system against LFRQA and every pair of systems on shared questions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lfrqa.errors import RagQaArenaError

if TYPE_CHECKING:
    from metric_arena import JudgeConfig, RunConfig

_EPILOG = """\
run folders (RUNS_DIR): one per match, as `judge --out` writes them: RUNS_DIR/<system> (against
LFRQA) and RUNS_DIR/<a>__vs__<b> (a pair), plus RUNS_DIR/tournament.json. Re-running the same
command reuses finished matches, resumes an interrupted one from the cache and asks again the pairs
that failed. RUNS_DIR holds one design: other systems, samples, judges, order, seed, parse or adaptive
settings are refused (exit 2) unless --overwrite, which replaces the folder once the new tournament is
complete. At most 64 systems (MAX_TOURNAMENT_SYSTEMS: the pairs grow as n(n-1)/2; 256 with --export-requests,
which writes the requests as it plans them); more are refused
before any file is read. Then:
  rag-qa-arena report RUNS_DIR/* --out leaderboard/ --battles battles.jsonl

examples:
  rag-qa-arena tournament runs/a.jsonl runs/b.jsonl runs/c.jsonl --judge openai:gpt-4o --out runs/arena
  rag-qa-arena tournament runs/*.jsonl --judge openai:gpt-4o --out runs/arena --sample 700 --sample 1400 --dry-run
  rag-qa-arena tournament runs/*.jsonl --judge openai:gpt-4o --out runs/arena --adaptive --max-judgments 5000
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from metric_arena.judge import DEFAULT_JUDGE, ORDERS, PARSES
    from metric_arena.stats import DEFAULT_ALPHA
    from rag_qa_arena.exchange import add_exchange_flags
    from rag_qa_arena._options import (
        add_backend_flags,
        add_rate_limit_flags,
        add_run_flags,
    )

    parser = subparsers.add_parser(
        "tournament",
        help="Judge many systems: each against LFRQA, and every pair against each other (the paper's Elo study).",
        description=(
            "The paper's Elo study (Table 5): every system is judged against LFRQA on all its questions, and "
            "every unordered pair of systems on one shared, seeded, domain-stratified sample of the questions "
            "all systems answered (several --sample sizes: nested samples, judged once, one Table 5 column each). "
            "With --adaptive, pairs are judged in rounds on the neighbouring systems not yet separated, until "
            "the ranking is separated (family-wise error --alpha under repeated looks), --max-judgments pair "
            "judgments are spent, or no question is left."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("predictions", nargs="+", metavar="PRED_FILE",
                        help="one prediction file per system (JSONL, as for `judge`); named by the file name")
    parser.add_argument("--out", metavar="RUNS_DIR", help="folder for the run folders (required unless --dry-run)")
    parser.add_argument("--name", action="append", default=[], metavar="FILE=NAME",
                        help="name a system other than by its file name (repeatable)")
    parser.add_argument("--judge", action="append", metavar="BACKEND:MODEL",
                        help=f"judge model (repeat for several judges that vote; default: {DEFAULT_JUDGE})")
    parser.add_argument("--sample", type=int, action="append", metavar="N",
                        help="questions every pair of systems is judged on (default: 700, the paper's column B); "
                             "repeat for nested samples judged once, e.g. --sample 700 --sample 1400 (Table 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample, the order and the intervals")
    parser.add_argument("--order", choices=ORDERS, default="paper", help="answer order shown to the judge")
    parser.add_argument("--adaptive", action="store_true",
                        help="judge pairs in rounds on the neighbouring systems not yet separated, instead of all pairs")
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, metavar="P",
                        help="with --adaptive: family-wise error level of the stopping rule, valid under repeated "
                             "looks (default: 0.05)")
    parser.add_argument("--max-judgments", type=int, metavar="N",
                        help="with --adaptive: the budget of pair judgments (never exceeded)")
    parser.add_argument("--round-size", type=int, default=100, metavar="N",
                        help="with --adaptive: judgments per round (default: 100)")
    parser.add_argument("--max-input-tokens", type=int, metavar="N", help="refuse judge prompts longer than N tokens")
    parser.add_argument("--parse", choices=PARSES, default="strict",
                        help="how judge replies are read, as for `judge`: 'strict' (default) or 'reference' (as the "
                             "paper's scripts read them)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a tournament of another design in --out (once the new one is complete)")
    add_backend_flags(parser, "judges")
    add_run_flags(parser, cache="judgment cache", cost="estimated cost of the whole tournament")
    add_rate_limit_flags(parser)
    add_exchange_flags(parser, judge=False)
    parser.set_defaults(func=run_tournament)


def _systems(args: argparse.Namespace) -> dict[str, str]:
    names: dict[str, str] = {}
    for item in args.name:
        file, sep, name = item.partition("=")
        if not sep or not name:
            raise RagQaArenaError(f"--name {item!r}: write FILE=NAME, e.g. --name runs/a.jsonl=gpt-4o")
        names[str(Path(file))] = name
    unknown = sorted(set(names) - {str(Path(p)) for p in args.predictions})
    if unknown:
        raise RagQaArenaError(f"--name names {unknown[0]!r}, which is not one of the prediction files")
    systems: dict[str, str] = {}
    for path in args.predictions:
        name = names.get(str(Path(path)), Path(path).stem)
        if name in systems:
            raise RagQaArenaError(f"Two prediction files are both named {name!r}: give one another name with --name")
        systems[name] = path
    return systems


def _dry_run(args: argparse.Namespace, systems: dict[str, str], judge: JudgeConfig, run: RunConfig) -> int:
    from metric_arena.judge import format_estimate, load_tournament, tournament_dry_run

    plan = load_tournament(systems, seed=judge.seed, data_dir=args.data_dir)
    estimates = tournament_dry_run(plan, judge=judge, run=run, sample=args.sample, adaptive=args.adaptive,
                                   max_judgments=args.max_judgments, data_dir=args.data_dir)
    n, n_pairs = len(systems), len(plan.pairs())
    if args.adaptive:
        bound = n_pairs * plan.n_common if args.max_judgments is None else min(args.max_judgments,
                                                                             n_pairs * plan.n_common)
        why = "--max-judgments" if args.max_judgments is not None and bound == args.max_judgments else \
            f"every one of the {plan.n_common:,} shared questions of every pair"
        pairs = (f"{n_pairs} pairs adaptive (alpha {args.alpha:g}): at most {bound:,} pair judgments ({why}), "
                 "priced below as the upper bound")
    else:
        sizes = sorted({min(size, plan.n_common) for size in args.sample})
        pairs = (f"{n_pairs} pairs on {' and '.join(f'{size:,}' for size in sizes)} of the {plan.n_common:,} shared "
                 f"questions (every system answered them){'; nested, judged once' if len(sizes) > 1 else ''}")
    print(f"dry run: {n} systems against LFRQA, {pairs}, order {args.order!r}, nothing sent")
    if not args.adaptive:
        _warn_sample(sorted(set(args.sample)), plan.n_common)
    print(format_estimate(estimates))
    return 0


def _warn_sample(sizes: list[int], n_common: int) -> None:
    for size in sizes:
        if size > n_common:
            print(f"rag-qa-arena: warning: --sample {size:,} exceeds the {n_common:,} questions every system "
                  f"answered: the pairs are judged on all {n_common:,}", file=sys.stderr)


def run_tournament(args: argparse.Namespace) -> int:
    from metric_arena.judge import DEFAULT_JUDGE, RunOutput, TournamentSchedule, tournament
    from metric_arena.records import DEFAULT_SAMPLE
    from rag_qa_arena.exchange import export_requests
    from rag_qa_arena._options import (
        FATAL_EXIT,
        check_backend_args,
        judge_settings,
        run_reporting_failures,
        run_settings,
    )

    check_backend_args(args)
    if args.max_judgments is not None and not args.adaptive:
        raise RagQaArenaError("--max-judgments is the budget of --adaptive: add --adaptive, or drop it")
    judges = args.judge or [DEFAULT_JUDGE]
    systems = _systems(args)
    args.sample = args.sample or [DEFAULT_SAMPLE]
    if args.dry_run:
        return _dry_run(args, systems, judge_settings(judges, args, build=False), run_settings(args))
    if args.export_requests:
        if args.adaptive:
            raise RagQaArenaError("--export-requests writes the complete schedule's requests; adaptive rounds depend "
                                  "on earlier verdicts: drop --adaptive (or run it online)")
        from metric_arena.judge import tournament_requests

        judge = judge_settings(judges, args, build=False)
        return export_requests(args, tournament_requests(systems, seed=judge.seed, sample=args.sample,
                                                         data_dir=args.data_dir), judge, run_settings(args))
    if not args.out:
        raise RagQaArenaError("--out RUNS_DIR is required (the folder for the run folders), or use --dry-run")
    from lfrqa.kernel import refuse_output_over_input

    refuse_output_over_input(("--out", args.out), [("PRED_FILE", path) for path in systems.values()], written=None)
    result = run_reporting_failures(
        lambda: tournament(
            systems, out=args.out, judge=judge_settings(judges, args, build=False), run=run_settings(args),
            schedule=TournamentSchedule(sample=args.sample, adaptive=args.adaptive, alpha=args.alpha,
                                        max_judgments=args.max_judgments, round_size=args.round_size),
            data_dir=args.data_dir,
            output=RunOutput(overwrite=args.overwrite, progress=not args.no_progress and sys.stderr.isatty()),
        ),
        stopped=f"Matches finished before the error are in {args.out}; judgments are cached: run it again to resume.",
        where=args.out,
        kept="Judgments so far are cached: free space or choose another --out, then re-run.",
    )
    if isinstance(result, int):
        return result
    if not args.adaptive:
        _warn_sample(sorted(set(args.sample)), result["n_common"])
    for match in result["against_reference"] + result["pairs"]:
        print(f"{match['system']} vs {match['opponent']}: {match['n']:,} pairs, {match['n_failed']:,} failed"
              f"{' (reused)' if match['reused'] else ''}")
    line = (f"stopped: {result['stopped']}; {result['judgments']:,} judgments "
            f"({result['pair_judgments']:,} of them system against system)")
    if "rounds" in result:
        line += f" in {result['rounds']} adaptive rounds, alpha {result['alpha']:g}"
        if result["max_judgments"] is not None:
            line += f", budget {result['max_judgments']:,}"
    print(line)
    for text in unseparated_lines(result.get("neighbours")):
        print(text)
    print(f"next: {next_step(args.out)}", file=sys.stderr)
    matches = result["against_reference"] + result["pairs"]
    if all(m["n"] and m["n_failed"] == m["n"] for m in matches):
        print("rag-qa-arena: error: every pair of every match failed: each run folder's verdicts.jsonl says why",
              file=sys.stderr)
        return FATAL_EXIT
    return 0


def next_step(out: str) -> str:
    """The report command for a tournament folder: the leaderboard goes beside it, never inside it
    (where every later `report RUNS_DIR/*` would meet it as a stray entry)."""
    import os

    folder = os.path.normpath(out)
    name = os.path.basename(os.path.abspath(folder))
    beside = os.path.join(os.path.dirname(folder), f"{name}-leaderboard")
    return f"rag-qa-arena report {os.path.join(folder, '*')} --out {beside}"


# What `tournament` and `report` print about an adaptive tournament's neighbouring pairs (tournament.json's
# `neighbours`): which are still not separated, with their intervals.
def _interval(row: dict) -> str:
    low, high = row["interval"]
    return f"[{low:.2f}, {high:.2f}]"


def unseparated_lines(neighbours: Sequence[dict] | None) -> list[str]:
    """One line per neighbouring pair not yet separated (higher vs lower, the higher's score and its
    confidence sequence, battles), or one line saying every pair is separated; nothing without neighbours."""
    if not neighbours:
        return []
    open_pairs = [row for row in neighbours if not row.get("separated")]
    if not open_pairs:
        return [f"separated: all {len(neighbours)} neighbouring pairs"]
    lines = [f"not separated: {len(open_pairs)} of {len(neighbours)} neighbouring pairs (their order is not "
             "established; a larger --max-judgments judges more):"]
    for row in open_pairs:
        score = row.get("win_rate")
        lines.append(f"  {row['upper']} vs {row['lower']}: score {'n/a' if score is None else f'{score:.2f}'} "
                     f"{_interval(row)} on {row.get('n', 0):,} battles")
    return lines


def adaptive_table(board):
    """A rich table of an adaptive tournament's neighbouring pairs (None for other reports)."""
    from rich.table import Table
    from rich.text import Text

    view = (getattr(board, "elo_study", None) or {}).get("adaptive")
    if not view or not view.get("neighbours"):
        return None
    n_open = len(view["unseparated"])
    table = Table(title=f"Adaptive tournament (stopped: {view.get('stopped')}): {n_open} of {len(view['neighbours'])} "
                        "neighbouring pairs not separated",
                  caption=f"Score: the higher system's (wins + ties/2) / battles against the lower; interval: its "
                          f"anytime-valid confidence sequence (family-wise error {view.get('alpha')}); separated when "
                          "it lies above 0.5")
    for name in ("Higher", "Lower", "Battles", "Score", "Interval", "Separated"):
        table.add_column(name, justify="left" if name in ("Higher", "Lower", "Separated") else "right")
    for row in view["neighbours"]:
        score = row.get("win_rate")
        table.add_row(Text(row["upper"]), Text(row["lower"]), f"{row.get('n', 0):,}",
                      "n/a" if score is None else f"{score:.2f}", _interval(row), "yes" if row.get("separated") else "no")
    return table
