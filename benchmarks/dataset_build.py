"""Seconds, CPU and peak memory to build LFRQA from the pinned files, to load it from the Arrow cache, and to read
the same six files with a plain ``pandas.read_json``.

    LFRQA_DATA_DIR=../shared/lfrqa python benchmarks/dataset_build.py [--runs 3]

Each measurement runs in a fresh subprocess (its wall time from before ``import lfrqa``, its own CPU time from
``getrusage`` so that a busy machine distorts it less, and its own peak RSS):

- build: a fresh Arrow cache, from ``$LFRQA_DATA_DIR``;
- warm load, data folder: the same cache again (best of ``--runs``);
- warm load, download cache: no data folder and no offline flags, the pinned files in the ``datasets`` download
  cache as an earlier online run leaves them, behind a socket guard that fails on any connection or name lookup
  (built once, then loaded ``--runs`` times);
- ``pandas.read_json(lines=True)`` of the six published annotation files, concatenated (best of ``--runs``).

Exits 1 when a warm load imports ``fsspec.implementations.http`` or any load touches the network.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import ROOT, quick_args  # noqa: E402
from tests.test_pinned_resolution import fill_downloads  # noqa: E402  (the download cache an online run leaves)

GUARD = r"""
import socket
def _refuse(*args, **kwargs):
    raise RuntimeError(f"network used: {args[:2]!r}")
socket.socket.connect = socket.socket.connect_ex = socket.getaddrinfo = socket.create_connection = _refuse
"""
_CHILD = GUARD + r"""
import json, resource, sys, time
t0 = time.perf_counter()
if sys.argv[1] == "pandas":
    import glob
    import pandas
    files = sorted(glob.glob(sys.argv[2] + "/data/annotations_*_with_citation.jsonl"))
    assert len(files) == 6, files
    rows = len(pandas.concat([pandas.read_json(f, lines=True) for f in files], ignore_index=True))
else:
    import lfrqa
    rows = lfrqa.load("all").num_rows
wall = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rows": rows,
                  "peak_rss_mb": usage.ru_maxrss / 1024, "http": "fsspec.implementations.http" in sys.modules}))
"""


def _run(what: str, env: dict, data: str = "") -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, what, data], env=env, capture_output=True, text=True,
                          cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"{what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _line(label: str, row: dict) -> str:
    return (f"{label:<46} {row['wall_s']:6.2f} s wall, {row['cpu_s']:5.2f} s CPU, peak RSS {row['peak_rss_mb']:4.0f} MB"
            + ("  [imported fsspec.implementations.http]" if row["http"] else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="warm loads and pandas reads, best shown (default 3)")
    args = quick_args(parser, runs=1)
    data = os.environ.get("LFRQA_DATA_DIR")
    if not data:
        sys.exit("Set LFRQA_DATA_DIR to the pinned benchmark files (e.g. ../shared/lfrqa)")
    base = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        local = {**base, "HOME": tmp, "HF_DATASETS_CACHE": f"{tmp}/local", "LFRQA_DATA_DIR": data}
        online = {**base, "HOME": tmp, "HF_DATASETS_CACHE": f"{tmp}/online"}  # no data folder, no offline flags
        fill_downloads(Path(data), Path(tmp) / "online" / "downloads")
        build = _run("lfrqa", local)
        warm = min((_run("lfrqa", local) for _ in range(args.runs)), key=lambda r: r["cpu_s"])
        online_build = _run("lfrqa", online)
        online_warm = min((_run("lfrqa", online) for _ in range(args.runs)), key=lambda r: r["cpu_s"])
        plain = min((_run("pandas", local, data) for _ in range(args.runs)), key=lambda r: r["cpu_s"])
    print(f"rows: {build['rows']} (pandas: {plain['rows']}); best of {args.runs} for the warm loads and pandas")
    print(_line("build from the data folder", build))
    print(_line("warm load, data folder", warm))
    print(_line("build from the download cache, no network", online_build))
    print(_line("warm load, download cache, no network", online_warm))
    print(_line("pandas.read_json of the six files", plain))
    print(f"warm load / pandas.read_json: {warm['wall_s'] / plain['wall_s']:.2f}x wall, "
          f"{warm['cpu_s'] / plain['cpu_s']:.2f}x CPU")
    bad = [name for name, row in (("warm", warm), ("warm, download cache", online_warm)) if row["http"]]
    if bad:
        print(f"FAIL: a warm load imported fsspec.implementations.http ({', '.join(bad)})")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
