"""Start-up cost: `rag-qa-arena --help` and `import metric_arena`, each in a fresh interpreter.

Prints the median wall time of several runs and which heavy libraries each one loads (none should).

    python benchmarks/startup.py [--runs 7]
"""

from __future__ import annotations

from _setup import quick_args

import argparse
import statistics
import subprocess
import sys
import time

HEAVY = ("datasets", "pyarrow", "pandas", "torch", "transformers", "matplotlib")
CASES = {
    "rag-qa-arena --help": "import sys; from rag_qa_arena.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "import metric_arena": "import metric_arena",
    "import lfrqa": "import lfrqa",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = quick_args(parser, runs=1)
    for name, code in CASES.items():
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        probe = code + f"\nimport sys\nprint('HEAVY:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
        loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
        heavy = loaded.stdout.rsplit("HEAVY:", 1)[-1].strip()
        print(f"{name:<24} median {statistics.median(times):.3f} s over {args.runs} runs; "
              f"heavy libraries loaded: {heavy or 'none'}")


if __name__ == "__main__":
    main()
