"""Peak memory of a judge run while four replies of 150 MiB each arrive at once.

    python benchmarks/reply_memory.py [--mib 150] [--n 4] [--code PATH]   # PATH: another checkout (a "before")

A server in its own process (``python -m tests.openai_server --huge-reply-mib N``) streams every
reply as valid JSON whose text is N MiB, generated on the fly; a fresh client process judges ``n``
pairs at once against it (and, for the baseline, against a server of normal replies) and reports
its peak RSS. Reply bodies are read chunk by chunk and never past their limit
(:func:`metric_arena.llm.max_body_bytes`): the huge replies fail as ``oversized_body`` and the
peak stays near the baseline.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _setup import ROOT, quick_args  # noqa: E402 - this checkout first on sys.path

from tests.robustness.test_odd_replies import peak_rss_mib, serve  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=float, default=150.0)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose client is measured (default: this one)")
    args = quick_args(parser, mib=8.0, n=2)
    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp), 0) as normal, serve(Path(tmp), args.mib) as huge:
        base = peak_rss_mib(normal, args.n, args.code)
        big = peak_rss_mib(huge, args.n, args.code)
    print(f"client code: {args.code}")
    print(f"{args.n} normal replies:        peak RSS {base[0]:,} MiB, failed {base[1]}, {base[3]} s")
    print(f"{args.n} replies of {args.mib:g} MiB: peak RSS {big[0]:,} MiB, failed {big[1]}, errors {big[2]}, {big[3]} s")


if __name__ == "__main__":
    sys.exit(main())
