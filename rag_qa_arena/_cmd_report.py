"""``rag-qa-arena report``: the arena leaderboard from judged run folders; ``calibrate``: a judge card."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from rag_qa_arena._options import confidence_level, decimal, finite, percent, positive_int, print_table
from rag_qa_arena._options import seed as seed_type

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
_REPORT_FILES = ("leaderboard.json", "report.json", "ratings.png", "win_rates.png", "length_ratio.png", "win_matrix.png",
                 "leaderboard.html")
#: What a run folder holds that `report` reads.
_RUN_FILES = ("verdicts.jsonl", "summary.json", ".verdicts.replacing.jsonl")


def _refuse_outputs_over_inputs(args: argparse.Namespace) -> None:
    """--out and --battles never write over a run folder's files, --human-labels or --retrieved."""
    from lfrqa.files import refuse_output_over_input

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

    from metric_arena.report import ViewerOptions, backfill_styles, load_runs, write_report
    from metric_arena.style import check_style_features

    check_style_features(args.style_features)
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise RagQaArenaError(f"--out {args.out} is a file: give a folder for the report (created if missing)")
    _refuse_outputs_over_inputs(args)
    runs, skipped = load_runs(args.runs, lean=True)  # what the report counts, not the judges' reply texts
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
            runs,
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
            style_features=args.style_features,
            viewer=ViewerOptions(predictions=_named_files(args.predictions), reference_texts=not args.no_texts, max_total_chars=args.viewer_chars),
        )
    from rag_qa_arena._options import injection_lines

    out = Console()
    if args.format == "markdown":
        from metric_arena.report.markdown import leaderboard_markdown

        print(leaderboard_markdown(board, notes=injection_lines(board.injection, indent="")), end="")
        out = Console(stderr=True)  # the other tables go to stderr: stdout holds the Markdown alone
    print_table(out, leaderboard_table(board))
    if board.elo_study:
        print_table(out, elo_study_table(board))
    if args.battles:
        from metric_arena.report import write_battles

        n = write_battles(runs, args.battles)
        print(f"Wrote {n:,} battles to {args.battles}", file=sys.stderr)
    for table in analysis_tables(board):
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


def elo_study_table(board):
    """The Table 5 view: ratings against the reference only and with the complete pairs (one column per
    nested sample size of a tournament), and whether each system is separated from the next."""
    from rich.table import Table

    study = board.elo_study
    only = study["against_reference_only"]
    full = study["with_complete_pairs"]
    columns = [(f"with pairs, {n:,} questions", study[f"with_complete_pairs_{n}"]) for n in study.get("samples", [])]
    columns = columns or [("with pairs", full)]
    table = Table(title=f"Ratings against {board.reference} only, and with the complete pairs", title_justify="left")
    marks = " / ".join(["only", *(name.removeprefix("with pairs, ") for name, _ in columns)])
    for column in ("System", f"{board.reference} only", *(name for name, _ in columns), f"separated from next ({marks})"):
        table.add_column(column, justify="left" if column == "System" else "right")

    def cell(view, player):
        rating = view["ratings"].get(player)
        if rating is None:
            return "n/a"
        ci = rating["rating_ci"]
        return f"{rating['rating']:.0f}" + (" [no interval]" if ci is None else f" [{ci[0]:.0f}, {ci[1]:.0f}]")

    from metric_arena.stats import intervals_separated as separated_intervals

    def separated(view, upper, lower):
        a, b = view["ratings"].get(upper), view["ratings"].get(lower)
        return "n/a" if not (a and b) else ("yes" if separated_intervals(a["rating_ci"], b["rating_ci"]) else "no")

    for k, player in enumerate(full["ranking"]):
        lower = full["ranking"][k + 1] if k + 1 < len(full["ranking"]) else None
        mark = "" if lower is None else " / ".join(separated(view, player, lower) for view in [only] + [v for _, v in columns])
        table.add_row(player, cell(only, player), *(cell(view, player) for _, view in columns), mark)
    return table


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
            ci = e.get("rating_ci")
            rating.append("no interval" if ci is None else f"{ci[0]:.0f}-{ci[1]:.0f}", style="dim")
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


# ------------------------------------------------------------------------------------------
# The tables beyond the leaderboard: paired tests, question sets, no-answer view, retrieval view
# ------------------------------------------------------------------------------------------
def analysis_tables(board) -> list:
    """Every table that applies to ``board``, in the order ``report`` prints them."""
    from rag_qa_arena._cmd_tournament import adaptive_table
    tables = [paired_table(board), length_table(board), question_sets_table(board), no_answer_table(board),
              retrieval_table(board), judge_agreement_table(board), adaptive_table(board)]
    return [t for t in tables if t is not None]


def _rate(stats: dict | None, key: str, *, count: bool = True):
    """A rate with its interval on a second line (dim), and (``count``) its number of judged queries;
    "n/a" without data."""
    from rich.text import Text

    value = (stats or {}).get(key)
    if not finite(value):
        return Text("n/a", style="dim")
    text = Text(f"{value * 100:.1f}\n")
    low, high = stats.get(f"{key}_ci") or (value, value)
    interval = f"{low * 100:.0f}-{high * 100:.0f}" if finite(low) and finite(high) else "n/a"
    n = f" n={stats.get('n_judged', stats.get('n', 0)):,}" if count else ""
    text.append(interval + n, style="dim")
    return text


def paired_table(board):
    """Each system against the next one down on shared queries; undefined figures read "n/a"."""
    from rich.table import Table
    from rich.text import Text

    if not board.paired:
        return None
    table = Table(title="Is the gap real? (paired, on shared queries)")
    for name, justify in (("Higher", "left"), ("Next", "left"), ("Metric", "left"), ("Difference", "right"),
                          ("Interval", "right"), ("p-value", "right"), ("Shared", "right")):
        table.add_column(name, justify=justify)
    for p in board.paired:
        ci = p.get("difference_ci") or [None, None]
        interval = f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}]" if all(finite(v) for v in ci) else "n/a"
        diff = f"{p['difference'] * 100:+.1f} pts" if finite(p.get("difference")) else "n/a"
        pvalue = p.get("p_value")
        shown = "n/a" if not p.get("n") or not finite(pvalue) else ("< 0.001" if pvalue < 0.001 else f"{pvalue:.3f}")
        table.add_row(Text(p["system_a"]), Text(p["system_b"]), "win rate" if p["metric"] == "win_rate" else "win+tie",
                      diff, interval, shown, f"{p.get('n', 0):,}")
    return table


def length_table(board):
    """Length views: words per answer, how often the longer answer wins, rates by length ratio to the
    reference, length-controlled rates and the style-controlled rating."""
    from rich.table import Table
    from rich.text import Text

    view = getattr(board, "length", None)
    if not view:
        return None
    table = Table(title=f"Length: {board.reference} answers {decimal(view['reference_avg_words'], 0)} words on "
                        "average", caption="Win % by length ratio to the reference answer (<0.8x, 0.8-1.25x, "
                        ">1.25x); LC: length-controlled rates (same length as the reference), interval below; \"not "
                        "id.\": not identifiable, fewer than 10 questions lie near equal length (0.8-1.25x; reason "
                        "in the warnings); "
                        "coef: log-odds of a win per unit of (Ls-Lr)/(Ls+Lr); style-controlled rating: "
                        f"Bradley-Terry with {', '.join(view.get('style_features') or ['no'])} differences held "
                        f"equal ({view.get('style_feature_set', 'words')} set)")
    for name in ("System", "Words", "Longer wins %", "Win % <0.8x", "0.8-1.25x", ">1.25x", "LC win %",
                 "LC win+tie %", "Coef", "Style-ctrl rating"):
        table.add_column(name, justify="left" if name == "System" else "right")
    for e in board.entries:
        if e.get("avg_words") is None:
            continue
        bins = (e.get("length") or {}).get("by_length_ratio") or {}
        style = e.get("style_controlled_rating")
        table.add_row(Text(e["system"]), decimal(e["avg_words"], 0), percent(e.get("p_longer_wins")),
                      *(percent((bins.get(b) or {}).get("win_rate")) for b in ("shorter", "similar", "longer")),
                      *(_lc_rate(e, key) for key in ("lc_win_rate", "lc_win_tie_rate")),
                      decimal(e.get("length_coef_win"), 2), "–" if style is None else f"{style:.0f}")
    return table


def _lc_rate(entry: dict, key: str):
    """An LC rate with its interval, or "not identifiable" (dim) when the report gives its reason."""
    from rich.text import Text

    if entry.get(key) is None and entry.get("lc_note"):
        return Text(f"not id.\n{entry.get('n_near_equal_length') or 0} near", style="dim")
    return _rate(entry, key, count=False)


def question_sets_table(board):
    """The groups of systems judged on the same questions, when there are several."""
    from rich.table import Table
    from rich.text import Text

    sets = getattr(board, "question_sets", None) or []
    if len(sets) < 2:
        return None
    table = Table(title="Not directly comparable: systems judged on different questions")
    table.add_column("Set", justify="right")
    table.add_column("Systems")
    table.add_column("Queries", justify="right")
    table.add_column("Domains")
    for s in sets:
        table.add_row(str(s["id"]), Text(", ".join(s["systems"])), f"{s['n']:,}", Text(", ".join(s["domains"])))
    return table


def no_answer_table(board):
    """No-answer shares (overall and per domain) and rates with and without those pairs (Tables 9, 5)."""
    from rich.table import Table
    from rich.text import Text

    view = getattr(board, "no_answer", None)
    if not view or not view.get("systems"):
        return None
    domains = sorted({d for s in view["systems"] for d in s["per_domain"]})
    domains = domains if len(domains) > 1 else []  # one domain: its column would repeat the overall share
    table = Table(title=f"No-answer replies (\"I couldn't find an answer\"): {view['n_pairs_excluded']:,} pair(s)",
                  caption="No-answer: " + view.get("rule", "") + "; share of " + view.get("denominator", "all pairs")
                          + ". By the reference scripts' substring rule: "
                          + ", ".join(f"{s['system']} {percent(s.get('no_answer_rate_reference'))}%" for s in view["systems"])
                          + ". Win % and win+tie % against the reference with all pairs and without the no-answer "
                            "pairs; rank and rating from the leaderboard rebuilt without them")
    table.add_column("System")
    table.add_column("No answer %", justify="right")
    for domain in domains:
        table.add_column(domain, justify="right")
    table.add_column("Pairs w/o", justify="right")
    for name in ("Win % all", "Win % w/o", "Win+tie % all", "Win+tie % w/o", "Rank w/o", "Rating w/o"):
        table.add_column(name, justify="right")
    ranks = {e["system"]: e for e in view.get("leaderboard") or []}
    for s in view["systems"]:
        excluded = ranks.get(s["system"], {})
        rating = excluded.get("rating")
        table.add_row(
            Text(s["system"]), percent(s["no_answer_rate"]),
            *(percent((s["per_domain"].get(d) or {}).get("no_answer_rate")) for d in domains), f"{s['without']['n']:,}",
            _rate(s["with"], "win_rate", count=False), _rate(s["without"], "win_rate", count=False),
            _rate(s["with"], "win_tie_rate", count=False), _rate(s["without"], "win_tie_rate", count=False),
            "–" if excluded.get("rank") is None else str(excluded["rank"]),
            "–" if rating is None else f"{rating:.0f}",
        )
    return table


def retrieval_table(board):
    """Gold-document retrieval and the rates split by it, per system and domain (one domain: its row is "all")."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    analysis = getattr(board, "retrieval", None)
    if not analysis:
        return None
    table = Table(title=f"Retrieval and answer quality (top-{analysis['k']} passages)",
                  caption="Gold hit: share of questions whose passages hold a gold document; recall: share of "
                          "gold documents retrieved. Rates against the reference where a gold document was / was "
                          "not retrieved; second line: interval and queries" + "".join(
                              f". Caveat: {escape(line)}" for line in analysis.get("caveats") or []))
    for name in ("System", "Domain", "Queries", "Gold hit %", "Recall %", "Win % gold", "Win % no gold",
                 "Win+tie % gold", "Win+tie % no gold"):
        table.add_column(name, justify="left" if name in ("System", "Domain") else "right")
    for s in analysis["systems"]:
        for domain, block in [("all", s), *(s["per_domain"].items() if len(s["per_domain"]) > 1 else ())]:
            table.add_row(
                Text(s["system"] if domain == "all" else ""), Text(domain), f"{block['n']:,}",
                percent(block["gold_hit_rate"]), percent(block["gold_recall"]),
                _rate(block["gold_retrieved"], "win_rate"), _rate(block["gold_not_retrieved"], "win_rate"),
                _rate(block["gold_retrieved"], "win_tie_rate"), _rate(block["gold_not_retrieved"], "win_tie_rate"),
            )
    return table


def judge_agreement_table(board):
    """Pairwise Cohen's kappa between the judges of ensemble runs."""
    from rich.table import Table
    from rich.text import Text

    view = getattr(board, "judge_agreement", None)
    if not view:
        return None
    table = Table(title="Agreement between the ensemble's judges (Cohen's kappa over win/tie/loss)")
    for name in ("Judge", "Judge", "Pairs", "Kappa", "Same %"):
        table.add_column(name, justify="left" if name == "Judge" else "right")
    for p in view["pairs"]:
        table.add_row(Text(p["judge_a"]), Text(p["judge_b"]), f"{p['n']:,}", decimal(p["kappa"], 3), percent(p["agreement"]))
    return table
