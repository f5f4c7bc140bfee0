"""Peak memory and time of ``tournament --export-requests`` as the number of systems grows, and the per-file limits.

For one system ``judge --export-requests``; for N systems answering the first ``--questions`` LFRQA questions (synthetic answers of ~``--answer-chars``
characters; no benchmark text is written), ``tournament --export-requests`` (N matches against LFRQA on every
question, N(N-1)/2 pairs on the ``--sample``) runs in a fresh process, timed, with its peak RSS. Every shard is then
checked against ``--max-requests-per-file`` and ``--max-bytes-per-file`` (its lines counted and its size read from
disk) and the request count against the manifest. The time and memory slopes (a least-squares line in the number
of requests) are extrapolated to 14,020 questions, stated as such.

    python benchmarks/export_scale.py                         # 1, 10, 100 systems x 1,400 questions, --sample 100
    python benchmarks/export_scale.py --systems 1 10 --sample 700
    python benchmarks/export_scale.py --quick                 # 1 and 3 systems x 30 questions, 7 requests a file
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import _setup  # noqa: F401 - this checkout first on sys.path, and $LFRQA_DATA_DIR
from _setup import quick_args, timed_cli as _timed  # noqa: E402
import lfrqa  # noqa: E402

FULL = 14_020


def _check_shards(out: Path, max_requests: int, max_bytes: int) -> tuple[int, int, int, list[str]]:
    """(requests, files, bytes, problems) of an export folder, every shard read from disk."""
    manifest = json.loads((out / "requests.json").read_text())
    problems, n_lines, n_files, n_bytes = [], 0, 0, 0
    for entry in manifest["judges"]:
        for name in entry["files"]:
            path = out / name
            with open(path, "rb") as handle:
                lines = sum(1 for _ in handle)
            size = path.stat().st_size
            n_lines, n_files, n_bytes = n_lines + lines, n_files + 1, n_bytes + size
            if lines > max_requests or size > max_bytes:
                problems.append(f"{name}: {lines:,} requests, {size:,} bytes")
    if n_lines != manifest["n_requests"]:
        problems.append(f"{n_lines:,} lines in the shards, {manifest['n_requests']:,} in requests.json")
    return n_lines, n_files, n_bytes, problems


def _slope(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Intercept and slope of the least-squares line through (xs, ys)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
    return my - slope * mx, slope


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--questions", type=int, default=1_400)
    parser.add_argument("--sample", type=int, default=100, help="pair questions (the tournament's --sample)")
    parser.add_argument("--answer-chars", type=int, default=600)
    parser.add_argument("--max-requests-per-file", type=int, default=50_000)
    parser.add_argument("--max-bytes-per-file", type=int, default=200_000_000)
    parser.add_argument("--memory-limit-mib", type=float, default=1024.0, help="fail above this peak RSS")
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    if args.quick:
        args.systems, args.questions, args.sample, args.max_requests_per_file = [1, 3], 30, 10, 7
    qids = lfrqa.load("all")["qid"][: args.questions]
    filler = ("the system explains the answer with cited passages and some detail " * 40)[: args.answer_chars]
    failed, rows = False, []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(max(args.systems)):
            (folder / f"s{i}.jsonl").write_text("".join(
                json.dumps({"qid": q, "answer": f"system {i} on {q}: {filler}"}) + "\n" for q in qids))
        print(f"tournament --export-requests, {args.questions:,} questions, --sample {args.sample:,}, answers of "
              f"~{args.answer_chars} characters, at most {args.max_requests_per_file:,} requests and "
              f"{args.max_bytes_per_file:,} bytes a file")
        for n in args.systems:
            out = folder / f"export-{n}"
            # one system: `judge --export-requests` (a tournament needs two); more: `tournament --export-requests`
            inputs = (["judge", "--predictions", str(folder / "s0.jsonl")] if n == 1 else
                      ["tournament", *(str(folder / f"s{i}.jsonl") for i in range(n)), "--sample", str(args.sample)])
            wall, peak, done = _timed([*inputs, "--judge", "openai:gpt-4o", "--api-key", "sk-bench", "--cache-dir", str(folder / "cache"), "--export-requests",
                                       str(out), "--max-requests-per-file", str(args.max_requests_per_file),
                                       "--max-bytes-per-file", str(args.max_bytes_per_file)])
            if done.returncode != 0:
                print(f"  {n:>4} systems: exit {done.returncode}: {done.stderr.strip()[-300:]}")
                return 1
            requests, files, size, problems = _check_shards(out, args.max_requests_per_file, args.max_bytes_per_file)
            shutil.rmtree(out)
            over = peak > args.memory_limit_mib
            failed |= bool(problems) or over
            rows.append((requests, wall, peak))
            print(f"  {n:>4} systems: {requests:>10,} requests in {files:,} file(s), {size / 1e9:6.2f} GB, "
                  f"{wall:7.1f} s ({requests / wall:,.0f} requests/s), peak RSS {peak:6.0f} MiB"
                  f"{'  OVER THE MEMORY LIMIT' if over else ''}"
                  f"{'  LIMITS BROKEN: ' + '; '.join(problems[:3]) if problems else '  every file within the limits'}")
    if len(rows) > 1:
        t0, t_slope = _slope([r[0] for r in rows], [r[1] for r in rows])
        m0, m_slope = _slope([r[0] for r in rows], [r[2] for r in rows])
        n = max(args.systems)
        big = n * FULL + n * (n - 1) // 2 * min(args.sample, FULL)
        print(f"  slope: {t_slope * 1e6:,.0f} us and {m_slope * 1e3 * 1024:,.2f} KiB of peak RSS per request "
              f"(intercepts {t0:.1f} s, {m0:.0f} MiB)")
        print(f"  extrapolated (not measured): {n} systems x {FULL:,} questions, --sample {args.sample:,} = "
              f"{big:,} requests: ~{t0 + t_slope * big:,.0f} s in one process, peak ~{m0 + m_slope * big:,.0f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
