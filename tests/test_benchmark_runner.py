"""benchmarks/run_quick.py, which CI runs: every benchmark script in quick mode, and a script that breaks or
does not support ``--quick`` fails it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "benchmarks" / "run_quick.py"

GOOD = "import sys\nassert sys.argv[1:] == ['--quick']\nprint('[quick] good.py: small sizes')\n"
SCRIPTS = {
    "good.py": GOOD,
    "unknown_flag.py": "import argparse\nargparse.ArgumentParser().parse_args()\n",  # exits 2 on --quick
    "ignores_flag.py": "print('a full measurement, ignoring --quick')\n",  # would run minutes in CI
    "broken.py": "from metric_arena.judge import no_such_name\n",
}


def run_quick(*scripts: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), "--timeout", "120", *map(str, scripts)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_a_script_that_breaks_or_lacks_quick_mode_fails_the_runner(tmp_path):
    for name, text in SCRIPTS.items():
        (tmp_path / name).write_text(text)
    done = run_quick(*(tmp_path / name for name in SCRIPTS))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip() and not line[0].isspace()}
    assert lines["good.py"].rstrip().endswith("ok")
    assert "exit 2" in lines["unknown_flag.py"] and "exit 1" in lines["broken.py"]
    assert "--quick is not supported" in lines["ignores_flag.py"]
    assert "1/4 benchmark scripts ran" in done.stdout and "no_such_name" in done.stdout
    assert run_quick(tmp_path / "good.py").returncode == 0


def test_the_runner_picks_up_every_benchmark_script_and_each_has_a_quick_mode():
    """By file name alone (a new script is run in CI without being listed anywhere); helpers (_*.py) are not."""
    listed = subprocess.run([sys.executable, "-c", "import run_quick; print('\\n'.join(p.name for p in run_quick.scripts()))"],
                            capture_output=True, text=True, cwd=ROOT / "benchmarks", timeout=120)
    assert listed.returncode == 0, listed.stderr
    names = listed.stdout.split()
    expected = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                      if not p.name.startswith("_") and p.name != "run_quick.py")
    assert names == expected and "tournament_throughput.py" in names
    for name in names:  # the runner enforces it by running them; this catches a missing flag without running
        text = (ROOT / "benchmarks" / name).read_text(encoding="utf-8")
        assert "quick_args(" in text or "QUICK_BANNER" in text, f"{name} has no --quick mode (_setup.quick_args)"


def test_ci_runs_the_benchmarks_in_quick_mode():
    assert "benchmarks/run_quick.py" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
