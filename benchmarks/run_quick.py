"""Run every benchmark script in quick mode, as CI does: each must finish and exit 0.

    python benchmarks/run_quick.py                 # every benchmarks/*.py (not _*.py, not this runner)
    python benchmarks/run_quick.py a.py b.py       # only these

Each script runs in a fresh process with ``--quick`` (small sizes, seconds each). A script fails when it exits
non-zero, runs past ``--timeout`` seconds, or does not print the quick banner (``_setup.quick_args`` prints it):
a script that ignores ``--quick`` would run its full measurement in CI, and one that does not know the flag
exits 2. New scripts are picked up by their file name alone. Prints one line per script (seconds, status),
the tail of each failure's output, and the total; exits 1 when any failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _setup import QUICK_BANNER

HERE = Path(__file__).resolve().parent


def scripts(folder: Path = HERE) -> list[Path]:
    """Every benchmark script of ``folder``: ``*.py`` but helpers (``_*.py``) and this runner."""
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_") and p.name != Path(__file__).name)


def run_one(script: Path, timeout: float) -> tuple[str, float, str]:
    """(status, seconds, output) of ``script --quick``; status is "ok" or why it failed."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(script), "--quick"], cwd=script.parent, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        output = (error.stdout or b"").decode(errors="replace") if isinstance(error.stdout, bytes) else error.stdout
        return f"timed out after {timeout:g} s", time.perf_counter() - start, output or ""
    seconds = time.perf_counter() - start
    output = done.stdout + done.stderr
    if done.returncode != 0:
        return f"exit {done.returncode}", seconds, output
    if QUICK_BANNER not in done.stdout:
        return f"no {QUICK_BANNER} banner: --quick is not supported (use _setup.quick_args)", seconds, output
    return "ok", seconds, output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", nargs="*", type=Path, help="scripts to run (default: every benchmarks/*.py)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds one script may run (default 180)")
    args = parser.parse_args()
    chosen = [p.resolve() for p in args.scripts] or scripts()
    failed = []
    began = time.perf_counter()
    for script in chosen:
        status, seconds, output = run_one(script, args.timeout)
        print(f"{script.name:<32} {seconds:7.1f} s  {status}", flush=True)
        if status != "ok":
            failed.append(script.name)
            print("    " + "\n    ".join(output.strip().splitlines()[-15:]), flush=True)
    print(f"{len(chosen) - len(failed)}/{len(chosen)} benchmark scripts ran in quick mode in "
          f"{time.perf_counter() - began:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
