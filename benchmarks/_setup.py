"""What every benchmark script does first: import this checkout's packages (and tests' local server),
and read the pinned benchmark files from ../shared/lfrqa when $LFRQA_DATA_DIR is not set."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if "LFRQA_DATA_DIR" not in os.environ and (ROOT.parent / "shared" / "lfrqa").is_dir():
    os.environ["LFRQA_DATA_DIR"] = str(ROOT.parent / "shared" / "lfrqa")

#: What a script prints first under ``--quick``: benchmarks/run_quick.py fails a script that does not print it
#: (one that ignores the flag would run its full, minutes-long measurement in CI).
QUICK_BANNER = "[quick]"


def quick_args(parser, **small):
    """Parse the command line with ``--quick`` added: small sizes (``small``, by option dest) replace the
    defaults, so that the script runs in seconds (CI: benchmarks/run_quick.py); options given explicitly
    still win. The full-mode figures are the README's; quick figures only show that the script works."""
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, runs in seconds (CI); " + ", ".join(f"{k}={v}" for k, v in small.items()))
    if "--quick" in sys.argv[1:]:
        parser.set_defaults(**small)
    args = parser.parse_args()
    if args.quick:
        print(f"{QUICK_BANNER} {Path(sys.argv[0]).name}: small sizes, not the README's figures", flush=True)
    return args


def timed_cli(argv: list[str]):
    """Wall seconds, peak RSS (MiB) and the result of ``python -m rag_qa_arena ARGV`` in a fresh process."""
    import subprocess
    import time

    probe = ("import resource, runpy, sys; sys.argv = ['rag-qa-arena', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('rag_qa_arena', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
             "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
             "sys.exit(code)")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - started
    peak = [line for line in done.stderr.splitlines() if line.startswith("PEAK ")]
    return wall, (int(peak[-1].split()[1]) / 1024 if peak else float("nan")), done
