"""``rag-qa-arena calibrate`` (a judge card: a candidate judge against a reference judge on the same pairs)
and ``rag-qa-arena compare`` (a CI gate: the paired difference of two runs on their shared questions)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import make_folder
from rag_qa_arena._options import confidence_level, finite, percent, positive_int
from rag_qa_arena._options import seed as seed_type


def register(subparsers: argparse._SubParsersAction) -> None:
    from rag_qa_arena import anchoring

    _register_calibrate(subparsers)
    anchoring.register(subparsers)  # `anchor`: anchored rates (a cheap judge corrected on a random subset)
    _register_compare(subparsers)


# ------------------------------------------------------------------------------------------
# calibrate: a judge card of a candidate judge against a reference judge, from run folders
# ------------------------------------------------------------------------------------------
def _register_calibrate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="Judge card: agreement, kappa, win-rate shifts and leans of a candidate judge vs a reference.",
        description="Compare two judges on the same pairs (run folders of the same systems, any order setting), "
                    "matched by system, opponent and qid. Writes OUT/judge_card.json, judge_card.md and "
                    "matched_verdicts.jsonl.",
        epilog="example: rag-qa-arena calibrate --reference runs/paper-judge/* --candidate runs/cheap-judge/* "
               "--out card/ --predictions sys-a=a.jsonl sys-b=b.jsonl")
    parser.add_argument("--reference", nargs="+", required=True, metavar="RUN", help="runs of the reference judge")
    parser.add_argument("--candidate", nargs="+", required=True, metavar="RUN", help="the same pairs, candidate judge")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the judge card (created if missing)")
    parser.add_argument("--predictions", nargs="+", metavar="[SYSTEM=]FILE",
                        help="the systems' prediction files (FILE alone: system named after it), for answer lengths "
                             "(P(prefer longer)) and prices")
    parser.add_argument("--data-dir", metavar="DIR", help="LFRQA's pinned files, for LFRQA's answers")
    parser.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap rounds for kappa (default 1000)")
    parser.add_argument("--seed", type=seed_type, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--confidence", type=confidence_level, default=0.95, help="interval coverage (default: 0.95)")
    parser.add_argument("--allow-same-judge", action="store_true",
                        help="calibrate a judge against itself (same judges on both sides, or the candidate's replies "
                             "equal to the reference's): otherwise refused, exit 2")
    parser.add_argument("--push", metavar="ORG/NAME", help="upload the card and matched verdicts (Parquet) to the Hub")
    parser.add_argument("--private", action="store_true", help="with --push: create the repo as private")
    parser.add_argument("--token-from-env", action="store_true", help="with --push: the token only from $HF_TOKEN")
    parser.add_argument("--dry-run", metavar="DIR", help="with --push: write the files to DIR instead (no network)")
    parser.set_defaults(func=_run_calibrate)


def _run_calibrate(args: argparse.Namespace) -> int:
    from builders import check_repo_id
    from metric_arena.calibrate import calibrate_judges, card_push_files, card_summary, push_card
    from metric_arena.stats import Intervals

    if args.dry_run and not args.push:
        raise RagQaArenaError("--dry-run DIR previews a push: give --push ORG/NAME too")
    if args.push:
        check_repo_id(args.push)  # before any work
    predictions = {}
    for item in args.predictions or []:
        name, path = item.partition("=")[::2] if "=" in item else (Path(item).stem, item)
        if not name or not path or name in predictions:
            raise RagQaArenaError(f"--predictions {item!r}: give SYSTEM=FILE or FILE, one file per system")
        predictions[name] = path
    from lfrqa.kernel import refuse_output_over_input

    refuse_output_over_input(("--out", args.out),
                             [("--reference", run) for run in args.reference] + [("--candidate", run) for run in args.candidate]
                             + [("--predictions", path) for path in predictions.values()],
                             written=("judge_card.json", "judge_card.md", "matched_verdicts.jsonl"))
    card = calibrate_judges(reference=args.reference, candidate=args.candidate, out=args.out, data_dir=args.data_dir,
                            predictions=predictions or None,
                            intervals=Intervals(n_boot=args.n_boot, seed=args.seed, confidence=args.confidence),
                            allow_same_judge=args.allow_same_judge)
    for remark in card["remarks"]:
        print(f"rag-qa-arena: warning: {remark}", file=sys.stderr)
    print(card_summary(card))
    print(f"Wrote the judge card to {args.out} (judge_card.json, judge_card.md)", file=sys.stderr)
    if args.push and args.dry_run:
        for path, data in (files := card_push_files(args.out, repo_id=args.push)).items():
            make_folder((Path(args.dry_run) / path).parent, target=Path(args.dry_run) / path)
            (Path(args.dry_run) / path).write_bytes(data)
        print(f"Wrote {len(files)} files to {args.dry_run} (nothing uploaded): {', '.join(sorted(files))}", file=sys.stderr)
    elif args.push:
        from builders import HubUpload

        print(push_card(args.out, args.push, upload=HubUpload(private=args.private, token_from_env=args.token_from_env)))
    return 0
# --------------------------------------------------------------------------------------------
# `compare`: the CI gate (a run of the new version against the base run, paired on shared questions)
# --------------------------------------------------------------------------------------------
_COMPARE = """\
Compare two judged runs of a system (BASE_RUN, NEW_RUN) on the questions both answered: the
difference new - base in the win rate and the win+tie rate against LFRQA, its paired bootstrap
interval and the exact sign-test p-value. NEW is significantly worse when, for either rate, the
p-value is below 1 - confidence and the whole interval lies below -D (--min-delta D).

A comparison that cannot say anything is refused (exit 2, one line naming the reason code; with
--json the reason is in the JSON): the same folder twice (same_run), an empty verdicts.jsonl
(empty_run), a run with no judged pair (no_judged_pairs), a qid held twice (repeated_qids),
different opponents (different_opponents), different judges (different_judges, unless
--allow-judge-change), another --parse or --order (setting_changed, unless --allow-setting-change),
no shared judged question (no_shared_questions) or fewer than --min-shared (too_few_shared).

--metric NAME compares on any registered metric instead (the report's "Metric: NAME" sections; the
arena's own is "arena"): for each of its fields, the paired bootstrap interval of new - base on the
items both runs hold; NEW is worse when a field's whole interval lies beyond -D on its bad side.
Runs scored differently are refused as above: judge run folders with other judges, --parse or
--order, cite folders with another --entailment (different_judges) or --passages (setting_changed).

Exit codes: 0 compared (not worse, or worse without --fail-if-worse); 1 with --fail-if-worse when
NEW is significantly worse; 2 refused or bad input.
"""


def _register_compare(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("compare", help="CI gate: is a new run significantly worse than the base run?",
                                   description=_COMPARE, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", metavar="BASE_RUN", help="run folder of the base version (`judge --out`)")
    parser.add_argument("new", metavar="NEW_RUN", help="run folder of the new version")
    parser.add_argument("--fail-if-worse", action="store_true", help="exit 1 when NEW is significantly worse")
    parser.add_argument("--metric", metavar="NAME",
                        help="compare on a registered metric instead (e.g. 'arena'; one the report lists): a paired "
                             "bootstrap of new - base on each of its fields, worse when a field's interval lies beyond "
                             "-D on its bad side; an unknown name exits 2 naming the known ones")
    parser.add_argument("--min-delta", type=float, default=0.0, metavar="D",
                        help="a drop counts only when larger than D (a rate difference, e.g. 0.02; default 0)")
    parser.add_argument("--min-shared", action="append", type=_min_shared_value, metavar="N|F",
                        help="the fewest questions judged in both runs: a whole number N (default 10) and/or a "
                             "fraction F of BASE's judged questions (default 0.5); give it twice for both, 0 for "
                             "no minimum. Fewer: refused (too_few_shared, exit 2)")
    parser.add_argument("--allow-judge-change", action="store_true",
                        help="compare runs made by different judges (otherwise refused, exit 2)")
    parser.add_argument("--allow-setting-change", action="store_true",
                        help="compare runs judged with another --parse or --order (otherwise refused, exit 2)")
    parser.add_argument("--json", action="store_true", help="print the comparison (or the refusal) as strict JSON "
                        "(the same as --format json)")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default=None,
                        help="what to print: text (default), json, or markdown (a table for $GITHUB_STEP_SUMMARY or "
                             "a pull-request comment; a refusal is printed too, and the exit code stays 2)")
    parser.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap rounds (default: 1000)")
    parser.add_argument("--seed", type=seed_type, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--confidence", type=confidence_level, default=0.95, help="interval coverage (default: 0.95)")
    parser.add_argument("--anchored", action="store_true",
                        help="gate on the anchored rates (both runs' anchored.json, `rag-qa-arena anchor`): NEW is "
                             "worse when the interval of the anchored difference lies wholly below -D")
    parser.set_defaults(func=_compare)


def _min_shared_value(text: str) -> tuple[str, float]:
    """``--min-shared``: a whole number (a count) or a fraction in [0, 1] written with a point or as a percentage."""
    value = text.strip()
    try:
        if value.endswith("%"):
            kind, number = "share", float(value[:-1]) / 100
        elif value.isdigit():
            kind, number = "count", int(value)
        else:
            kind, number = "share", float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 0 and (kind == "count" or number <= 1)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (e.g. 30) or a fraction in [0, 1] (e.g. 0.8 or 80%)")
    return kind, number


def _min_shared(values: list[tuple[str, float]] | None):
    from metric_arena.report import MinShared

    given = dict(values or [])
    if len(given) < len(values or []):
        raise RagQaArenaError("--min-shared: give at most one count (N) and one fraction (F), e.g. --min-shared 30 "
                              "--min-shared 0.8")
    if values and all(number == 0 for _, number in values):
        return MinShared(count=0, share=0.0)
    return MinShared(**given)


def _compare(args: argparse.Namespace) -> int:
    from lfrqa.kernel import dumps_json
    from metric_arena.report import ComparisonRefused, compare_runs
    from metric_arena.report.markdown import comparison_markdown, refusal_markdown
    from rag_qa_arena._options import injection_lines

    if args.json and args.format not in (None, "json"):
        raise RagQaArenaError(f"--json and --format {args.format} ask for two outputs: give one of them")
    shown = "json" if args.json else args.format or "text"
    if not (math.isfinite(args.min_delta) and args.min_delta >= 0):
        raise RagQaArenaError(f"--min-delta must be a rate difference >= 0 (e.g. 0.02), got {args.min_delta:g}")
    if args.metric is not None:
        return _compare_metric(args, shown)
    try:
        result = compare_runs(args.base, args.new, min_delta=args.min_delta, min_shared=_min_shared(args.min_shared),
                              allow_judge_change=args.allow_judge_change,
                              allow_setting_change=args.allow_setting_change, n_boot=args.n_boot, seed=args.seed,
                              confidence=args.confidence)
    except ComparisonRefused as refused:
        if shown == "markdown":
            print(refusal_markdown(refused.reason, refused.detail, base=args.base, new=args.new), end="")
        if shown == "json":
            print(dumps_json({"status": "refused", "reason": refused.reason, "message": refused.detail,
                              "base": {"run": args.base}, "new": {"run": args.new}, "exit_code": 2}))
        raise
    if args.anchored:
        from metric_arena.calibrate import anchored_comparison

        result["anchored"] = anchored_comparison(args.base, args.new, min_delta=args.min_delta,
                                                 confidence=args.confidence)
        result["worse"], result["worse_on"] = result["anchored"]["worse"], result["anchored"]["worse_on"]
    for line in result["warnings"]:
        print(f"rag-qa-arena: warning: {line}", file=sys.stderr)
    injection = injection_lines({f"{side} {result[side]['system']}": counts
                                 for side, counts in result["injection"].items()})
    if shown == "json":
        print(dumps_json(result))
    elif shown == "markdown":
        print(comparison_markdown(result, notes=[line.strip() for line in injection]), end="")
    else:
        base, new = result["base"], result["new"]
        print(f"base {base['run']} ({base['system']}) vs new {new['run']} ({new['system']}): "
              f"{result['n_shared']:,} shared questions; judges {', '.join(new['judges']) or 'unknown'}")
        level = f"{100 * result['confidence']:g}%"
        for metric, label in (("win_rate", "win rate"), ("win_tie_rate", "win+tie rate")):
            r = result["metrics"][metric]
            low, high = r["difference_ci"]
            print(f"  {label:<13} base {percent(r['rate_b'])}%  new {percent(r['rate_a'])}%  difference "
                  f"{_points(r['difference'])} points [{level} {_points(low)}, {_points(high)}]  "
                  f"p = {r['p_value']:.4g}  (n={r['n']:,}, {r['n_failed']:,} failed)")
        for line in injection:
            print(line)
        if args.anchored:
            _print_anchored(result["anchored"], level)
        if result["worse"]:
            print(f"new is significantly worse on {' and '.join(result['worse_on'])} "
                  f"(by more than {args.min_delta:g})")
        else:
            print(f"new is not significantly worse (by more than {args.min_delta:g})")
    return 1 if args.fail_if_worse and result["worse"] else 0


def _print_anchored(anchored: dict, level: str) -> None:
    """The anchored rates' difference lines of ``compare --anchored`` (the gate then reads them)."""
    print(f"  anchored rates (base on {anchored['base']['anchor']}, new on {anchored['new']['anchor']}); the gate "
          "reads these:")
    for metric, label in (("win_rate", "win rate"), ("win_tie_rate", "win+tie rate")):
        r = anchored["metrics"][metric]
        low, high = r["difference_ci"]
        print(f"  {label:<13} base {percent(r['rate_base'])}%  new {percent(r['rate_new'])}%  anchored difference "
              f"{_points(r['difference'])} points [{level} {_points(low)}, {_points(high)}]  "
              f"(anchors {r['n_anchors'][0]:,} and {r['n_anchors'][1]:,})")


def _compare_metric(args: argparse.Namespace, shown: str) -> int:
    """``compare --metric NAME``: the gate on any registered metric (text, JSON or Markdown)."""
    from lfrqa.kernel import dumps_json
    from metric_arena.report import ComparisonRefused
    from metric_arena.report.sections import compare_metric, comparison_lines
    from metric_arena.stats import Intervals

    try:
        result = compare_metric(args.base, args.new, args.metric, min_delta=args.min_delta,
                                intervals=Intervals(n_boot=args.n_boot, seed=args.seed, confidence=args.confidence),
                                allow_judge_change=args.allow_judge_change,
                                allow_setting_change=args.allow_setting_change)
    except ComparisonRefused as refused:
        if shown == "json":
            print(dumps_json({"status": "refused", "reason": refused.reason, "message": refused.detail,
                              "metric": args.metric, "base": {"run": args.base}, "new": {"run": args.new},
                              "exit_code": 2}))
        raise
    for line in result["warnings"]:
        print(f"rag-qa-arena: warning: {line}", file=sys.stderr)
    lines = comparison_lines(result)
    if shown == "json":
        print(dumps_json(result))
    elif shown == "markdown":
        print("\n".join([f"### compare --metric {result['metric']}", "", *(f"    {line}" for line in lines)]))
    else:
        print("\n".join(lines))
    return 1 if args.fail_if_worse and result["worse"] else 0


def _points(value) -> str:
    return "n/a" if not finite(value) else f"{100 * value:+.1f}"
