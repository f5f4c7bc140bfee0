"""``rag-qa-arena calibrate``: a judge card of a candidate judge against a reference judge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lfrqa.errors import RagQaArenaError

_DESCRIPTION = """\
Compare two judges on the same pairs: run folders of the same systems judged by a reference judge
(say the paper's GPT-4-turbo) and by a candidate judge (a cheaper one), any order setting. Pairs are
matched by system, opponent and qid; unmatched pairs are counted and named.

Writes OUT/judge_card.json (strict JSON), OUT/judge_card.md and OUT/matched_verdicts.jsonl: raw
agreement, Cohen's kappa over win/tie/loss with a bootstrap interval, kappa on decisive pairs, the
confusion table, each system's win-rate shift and the rank correlation of the systems, each judge's
P(prefer longer answer) and P(prefer the answer shown first), failures, price and time per 1,000
judgments.
"""

_EPILOG = """\
examples:
  rag-qa-arena calibrate --reference runs/paper-judge/* --candidate runs/cheap-judge/* --out card/
  rag-qa-arena calibrate --reference runs/gpt4/* --candidate runs/mini/* --out card/ \\
      --predictions sys-a=a.jsonl sys-b=b.jsonl
  rag-qa-arena calibrate --reference runs/gpt4/* --candidate runs/mini/* --out card/ --push my-org/judge-card
  rag-qa-arena calibrate --reference runs/gpt4/* --candidate runs/mini/* --out card/ --push my-org/x --dry-run preview/
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="Judge card: agreement, kappa, win-rate shifts and biases of a candidate judge against a reference.",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--reference", nargs="+", required=True, metavar="RUN",
                        help="run folders judged by the reference judge")
    parser.add_argument("--candidate", nargs="+", required=True, metavar="RUN",
                        help="run folders of the same pairs judged by the candidate judge")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the judge card (created if missing)")
    parser.add_argument("--predictions", nargs="+", metavar="[SYSTEM=]FILE",
                        help="the judged systems' prediction files, for answer lengths (P(prefer longer)) and "
                             "prices; FILE alone names the system after the file (without extension)")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="LFRQA's pinned files, for LFRQA's answers (default: $LFRQA_DATA_DIR, else the download)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap rounds for kappa's interval (default: 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default: 0.95)")
    parser.add_argument("--push", metavar="ORG/NAME",
                        help="upload the card and the matched verdicts (Parquet) to this Hub dataset repo")
    parser.add_argument("--private", action="store_true", help="with --push: create the repo as private")
    parser.add_argument("--token-from-env", action="store_true", help="with --push: take the token only from $HF_TOKEN")
    parser.add_argument("--dry-run", metavar="DIR",
                        help="with --push: write the files that would be uploaded to DIR instead (no network, no token)")
    parser.set_defaults(func=_run)


def _predictions(items: list[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    found: dict[str, str] = {}
    for item in items:
        name, _, path = item.partition("=") if "=" in item else (Path(item).stem, "", item)
        if not name or not path:
            raise RagQaArenaError(f"--predictions {item!r}: give SYSTEM=FILE or FILE")
        if name in found:
            raise RagQaArenaError(f"--predictions: system {name!r} given twice ({found[name]} and {path}); one file per system")
        found[name] = path
    return found


def _run(args: argparse.Namespace) -> int:
    from metric_arena.calibrate import CARD_JSON, CARD_MD, calibrate_judges, card_push_files, push_card

    if args.dry_run and not args.push:
        raise RagQaArenaError("--dry-run DIR previews a push: give --push ORG/NAME too")
    if args.n_boot < 0:
        raise RagQaArenaError(f"--n-boot {args.n_boot}: give a non-negative number of bootstrap rounds, e.g. 1000")
    if not 0.0 < args.confidence < 1.0:
        raise RagQaArenaError(f"--confidence {args.confidence}: give a number between 0 and 1, e.g. 0.95")
    card = calibrate_judges(reference=args.reference, candidate=args.candidate, out=args.out,
                            predictions=_predictions(args.predictions), data_dir=args.data_dir,
                            n_boot=args.n_boot, seed=args.seed, confidence=args.confidence)
    print(_summary(card))
    print(f"Wrote {Path(args.out) / CARD_JSON} and {Path(args.out) / CARD_MD}", file=sys.stderr)
    if args.push and args.dry_run:
        files = card_push_files(args.out, repo_id=args.push)
        for path, data in files.items():
            target = Path(args.dry_run) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        print(f"Wrote {len(files)} files to {args.dry_run} (nothing uploaded): {', '.join(sorted(files))}", file=sys.stderr)
    elif args.push:
        print(push_card(args.out, args.push, private=args.private, token_from_env=args.token_from_env))
    return 0


def _summary(card: dict) -> str:
    def num(value, digits=3):
        return "n/a" if value is None else f"{value:.{digits}f}"

    def pct(value):
        return "n/a" if value is None else f"{value * 100:.1f}%"

    judges = card["judges"]
    low, high = card["kappa_ci"]
    lines = [
        f"candidate {', '.join(judges['candidate']['specs'])} against reference {', '.join(judges['reference']['specs'])}",
        f"  pairs both judged {card['n_pairs']:,} (unmatched: {card['unmatched']['reference_only']:,} reference only, "
        f"{card['unmatched']['candidate_only']:,} candidate only; {card['n_matched_failed']:,} failed on a side)",
        f"  agreement {pct(card['agreement'])}  kappa {num(card['kappa'])} [{num(low)}, {num(high)}]  "
        f"kappa on decisive pairs {num(card['kappa_decisive'])} (n={card['n_decisive']:,})",
    ]
    for name, s in card["win_rate_shift"].items():
        lines.append(f"  {name:<24} win {pct(s['reference_win_rate'])} -> {pct(s['candidate_win_rate'])} "
                     f"({s['win_rate'] * 100:+.1f} pts)  win+tie {pct(s['reference_win_tie_rate'])} -> "
                     f"{pct(s['candidate_win_tie_rate'])} ({s['win_tie_rate'] * 100:+.1f} pts)")
    rank = card["rank_correlation"]
    lines.append(f"  rank correlation: Spearman {num(rank['spearman'])}, Kendall {num(rank['kendall'])}"
                 + (f" ({rank['note']})" if rank.get("note") else ""))
    for role in ("reference", "candidate"):
        lines.append(f"  {role:<9} P(prefer longer) {pct(card['p_prefer_longer'][role])}  P(prefer first) "
                     f"{pct(card['p_prefer_first'][role])}  failed {card['n_failed'][role]:,}")
    return "\n".join(lines)
