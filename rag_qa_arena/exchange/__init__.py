"""The flags of ``--export-requests`` (request files for other engines), shared by ``judge`` and ``tournament``,
and the export they run: shards written as the requests come, split by count and by the per-file limits,
one part of the matches per process with ``--export-part K/N``."""

from __future__ import annotations

import argparse
import re
import sys

from lfrqa.errors import RagQaArenaError


def add_exchange_flags(parser: argparse.ArgumentParser, *, judge: bool) -> None:
    """``--export-requests DIR``, ``--shards K``, the per-file limits, ``--export-part K/N`` and (``judge``)
    ``--import-results FILE...``."""
    from metric_arena.llm.batch import EXPORT_MAX_BYTES, MAX_REQUESTS

    group = parser.add_argument_group(
        "Request files for other engines (vllm run-batch, Ray Data LLM; docs/scaling.md)",
        "  1) --export-requests DIR writes the requests not yet cached, OpenAI batch format, custom_id = cache key;\n"
        "  2) run them anywhere; 3) `judge --import-results OUT.jsonl... --out RUN` stores the answers in the\n"
        "     judgment cache and finishes the run from it (online only for what is missing; nothing with --batch-only)",
    )
    group.add_argument("--export-requests", metavar="DIR",
                       help="write the judge requests not yet cached to DIR (one folder per judge, --shards files "
                            "each or more, and requests.json) and exit: nothing is sent. Written as they are "
                            "planned: memory does not grow with the number of systems or questions")
    group.add_argument("--shards", type=int, default=1, metavar="K",
                       help="with --export-requests: split each judge's requests into K files at least (default: 1)")
    group.add_argument("--max-requests-per-file", type=int, default=MAX_REQUESTS, metavar="N",
                       help=f"with --export-requests: a new file past N requests (default: {MAX_REQUESTS:,}, the "
                            "OpenAI Batch API's limit)")
    group.add_argument("--max-bytes-per-file", type=int, default=EXPORT_MAX_BYTES, metavar="B",
                       help=f"with --export-requests: a new file past B bytes (default: {EXPORT_MAX_BYTES:,}, the "
                            "Batch API's 200 MB)")
    group.add_argument("--export-part", metavar="K/N",
                       help="with --export-requests: write part K of N (0 <= K < N: matches K, K+N, ... of the schedule; "
                            "one system or pair per process with N = the number of matches), so N processes export "
                            "one folder in parallel; each writes requests.part-K-of-N.json and its own shards, and "
                            "--import-results --export-dir reads them all (duplicates are removed within a part)")
    if judge:
        group.add_argument("--import-results", nargs="+", metavar="FILE",
                           help="read OpenAI batch-format output files into the judgment cache (checked as online "
                                "replies), then run the judge from the cache. Only answers to this judge's requests "
                                "are stored (those of --predictions, or exported in --export-dir); every file is "
                                "read before any is stored; lines over 1 MiB stop the import")
        group.add_argument("--export-dir", metavar="DIR",
                           help="with --import-results: the --export-requests folder the results answer; the "
                                "answers to requests it holds for this judge may be stored (needed without "
                                "--predictions, e.g. for a tournament's export)")
        group.add_argument("--accept-model-alias", action="store_true",
                           help="with --import-results: store replies naming another model than the one requested "
                                "(a server that aliases names); they are counted, and recorded in the verdicts")


def export_part(text: str | None) -> tuple[int, int] | None:
    """``--export-part K/N`` as ``(K, N)``, K counted from 0 as in the file names; a one-line error otherwise.

    >>> export_part("1/8"), export_part(None)
    ((1, 8), None)
    """
    if text is None:
        return None
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not found or not 0 <= int(found.group(1)) < int(found.group(2)):
        raise RagQaArenaError(f"--export-part {text!r}: give K/N with 0 <= K < N (counted from 0, as in the file "
                              "names), e.g. --export-part 0/4 ... --export-part 3/4 for four processes")
    return int(found.group(1)), int(found.group(2))


def export_requests(args: argparse.Namespace, matches, judge, run) -> int:
    """Write the request files of ``matches`` (an iterable, read once) for ``--export-requests`` and say what
    they hold."""
    from metric_arena.judge import export_file, export_judge_requests
    from metric_arena.llm.batch import FileLimits

    for flag, value, what in (("--shards", args.shards, "number of files"),
                              ("--max-requests-per-file", args.max_requests_per_file, "number of requests"),
                              ("--max-bytes-per-file", args.max_bytes_per_file, "number of bytes")):
        if value < 1:
            raise RagQaArenaError(f"{flag} must be a positive {what}, got {value}")
    if args.no_cache:
        raise RagQaArenaError("--export-requests leaves out what the judgment cache answers: drop --no-cache")
    part = export_part(args.export_part)
    limits = FileLimits(shards=args.shards, max_requests=args.max_requests_per_file,
                        max_bytes=args.max_bytes_per_file)
    done = export_judge_requests(matches, args.export_requests, judge=judge, run=run, shards=limits,
                                 data_dir=args.data_dir, part=part)
    for entry in done["judges"]:
        print(f"{entry['judge']}: {entry['n_requests']:,} requests in {len(entry['files'])} file(s) under "
              f"{args.export_requests}/{entry['folder']} ({entry['n_cached']:,} already cached)")
    print(f"written: {args.export_requests}/{export_file(part)}; nothing sent. Run the shards (docs/scaling.md), "
          "then `judge --import-results OUT.jsonl...` with this command's other flags", file=sys.stderr)
    return 0
