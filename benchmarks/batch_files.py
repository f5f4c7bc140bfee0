"""Writing a full judge run (14,020 judge-sized requests, ~8 KB each) as Batch API input files.

    python benchmarks/batch_files.py

Prints seconds, files, bytes and peak memory for ``write_batch_files`` with the API's limits
(50,000 requests / 100 MB per file), then the seconds to parse as many output lines with
``parse_output_lines``. The requests are synthetic (random words, no benchmark text), with
the judge's shape: a ~6 KB system message, a ~2 KB user message (question + two answers),
and sha256 custom ids. Time and memory are measured in separate passes (tracemalloc slows
allocation-heavy code).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from _setup import quick_args
from metric_arena.llm import ChatRequest
from metric_arena.llm.batch import chat_body, parse_output_lines, write_batch_files

N_REQUESTS = 14_020


def _words(rng: random.Random, n_chars: int) -> str:
    out, size = [], 0
    while size < n_chars:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _requests(n: int) -> list[tuple[str, dict]]:
    rng = random.Random(0)
    system = _words(rng, 6_000)  # one shared system prompt, as in the judge
    requests = []
    for i in range(n):
        user = _words(rng, 2_000)
        request = ChatRequest([{"role": "system", "content": system}, {"role": "user", "content": user}], max_tokens=512)
        body = chat_body("gpt-4o-2024-08-06", request)
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        requests.append((key, body))
    return requests


def _output_lines(requests: list[tuple[str, dict]]) -> list[str]:
    return [json.dumps({"id": f"batch_req_{i}", "custom_id": key, "error": None, "response": {
        "status_code": 200, "request_id": f"req_{i}", "body": {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "<thinking>" + "x" * 400 + "</thinking><rating>1</rating>"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1_890, "completion_tokens": 120}}}})
        for i, (key, _) in enumerate(requests)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=N_REQUESTS)
    args = quick_args(parser, requests=300)
    t0 = time.perf_counter()
    requests = _requests(args.requests)
    print(f"built {len(requests):,} synthetic requests in {time.perf_counter() - t0:.1f} s")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        files = write_batch_files(requests, Path(tmp) / "timed")
        seconds = time.perf_counter() - start
        sizes = [f.stat().st_size for f in files]
        counts = [sum(1 for _ in open(f, "rb")) for f in files]

        tracemalloc.start()
        write_batch_files(requests, Path(tmp) / "traced")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    total = sum(sizes)
    print(f"write_batch_files: {seconds:.2f} s for {len(requests):,} requests "
          f"({len(requests) / seconds:,.0f} req/s, {total / 1024**2 / seconds:.0f} MB/s)")
    print(f"  files: {len(files)} (requests per file {counts}; MB per file {[round(s / 1024**2, 1) for s in sizes]})")
    print(f"  bytes: {total:,} ({total / 1024**2:.1f} MiB, {total / len(requests) / 1024:.2f} KiB per request)")
    print(f"  peak memory allocated while writing (tracemalloc): {peak / 1024**2:.1f} MiB")
    print(f"  process peak RSS: {rss_after:.0f} MiB (before writing: {rss_before:.0f} MiB, holding the requests)")

    lines = _output_lines(requests)
    start = time.perf_counter()
    results = parse_output_lines(lines)
    seconds = time.perf_counter() - start
    assert len(results) == len(requests)
    print(f"parse_output_lines: {seconds:.2f} s for {len(lines):,} output lines")


if __name__ == "__main__":
    main()
