"""Peak memory of `report` over many large run folders: verdicts are read one line at a time and, for the
leaderboard, without the judge's reply texts.

Writes ``--runs`` run folders of one verdict per LFRQA test question each (14,020 by default), every verdict
with one judgment whose reply is ``--reply-chars`` long (a judge's reasoning), then runs ``write_report`` on
them in a fresh process and prints its peak RSS and wall time, and the same for ``load_run`` of every
folder kept whole (``lean=False``, what `push` needs) for contrast.

    python benchmarks/report_memory.py                     # 10 runs x 14,020 verdicts
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402


def write_runs(root: Path, *, n_runs: int, reply_chars: int, questions: int = 0) -> list[Path]:
    import lfrqa

    rows = lfrqa.load("all")
    rows = rows.select(range(questions)) if questions else rows
    qids, domains = rows["qid"], rows["domain"]
    rng = random.Random(0)
    folders = []
    for k in range(n_runs):
        folder = root / f"system{k}"
        folder.mkdir()
        with (folder / "verdicts.jsonl").open("w") as out:
            for qid, domain in zip(qids, domains):
                rating = rng.choice([0, 1, 2])
                outcome = ["tie", "win", "loss"][rating]
                judgment = {"judge": "openai:gpt-4o", "a_position": 1, "rating": rating, "outcome": outcome,
                            "raw": "<thinking>" + "x" * reply_chars + f"</thinking><rating>{rating}</rating>",
                            "attempts": 1, "cached": False}
                out.write(json.dumps({"qid": qid, "domain": domain, "system_a": f"system{k}", "system_b": "LFRQA",
                                      "outcome": outcome, "failed": False, "flipped": None, "no_answer_a": False,
                                      "judgments": [judgment]}) + "\n")
        folders.append(folder)
    return folders


def measure(mode: str, folders: list[str], out: str) -> dict:
    start = time.perf_counter()
    if mode in ("report", "no-viewer"):
        from metric_arena.report import ReportAnalyses, ViewerOptions, write_report
        from metric_arena.stats import Intervals

        write_report(folders, out, intervals=Intervals(n_boot=100), analyses=ReportAnalyses(plots=False), viewer=ViewerOptions(enabled=mode == "report"))
    else:
        from metric_arena.report import load_run

        runs = [load_run(f) for f in folders]
        assert sum(len(r.verdicts) for r in runs)
    return {"wall_s": round(time.perf_counter() - start, 1),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--reply-chars", type=int, default=600)
    parser.add_argument("--questions", type=int, default=0, help="LFRQA questions per run folder (default: all)")
    parser.add_argument("--mode", choices=["report", "no-viewer", "whole"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("folders", nargs="*", help=argparse.SUPPRESS)
    args = quick_args(parser, runs=2, questions=300)
    if args.mode:
        print(json.dumps(measure(args.mode, args.folders, args.out)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folders = write_runs(Path(tmp), n_runs=args.runs, reply_chars=args.reply_chars, questions=args.questions)
        size = sum((f / "verdicts.jsonl").stat().st_size for f in folders) / 1024**2
        print(f"{args.runs} run folders, {size:.0f} MiB of verdicts")
        for mode, what in (("report", "write_report with the verdict viewer"), ("no-viewer", "write_report without it"),
                           ("whole", "load_run of every folder, whole")):
            done = subprocess.run([sys.executable, __file__, "--mode", mode, "--out", f"{tmp}/board",
                                   *map(str, folders)], capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{what:<36} peak RSS {row['peak_mb']:>5} MB  {row['wall_s']:>6} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
