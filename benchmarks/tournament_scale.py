"""A tournament's planning as the number of systems grows, and the refusal above MAX_TOURNAMENT_SYSTEMS.

For N systems answering the first ``--questions`` LFRQA questions, ``tournament --dry-run`` (every prompt
rendered and its tokens counted: N matches against LFRQA and N(N-1)/2 pairs on the shared sample) is timed
in a fresh process with its peak RSS; then ``--refuse`` prediction files (10,000 by default, more than
MAX_TOURNAMENT_SYSTEMS) go to the same command, which must refuse them in one line before reading them.

    python benchmarks/tournament_scale.py                              # N = 4, 8, 16; 20 questions; 10,000 files
    python benchmarks/tournament_scale.py --systems 8 16 32 --questions 50
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args, timed_cli as _timed  # noqa: E402
import lfrqa  # noqa: E402
from metric_arena.judge import MAX_TOURNAMENT_SYSTEMS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--refuse", type=int, default=10_000)
    args = quick_args(parser, systems=[4], questions=5, refuse=MAX_TOURNAMENT_SYSTEMS + 1)
    qids = lfrqa.load("all")["qid"][: args.questions]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(max(max(args.systems), args.refuse)):
            lines = [{"qid": q, "answer": f"system {i} answers {q}."} for q in qids]
            (folder / f"s{i}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        print(f"tournament --dry-run, {args.questions} questions, --sample {args.questions}; "
              f"MAX_TOURNAMENT_SYSTEMS = {MAX_TOURNAMENT_SYSTEMS}")
        failed = False
        for n in args.systems:
            files = [str(folder / f"s{i}.jsonl") for i in range(n)]
            wall, peak, done = _timed(["tournament", *files, "--judge", "openai:gpt-4o", "--sample",
                                       str(args.questions), "--dry-run"])
            requests = n * args.questions + n * (n - 1) // 2 * args.questions
            status = "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
            failed = failed or done.returncode != 0
            print(f"  {n:>5} systems: {requests:>9,} requests planned in {wall:6.2f} s "
                  f"({requests / wall:,.0f} per s), peak RSS {peak:6.0f} MiB  {status}")
        files = [str(folder / f"s{i}.jsonl") for i in range(args.refuse)]
        wall, peak, done = _timed(["tournament", *files, "--judge", "openai:gpt-4o", "--dry-run"])
        print(f"  {args.refuse:>5,} systems: exit {done.returncode} in {wall:.2f} s, peak RSS {peak:.0f} MiB: "
              f"{done.stderr.splitlines()[0] if done.stderr else ''}")
        if failed:
            sys.exit("FAIL: a dry run did not finish (see above)")
        if done.returncode != 2:
            sys.exit(f"FAIL: {args.refuse:,} prediction files were not refused with exit 2 (exit {done.returncode})")
        rate_hint = MAX_TOURNAMENT_SYSTEMS * (MAX_TOURNAMENT_SYSTEMS - 1) // 2 * 700
        print(f"  at the limit, {MAX_TOURNAMENT_SYSTEMS} systems on the default 700-question sample plan "
              f"{rate_hint:,} pair judgments")


if __name__ == "__main__":
    main()
