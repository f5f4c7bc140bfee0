"""The README's worked example of anchored rates, end to end on the local test server.

The judges of ``benchmarks/judge_card_example.py``: a "paper" judge served as openai:gpt-4-0125-preview and a
cheaper candidate served as openai:gpt-4o-mini (agrees with the paper judge's rule 65% of the time, otherwise
prefers the longer answer, or answer 1). Three systems answer the first N LFRQA test questions. For each,
`rag-qa-arena anchor` judges every pair with the cheap judge and a seeded random 300 with the paper judge;
then, to know the truth, `judge` runs the paper judge on every pair too. Printed per system: the paper judge's
rate on all N pairs, the raw cheap rate, the anchored rate and its interval, and whether it covers the truth;
then the dry run (nothing cached) pricing both judges and planning the anchors with the first run as a pilot. Nothing leaves the machine.

Run: python benchmarks/anchor_example.py [--pairs 2000] [--anchors 300] [--out /tmp/anchor-example] [--quick]
--quick: 120 pairs, 40 anchors; exits 1 when a command fails or an anchored interval misses the truth by more
than 5 points.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args  # noqa: E402
from judge_card_example import STRENGTH, _u, reply
from lfrqa.kernel import loads_json
from rag_qa_arena.cli import main as cli
from tests.openai_server import OpenAIServer

CHEAP, PAPER = "openai:gpt-4o-mini", "openai:gpt-4-0125-preview"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/anchor-example")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--anchors", type=int, default=300)
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    if args.quick:
        args.pairs, args.anchors = 120, 40
    import lfrqa

    root = Path(args.out)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    qids = lfrqa.load("all")["qid"][: args.pairs]
    files = {}
    for system in (s for s in STRENGTH if s != "LFRQA"):
        files[system] = root / f"{system}.jsonl"
        with files[system].open("w") as handle:
            for qid in qids:
                words = 20 + int(_u(f"{system}:{qid}") * 180)
                handle.write(json.dumps({"qid": qid, "answer": f"SYS[{system}] " + " ".join(["word"] * words)}) + "\n")
    failures = []
    with OpenAIServer(reply) as server:
        flags = ["--base-url", server.base_url, "--api-key", "local", "--cache-dir", str(root / "cache"),
                 "--no-progress", "--max-concurrency", "32"]
        print(f"{'system':<8} {'paper, all pairs':>16} {'raw cheap':>9} {'anchored [95% interval]':>26} "
              f"{'reference only [95%]':>22} {'covers':>6}")
        for system, path in files.items():
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = cli(["anchor", "--predictions", str(path), "--judge", CHEAP, "--anchor-judge", PAPER,
                            "--anchor-sample", str(args.anchors), "--anchor-seed", "7", "--out",
                            str(root / "runs" / system), *flags])
                code += cli(["judge", "--predictions", str(path), "--judge", PAPER, "--out",
                             str(root / "truth" / system), *flags])
            if code:
                failures.append(f"{system}: a command failed")
                continue
            truth = loads_json((root / "truth" / system / "summary.json").read_text())["win_rate"]
            win = loads_json((root / "runs" / system / "anchored.json").read_text())["win_rate"]
            covers = win["ci"][0] <= truth <= win["ci"][1]
            if win["ci"][0] - 0.05 > truth or truth > win["ci"][1] + 0.05:
                failures.append(f"{system}: anchored interval {win['ci']} misses the truth {truth:.3f}")
            ref = win["reference_only"]
            print(f"{system:<8} {truth:>16.1%} {win['cheap']['estimate']:>9.1%} "
                  f"{win['estimate']:>8.1%} [{win['ci'][0]:.1%}, {win['ci'][1]:.1%}] {' ' * 4}"
                  f"{ref['estimate']:>6.1%} [{ref['ci'][0]:.1%}, {ref['ci'][1]:.1%}] {'yes' if covers else 'no':>6}")
        first = next(iter(files))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli(["anchor", "--predictions", str(files[first]), "--judge", CHEAP, "--anchor-judge", PAPER,
                 "--dry-run", "--half-width", "0.03", "--pilot", str(root / "runs" / first), *flags, "--no-cache"])
        print("\n".join(line for line in out.getvalue().splitlines() if line.startswith(("dry run", "anchors", "judge"))
                        or "cost:" in line))
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
