"""Flags the commands share and what they do with them: backend and run flags, rate limits, sampling and
early stopping, the Batch API steps, and how failures become exit codes and one-line messages."""

from __future__ import annotations

import argparse
import errno
import math
import os
import sys
from collections.abc import Callable
from typing import TypeVar

from lfrqa.errors import RagQaArenaError

__all__ = [
    "BATCH_NOT_READY_EXIT",
    "FATAL_EXIT",
    "WRITE_EXIT",
    "add_backend_flags",
    "add_judge_scale_flags",
    "add_rate_limit_flags",
    "add_run_flags",
    "add_tensor_parallel_flag",
    "all_failed_message",
    "api_key",
    "cannot_write_message",
    "check_backend_args",
    "check_judge_scale_args",
    "confidence_level",
    "decimal",
    "finite",
    "judge_backends",
    "judge_settings",
    "make_limiter",
    "percent",
    "positive_int",
    "print_table",
    "run_settings",
    "run_reporting_failures",
    "seed",
    "stop_note",
]

#: Exit status when the server rejects the key, does not serve the model or cannot be reached (the
#: run stops at once), and when a run ends with every item failed.
FATAL_EXIT = 3
#: Exit status when the output cannot be written (bad input exits 2 as well).
WRITE_EXIT = 2

_WRITE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT, errno.EFBIG, errno.EIO,
                 errno.ENOTDIR, errno.EEXIST, errno.EISDIR}

T = TypeVar("T")


def add_backend_flags(parser: argparse.ArgumentParser, kind: str) -> None:
    """``--base-url``, ``--api-key``, ``--max-concurrency`` and ``--timeout``; ``kind`` names what
    the command calls in the help ("judges", "models")."""
    parser.add_argument("--base-url", metavar="URL", action="append",
                        help=f"OpenAI-compatible server for openai {kind}, e.g. http://localhost:8000/v1 "
                             "(default: $OPENAI_BASE_URL, else OpenAI); repeat it for replicas of one model: "
                             "requests go to the least-loaded one, a failing one is taken out and tried later, "
                             "one replying as another model is taken out for good (summary.json: endpoints)")
    parser.add_argument("--endpoint-name", metavar="NAME",
                        help="what names the server in the cache key (default: the first --base-url), so "
                             "replicas and later runs on other servers of the same model share answers; "
                             "recorded in summary.json: a run folder is resumed only under the same name")
    parser.add_argument("--api-key", metavar="KEY",
                        help=f"API key for openai {kind} (default: $OPENAI_API_KEY; prefer the environment "
                             "variable: command lines end up in shell history). Never written anywhere.")
    from metric_arena.llm import DEFAULT_MAX_CONCURRENCY

    parser.add_argument("--max-concurrency", type=int, default=DEFAULT_MAX_CONCURRENCY, metavar="N",
                        help=f"requests in flight at once (default: {DEFAULT_MAX_CONCURRENCY})")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help=f"the longest one attempt at a request to openai {kind} may take, start to last "
                             "byte (default: 120)")


def add_run_flags(parser: argparse.ArgumentParser, *, cache: str, cost: str) -> None:
    """``--cache-dir``, ``--no-cache``, ``--data-dir``, ``--dry-run`` and ``--no-progress``;
    ``cache`` names the cache in the help ("judgment cache"), ``cost`` what a dry run prints."""
    parser.add_argument("--cache-dir", metavar="DIR",
                        help=f"{cache} folder, shared by `judge` and `generate` (default: $RAG_QA_ARENA_CACHE, "
                             "else ~/.cache/rag_qa_arena)")
    parser.add_argument("--no-cache", action="store_true", help=f"neither read nor write the {cache}")
    parser.add_argument("--data-dir", metavar="DIR",
                        help="local copy of the benchmark's pinned files (default: $LFRQA_DATA_DIR, else download)")
    parser.add_argument("--dry-run", action="store_true",
                        help=f"print requests, tokens and {cost} (ending with 'estimated_cost_usd: N'), send nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def check_backend_args(args: argparse.Namespace) -> None:
    """Reject a ``--max-concurrency`` below 1 or a ``--timeout`` that is not positive."""
    if args.max_concurrency < 1:
        raise RagQaArenaError(f"--max-concurrency must be >= 1, got {args.max_concurrency}")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        raise RagQaArenaError(f"--timeout must be a positive, finite number of seconds (e.g. 120), got {args.timeout:g}")


def api_key(args: argparse.Namespace) -> str | None:
    """``--api-key``, else ``$OPENAI_API_KEY``."""
    return args.api_key or os.environ.get("OPENAI_API_KEY")


def cannot_write_message(error: OSError, where: str | None) -> str | None:
    """``"cannot write to DIR: <reason> (disk full or read-only?)"`` for a failed write (full
    disk, read-only or forbidden folder, a file where a folder should be), else None."""
    if error.errno is None:
        return str(error) if isinstance(error, PermissionError) else None
    if error.errno not in _WRITE_ERRNOS:
        return None
    place = error.filename or where or "the output folder"
    if error.errno in (errno.EEXIST, errno.ENOTDIR):
        from lfrqa.kernel import file_in_the_way, in_the_way_message

        blocker = file_in_the_way(place)
        if blocker is not None:
            return in_the_way_message(place, blocker)
        return f"cannot write to {place}: a file is where a folder should be (remove it or choose another path)"
    if error.errno == errno.EISDIR:
        return f"cannot write to {place}: it is a folder, not a file (give a file path or remove the folder)"
    return f"cannot write to {place}: {os.strerror(error.errno)} (disk full or read-only?)"


def all_failed_message(result: dict, base_url: str | list[str] | None, *, items: str, where: str) -> str | None:
    """The error line for a run that ended with every item failed (``items``: "pairs", "questions";
    ``where``: the file whose lines say why), else None. Connection errors and timeouts only: the
    server was never reached, so the line names ``--base-url``."""
    n = result.get("n") or 0
    if not n or result.get("n_failed") != n:
        return None
    errors = result.get("errors") or {}
    counts = ", ".join(f"{k}: {v}" for k, v in errors.items())
    if errors and set(errors) <= {"connection", "timeout"}:
        from builders import shown_url

        urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
        place = ", ".join(shown_url(u) for u in urls) or shown_url(os.environ.get("OPENAI_BASE_URL")) or "the OpenAI API"
        return (f"rag-qa-arena: error: no request got through to {place} (connection errors or timeouts only: "
                f"{counts}): check --base-url and the network, then run the same command again")
    why = f" (errors {counts})" if counts else ""
    return f"rag-qa-arena: error: every one of the {n:,} {items} failed{why}: each line of {where} says why"


def run_reporting_failures(call: Callable[[], T], *, stopped: str, where: str | None, kept: str) -> T | int:
    """``call()``'s result, or an exit code after an error line and a line saying what is kept:
    :data:`FATAL_EXIT` when the server rejects the key or the model (then ``stopped`` is printed)
    or cannot be reached (one line), :data:`WRITE_EXIT` when an output cannot be written
    (``where``: the place, when the error does not name it; then ``kept``). Other errors propagate."""
    from metric_arena.llm import AuthenticationFailed, ModelNotFound, ServerUnreachable

    try:
        return call()
    except ServerUnreachable as error:
        print(f"rag-qa-arena: error: {error}. Check --base-url and that the server is running, then run the same "
              "command again", file=sys.stderr)
        return FATAL_EXIT
    except (AuthenticationFailed, ModelNotFound) as error:
        print(f"rag-qa-arena: error: {error}", file=sys.stderr)
        print(stopped, file=sys.stderr)
        return FATAL_EXIT
    except OSError as error:
        message = cannot_write_message(error, where)
        if message is None:
            raise
        print(f"rag-qa-arena: error: {message}", file=sys.stderr)
        print(kept, file=sys.stderr)
        return WRITE_EXIT


#: Exit status of ``--batch-collect`` while batches are still running: try again later.
BATCH_NOT_READY_EXIT = 4


def add_rate_limit_flags(parser: argparse.ArgumentParser) -> None:
    """``--rpm`` and ``--tpm``: the client-side limiter consulted before each API request."""
    parser.add_argument("--rpm", type=float, metavar="N",
                        help="at most N requests per minute (client-side limiter; give ~90%% of your API tier's "
                             "limit). Default: no limit")
    parser.add_argument("--tpm", type=float, metavar="N",
                        help="at most N tokens per minute, counted as the API counts them (prompt tokens + "
                             "max_tokens). Default: no limit")


def add_tensor_parallel_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tensor-parallel-size", type=int, metavar="N",
                        help="vllm models: split the model across N GPUs of this machine (default 1)")


def add_judge_scale_flags(parser: argparse.ArgumentParser) -> None:
    """Rate limits, ``--sample``, ``--target-width``, ``--tensor-parallel-size`` and the batch flags."""
    add_rate_limit_flags(parser)
    parser.add_argument("--sample", type=int, metavar="N",
                        help="judge a sub-sample of N pairs, stratified by domain and seeded with --seed (the "
                             "same N and seed give the same questions for every system)")
    parser.add_argument("--target-width", type=float, metavar="W",
                        help="judge pairs in a seeded stratified order and stop once the win+tie rate's 95%% "
                             "interval is narrower than W (e.g. 0.04; checked from 50 pairs on); summary.json "
                             "records stopped_early, interval_width and n")
    add_tensor_parallel_flag(parser)
    group = parser.add_argument_group(
        "OpenAI Batch API (half price, results within 24 h)",
        "  1) --batch DIR writes and submits exactly the requests the online run would send;\n"
        "  2) --batch-status DIR tells where they are;\n"
        "  3) the same command with --batch-collect DIR --out RUN stores the answers in the judgment\n"
        "     cache and writes the run folder the online run would write. Replies without a valid\n"
        "     rating are asked once more online, unless --batch-only.",
    )
    group.add_argument("--batch", metavar="DIR",
                       help="write the judge requests not already cached to DIR (split to the API's limits) and "
                            "submit them; prints the batch ids")
    group.add_argument("--batch-status", metavar="DIR", help="print the state of the batches in DIR")
    group.add_argument("--batch-collect", metavar="DIR",
                       help=f"download the answers of the batches in DIR into the judgment cache, then finish the "
                            f"judge run (needs --out); exits {BATCH_NOT_READY_EXIT} while batches still run")
    group.add_argument("--batch-only", action="store_true",
                       help="with --batch-collect: send nothing online; pairs without a valid answer in the batch "
                            "are failed and counted (submit another --batch folder for the re-asks)")


def make_limiter(args: argparse.Namespace):
    """A :class:`~metric_arena.RateLimiter` from ``--rpm``/``--tpm``, or None without them."""
    rpm, tpm = getattr(args, "rpm", None), getattr(args, "tpm", None)
    for flag, value in (("--rpm", rpm), ("--tpm", tpm)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise RagQaArenaError(f"{flag} must be a positive number (per minute), got {value:g}")
    if rpm is None and tpm is None:
        return None
    from metric_arena.llm import RateLimiter

    return RateLimiter(rpm, tpm)


def check_judge_scale_args(args: argparse.Namespace) -> None:
    """Reject flag combinations that cannot work, naming the fix."""
    if args.sample is not None and args.sample < 1:
        raise RagQaArenaError(f"--sample must be a positive number of pairs, got {args.sample}")
    if args.target_width is not None and not 0 < args.target_width <= 1:
        raise RagQaArenaError(f"--target-width must be in (0, 1], e.g. 0.04 for a 4-point interval; got {args.target_width}")
    if args.tensor_parallel_size is not None and args.tensor_parallel_size < 1:
        raise RagQaArenaError(f"--tensor-parallel-size must be >= 1, got {args.tensor_parallel_size}")
    steps = [flag for flag, value in (("--batch", args.batch), ("--batch-status", args.batch_status),
                                      ("--batch-collect", args.batch_collect)) if value]
    if len(steps) > 1:
        raise RagQaArenaError(f"{' and '.join(steps)} are separate steps: give one at a time")
    if args.batch_only and not args.batch_collect and not getattr(args, "import_results", None):
        raise RagQaArenaError("--batch-only goes with --batch-collect DIR or --import-results FILE...")
    if (args.batch or args.batch_collect) and args.no_cache:
        raise RagQaArenaError("the batch path stores answers in the judgment cache: drop --no-cache")
    if args.batch and args.target_width is not None:
        raise RagQaArenaError("--target-width stops an online run early; a batch sends everything at once. "
                         "Use --sample N with --batch")


def run_settings(args: argparse.Namespace):
    """The :class:`~metric_arena.RunConfig` the flags give: server, key, timeout, concurrency, limits, cache."""
    from metric_arena import RunConfig

    # Without --api-key the backend reads $OPENAI_API_KEY itself (and names it when the key is unusable).
    return RunConfig(base_url=args.base_url, endpoint_name=args.endpoint_name, api_key=args.api_key or None,
                     timeout=getattr(args, "timeout", None),
                     max_concurrency=args.max_concurrency, limiter=make_limiter(args),
                     cache_dir=args.cache_dir, use_cache=not args.no_cache)


def judge_settings(judges: list[str], args: argparse.Namespace, *, build: bool = True):
    """The :class:`~metric_arena.JudgeConfig` the flags give. ``build``: with the judges as
    :func:`judge_backends` makes them (for a run); without, their specs (for a dry run or a batch)."""
    from metric_arena import JudgeConfig

    budget = getattr(args, "max_input_tokens", None)
    if budget is not None and budget < 1:
        raise RagQaArenaError(f"--max-input-tokens must be >= 1, got {budget}")
    return JudgeConfig(judge_backends(judges, args) if build else judges, order=args.order, seed=args.seed,
                       parse=getattr(args, "parse", "strict"), max_input_tokens=getattr(args, "max_input_tokens", None))


def judge_backends(judges: list[str], args: argparse.Namespace) -> list:
    """The judge list for :func:`metric_arena.judge_pairs`: specs, with vllm judges built with
    ``--tensor-parallel-size`` and, for ``--batch-only``, cache-only stand-ins."""
    from metric_arena.llm import VLLM, make_backend, parse_spec

    kinds = [parse_spec(spec)[0] for spec in judges]
    if args.tensor_parallel_size is not None and VLLM not in kinds:
        raise RagQaArenaError("--tensor-parallel-size applies to vllm judges: give --judge vllm:MODEL")
    if getattr(args, "batch_only", False):
        from metric_arena.judge import CacheOnlyBackend

        return [CacheOnlyBackend.like(spec, run=run_settings(args)) for spec in judges]
    out = []
    for spec, kind in zip(judges, kinds):
        if kind == VLLM and args.tensor_parallel_size is not None:
            out.append(make_backend(spec, options={"tensor_parallel_size": args.tensor_parallel_size}))
        else:
            out.append(spec)
    return out


def stop_note(result: dict) -> list[str]:
    """Summary lines about sampling and early stopping, and about batch-only failures."""
    lines = []
    if "n_planned" in result:
        line = f"  judged {result['n']:,} of {result['n_planned']:,} planned pairs"
        if "stopped_early" in result:
            line += (f"; {'stopped early' if result['stopped_early'] else 'did not reach the target'}: "
                     f"win+tie 95% interval width {result['interval_width']:.4f} (target {result['target_width']:g})")
        lines.append(line)
    missing = result.get("errors", {}).get("not_in_batch")
    if missing:
        lines.append(f"  {missing:,} requests had no valid answer in the batch and were not sent (--batch-only): "
                     "their pairs are failed")
    return lines


# --------------------------------------------------------------------------------------------
# Flag types and number formats shared by the reporting commands
# --------------------------------------------------------------------------------------------
def positive_int(text: str) -> int:
    """An argparse type: a positive integer, else a one-line usage error with an example."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive integer, e.g. 1000")
    return value


def seed(text: str) -> int:
    """An argparse type: a seed numpy accepts, an integer in [0, 2**32), else a one-line usage error."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{text!r} must be an integer from 0 to 4294967295 (2**32 - 1), e.g. 0")
    return value


def confidence_level(text: str) -> float:
    """An argparse type: a coverage strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1, e.g. 0.95")
    return value


def finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def percent(value) -> str:
    """``0.123`` as ``"12.3"``; ``"n/a"`` for a missing or non-finite value."""
    return f"{value * 100:.1f}" if finite(value) else "n/a"


def decimal(value, digits: int) -> str:
    return "–" if value is None or value != value else f"{value:.{digits}f}"


#: Columns that hold system (or judge) names: never cut, whatever the terminal's width.
_NAME_COLUMNS = ("System", "Higher", "Next", "Judge")


def print_table(console, table) -> None:
    """Print ``table`` with its name columns whole: they never wrap or end in "…"; other columns
    wrap first, and a table still too wide for the terminal is printed wider (the terminal folds
    the lines) rather than cutting a name."""
    from rich.cells import cell_len
    from rich.text import Text

    for column in table.columns:
        if str(column.header) in _NAME_COLUMNS:
            widest = max((cell_len(cell.plain if isinstance(cell, Text) else str(cell)) for cell in column.cells),
                         default=0)
            column.no_wrap, column.min_width = True, max(widest, cell_len(str(column.header)))
    need = console.measure(table, options=console.options.update_width(100_000)).minimum
    if need <= console.width:
        console.print(table)
        return
    width = console.width
    console.width = need  # wider than the terminal: its lines fold, no name is cut
    try:
        console.print(table)
    finally:
        console.width = width


def injection_lines(counts: dict | None, indent: str = "  ") -> list[str]:
    """One line per system whose answers spoke to the judge (``injection`` of a summary, a report or a
    comparison: defused prompt tags, plain-language address); none for clean systems."""
    lines = []
    for name, c in (counts or {}).items():
        parts = []
        if c.get("answers_addressing_judge"):
            rules = ", ".join(f"{rule} {n:,}" for rule, n in (c.get("rules") or {}).items())
            parts.append(f"{c['answers_addressing_judge']:,} address the judge ({rules})")
        if c.get("answers_with_defused_tags"):
            parts.append(f"{c['answers_with_defused_tags']:,} hold {c['defused_tags']:,} defused prompt tag(s)")
        if parts:
            lines.append(f"{indent}injection: {name}: of {c.get('answers', 0):,} answers, {'; '.join(parts)} "
                         "(flagged in verdicts.jsonl: injection_a/injection_b)")
    return lines
