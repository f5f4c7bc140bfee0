"""``rag-qa-arena anchor``: a cheap judge's rates anchored on a reference judge's (or people's) verdicts on a
random subset of the same pairs (PPI++): the workflow in one run, or the anchoring of a run already judged."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena.records import SUMMARY_FILE, VERDICTS_FILE

_EPILOG = """\
the run folder (--out RUN): the cheap judge's run folder as `judge` writes it, RUN/anchor (the reference
judge's run folder on the subset) and RUN/anchored.json (the anchored rates, with the subset's seed and
qids). `report` shows the anchored rates beside the raw ones; `compare --anchored` gates on them. Re-running
the same command resumes from the judgment cache.

examples:
  rag-qa-arena anchor --predictions preds.jsonl --judge openai:gpt-4o-mini \\
      --anchor-judge openai:gpt-4-0125-preview --anchor-sample 300 --anchor-seed 7 --out runs/my-system
  rag-qa-arena anchor --predictions preds.jsonl --judge openai:gpt-4o-mini \\
      --anchor-judge openai:gpt-4-0125-preview --dry-run --half-width 0.03 --pilot runs/my-system
  rag-qa-arena anchor --run runs/my-system --human-labels human.jsonl

exit codes: 0 done, 2 bad input (anchors outside the run's pairs, other systems, too few anchors),
3 a judge's server refused or could not be reached.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from rag_qa_arena._options import add_backend_flags, add_run_flags, confidence_level

    parser = subparsers.add_parser(
        "anchor", help="Anchored rates: a cheap judge corrected by a reference judge (or people) on a random subset.",
        description="Judge every pair with a cheap judge and a seeded random subset with a reference judge, then "
                    "report the cheap judge's win rates anchored on the reference (PPI++: unbiased, with valid "
                    "intervals, narrower than the reference alone) beside the raw cheap rates.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--predictions", metavar="FILE", help="the system's answers (as `judge --predictions`)")
    parser.add_argument("--versus", metavar="FILE", help="judge against this system instead of LFRQA")
    parser.add_argument("--versus-name", metavar="NAME", help="the --versus system's name")
    parser.add_argument("--name", metavar="NAME", help="the system's name (default: the --out folder's name)")
    parser.add_argument("--judge", action="append", metavar="BACKEND:MODEL", help="the cheap judge, on every pair")
    parser.add_argument("--anchor-judge", metavar="BACKEND:MODEL", help="the reference judge, on the subset")
    parser.add_argument("--anchor-base-url", metavar="URL", help="the reference judge's server (default: --base-url)")
    parser.add_argument("--anchor-sample", type=int, default=300, metavar="N", help="pairs anchored (default: 300)")
    parser.add_argument("--anchor-seed", type=int, default=0, metavar="S",
                        help="seed of the random subset (recorded in anchored.json with its qids; default: 0)")
    parser.add_argument("--run", metavar="RUN", help="anchor a run folder already judged (with --human-labels or "
                                                     "--anchor-run) instead of judging")
    parser.add_argument("--human-labels", metavar="FILE", help="people's labels as the anchor (`report --human-labels` "
                                                               "format: qid, system_a, system_b, label)")
    parser.add_argument("--anchor-run", metavar="RUN", help="the reference judge's run folder on a subset of --run's pairs")
    parser.add_argument("--out", metavar="RUN", help="the run folder to write (required unless --dry-run or --run)")
    parser.add_argument("--overwrite", action="store_true", help="replace run folders that hold other settings")
    parser.add_argument("--order", default="paper", choices=("paper", "random", "both"), help="answer order (default: paper)")
    parser.add_argument("--parse", default="strict", choices=("strict", "reference"), help="reply parse (default: strict)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random order (default: 0)")
    parser.add_argument("--confidence", type=confidence_level, default=0.95, help="interval coverage (default: 0.95)")
    parser.add_argument("--half-width", type=float, default=0.03, metavar="H",
                        help="with --dry-run: the win rate's target interval half-width (default: 0.03)")
    parser.add_argument("--pilot", metavar="RUN", help="with --dry-run: an anchored run folder whose two judges' "
                                                       "verdicts plan the anchors (default: --out, when it has them)")
    add_backend_flags(parser, "judges")
    add_run_flags(parser, cache="judgment cache", cost="estimated cost of both judges")
    parser.set_defaults(func=_run, tensor_parallel_size=None)


def _anchored_lines(result: dict) -> list[str]:
    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}%"

    def ci(c):
        return "" if not c or c[0] is None else f" [{100 * c[0]:.1f}, {100 * c[1]:.1f}]"

    anchor = result["anchor"]
    lines = [f"{result['system']} vs {result['opponent']}: {', '.join(result['cheap_judges'])} anchored on "
             f"{anchor['label']} (n={anchor['n']:,} of {result['win_rate']['N']:,} pairs"
             + (f", seed {anchor['seed']}" if anchor.get("seed") is not None else "") + ")"]
    for metric, label in (("win_rate", "win"), ("win_tie_rate", "win+tie")):
        r = result[metric]
        eff = "" if r["n_effective"] is None else f", effective n {r['n_effective']:,.0f}"
        lines.append(f"  {label:<8} anchored {pct(r['estimate'])}{ci(r['ci'])}  raw cheap {pct(r['cheap']['estimate'])}"
                     f"{ci(r['cheap']['ci'])}  reference only {pct(r['reference_only']['estimate'])}"
                     f"{ci(r['reference_only']['ci'])}{eff}")
    for domain, part in result.get("per_domain", {}).items():
        r = part["win_rate"]
        lines.append(f"  {domain:<12} win anchored {pct(r['estimate'])}{ci(r['ci'])} (n={r['n']:,} of {r['N']:,})  "
                     f"raw {pct(r['cheap']['estimate'])}")
    return lines


def _run(args: argparse.Namespace) -> int:
    from metric_arena.calibrate import anchored_from_labels, anchored_from_run, write_anchored
    from metric_arena.stats import Intervals

    intervals = Intervals(confidence=args.confidence)
    if args.run:
        if bool(args.human_labels) == bool(args.anchor_run):
            raise RagQaArenaError("--run RUN needs one anchor: --human-labels FILE or --anchor-run RUN")
        if args.predictions or args.out:
            raise RagQaArenaError("--run anchors a run already judged: drop --predictions and --out")
        result = (anchored_from_labels(args.run, args.human_labels, intervals=intervals) if args.human_labels
                  else anchored_from_run(args.run, args.anchor_run, intervals=intervals))
        return _finish(result, args.run, write_anchored)
    if args.human_labels or args.anchor_run:
        raise RagQaArenaError("--human-labels and --anchor-run anchor a run already judged: give --run RUN")
    return _judge(args, intervals)


def _finish(result: dict, folder: str, write) -> int:
    for warning in result["warnings"]:
        print(f"rag-qa-arena: warning: {warning}", file=sys.stderr)
    print("\n".join(_anchored_lines(result)))
    if result["win_rate"]["estimate"] is None:
        print(f"rag-qa-arena: error: too few anchored pairs judged on both sides ({result['win_rate']['n']}): "
              "anchor at least 10", file=sys.stderr)
        return 2
    path = write(folder, result)
    print(f"written to {path}", file=sys.stderr)
    return 0


def _judge(args: argparse.Namespace, intervals) -> int:
    from metric_arena.calibrate import AnchorPlan, judge_anchored
    from metric_arena.judge import DEFAULT_JUDGE, format_estimate, prepare_judge_inputs
    from rag_qa_arena._options import FATAL_EXIT, check_backend_args, judge_settings, run_reporting_failures, run_settings

    if not args.predictions or not args.anchor_judge:
        raise RagQaArenaError("give --predictions FILE and --anchor-judge BACKEND:MODEL (or --run RUN with "
                              "--human-labels FILE)")
    if not args.dry_run and not args.out:
        raise RagQaArenaError("--out RUN is required (the run folder), or use --dry-run")
    check_backend_args(args)
    judges = args.judge or [DEFAULT_JUDGE]
    if args.anchor_judge in judges:
        print(f"rag-qa-arena: warning: the anchor judge {args.anchor_judge} is also the cheap judge: the anchored "
              "rates then equal the raw ones", file=sys.stderr)
    anchor_args = argparse.Namespace(**{**vars(args), "base_url": [args.anchor_base_url] if args.anchor_base_url
                                        else args.base_url})
    plan = AnchorPlan(judge=judge_settings([args.anchor_judge], anchor_args, build=not args.dry_run),
                      sample=args.anchor_sample, seed=args.anchor_seed, run=run_settings(anchor_args))
    inputs = prepare_judge_inputs(args.predictions, versus=args.versus, versus_name=args.versus_name,
                                  data_dir=args.data_dir)
    if args.dry_run:
        return _dry_run(args, inputs, judge_settings(judges, args, build=False), plan, intervals, format_estimate)
    from lfrqa.kernel import refuse_output_over_input

    refuse_output_over_input(("--out", args.out), [("--predictions", args.predictions), ("--versus", args.versus)],
                             written=(VERDICTS_FILE, SUMMARY_FILE, "anchored.json"))
    system = args.name or (Path(args.predictions).stem if args.versus else Path(args.out).resolve().name)
    result = run_reporting_failures(
        lambda: judge_anchored(inputs, judge=judge_settings(judges, args), anchor=plan, out=args.out,
                               run=run_settings(args), system=system, data_dir=args.data_dir, intervals=intervals,
                               progress=not args.no_progress and sys.stderr.isatty(), overwrite=args.overwrite),
        stopped=f"Verdicts finished before the error are in {args.out}; answers are cached.", where=args.out,
        kept="Judgments so far are cached: re-run the same command.")
    if isinstance(result, int):
        return result
    if all(part.get("n_failed", 0) == part.get("n", 0) for part in (result["cheap"], result["anchor"])):
        return FATAL_EXIT
    return _finish(result["anchored"], args.out, lambda folder, data: Path(folder) / "anchored.json")


def _dry_run(args, inputs, judge, plan, intervals, format_estimate) -> int:
    from metric_arena.calibrate import anchor_dry_run

    if not 0 < args.half_width < 1:
        raise RagQaArenaError(f"--half-width must be a rate in (0, 1), e.g. 0.03, got {args.half_width:g}")
    pilot = args.pilot or (args.out if args.out and (Path(args.out) / "anchor").is_dir() else None)
    done = anchor_dry_run(inputs, judge=judge, anchor=plan, run=run_settings_of(args), data_dir=args.data_dir,
                          half_width=args.half_width, pilot=pilot, intervals=intervals)
    print(f"dry run: cheap judge on {done['n_pairs']:,} pairs, reference judge on a random {done['n_anchors']:,} "
          f"(seed {args.anchor_seed}), nothing sent")
    for role in ("cheap", "anchor"):
        print(f"{'cheap judge' if role == 'cheap' else 'anchor (reference) judge'}:")
        print(format_estimate(done["estimates"][role]))
    level = f"{args.confidence:.0%}"
    if done["plan"] is None:
        from metric_arena.stats import MIN_ANCHORS

        worst = math.ceil(0.25 / (args.half_width / _z(args.confidence)) ** 2)
        print(f"anchors for a {level} half-width of {args.half_width:g}: no pilot yet (anchor a first subset, e.g. "
              f"--anchor-sample 100, then dry-run with --pilot RUN); the reference alone needs up to {worst:,} pairs "
              f"(at a rate of 50%), anchored fewer the more the judges agree (at least {MIN_ANCHORS})")
        return 0
    for metric, label in (("win_rate", "win rate"), ("win_tie_rate", "win+tie rate")):
        p = done["plan"][metric]
        need = "not reachable with these pairs" if p["n_anchored"] is None else f"{p['n_anchored']:,} anchored pairs"
        corr = "n/a" if p["correlation"] is None else f"{p['correlation']:.2f}"
        print(f"anchors for a {level} half-width of {args.half_width:g} on the {label}: {need} (reference only: "
              f"{p['n_reference_only']:,}; pilot {p['n_pilot']:,} pairs of {p['pilot']}, correlation {corr})")
    return 0


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def run_settings_of(args):
    from rag_qa_arena._options import run_settings

    return run_settings(args)
