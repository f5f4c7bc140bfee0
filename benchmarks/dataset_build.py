"""Seconds and peak memory to build LFRQA from the pinned files, and to load it from the Arrow cache.

    LFRQA_DATA_DIR=../shared/lfrqa python benchmarks/dataset_build.py

Each measurement runs in a fresh subprocess (so the peak RSS is its own) with a fresh cache folder
for the build and the same, warm folder for the cached load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import lfrqa
t1 = time.perf_counter()
ds = lfrqa.load("all")
t2 = time.perf_counter()
assert ds.num_rows >= 14020
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "rows": ds.num_rows, "peak_rss_mb": peak_mb}))
"""


def _run(cache: str) -> dict:
    env = {**os.environ, "HF_DATASETS_CACHE": cache, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if not os.environ.get("LFRQA_DATA_DIR"):
        sys.exit("Set LFRQA_DATA_DIR to the pinned benchmark files (e.g. ../shared/lfrqa)")
    with tempfile.TemporaryDirectory() as cache:
        build = _run(cache)
        cached = [_run(cache) for _ in range(3)]
    best = min(cached, key=lambda r: r["load_s"])
    print(f"rows: {build['rows']}")
    print(f"build from pinned files (verify + parse + Arrow write): {build['load_s']:.2f} s, peak RSS {build['peak_rss_mb']:.0f} MB")
    print(f"load from Arrow cache (verify checksums + memory-map): {best['load_s']:.2f} s, peak RSS {best['peak_rss_mb']:.0f} MB")
    print(f"import lfrqa: {best['import_s']:.2f} s")


if __name__ == "__main__":
    main()
