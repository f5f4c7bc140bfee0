"""Answer generation: retrieved passages + question -> an answer, with the paper's prompt.

Input: the ``retrieve`` output, one ``{"qid", "domain", "question", "passages": [{"pid",
"doc_id", "text", "score", "rank"}]}`` per line (or such dicts in a list). For each question the
top ``n_passages`` passages (in rank order) are rendered as the reference implementation renders
them (:func:`metric_arena._prompts.render_passages`) into the pinned generation template (``v1``
ends with the step-by-step "thinking" request; ``v2``, used for GPT-4o, does not) and sent as one
user message with the reference's decoding parameters (``max_tokens=256``, ``temperature=0.0``,
``top_p=1.0``), through the same backends, cache, concurrency and retries as the judge
(:mod:`metric_arena._runner`).

Output: one JSON line per question, appended and flushed as each answer arrives::

    {"qid", "domain", "question", "answer", "raw", "model", "prompt", "passages": [pid, ...],
     "finish_reason", "failed"}

``answer`` is ``raw`` cleaned the reference's way (:func:`~metric_arena._prompts.clean_response`).
A failed line also has ``error``; a line whose question or passages held the prompt's own tags
(``<passage…>``, ``</passage>``, ``<query>``, ``</query>``: defused before sending, see
:func:`~metric_arena._prompts.neutralize_delimiters`) has ``"neutralized": true``.

What can go wrong, and what happens
    - transient errors (429 with or without ``Retry-After``, 5xx, timeouts, dropped connections)
      are retried with backoff; an unusable body (malformed JSON, no choices) is asked once more;
    - a reply cut at ``max_tokens`` (``finish_reason: "length"``) is kept as it is, with its
      ``finish_reason``, and counted in ``n_truncated``;
    - a question that still has no reply (retries exhausted, a 400 such as a prompt over the
      model's context, a prompt over ``max_input_tokens``, which is refused, not truncated) is
      written with ``"failed": true``, ``"answer": null`` and ``error``: never turned into
      "I couldn't find an answer." The judge counts such a line as a failed pair;
    - a rejected key or an unknown model (401/403/404) stops the run at once
      (:class:`~metric_arena._backends.AuthenticationFailed`, :class:`~metric_arena._backends.ModelNotFound`).

Resuming
    Re-running into the same ``out`` keeps its answered lines, drops a last line cut short by a
    crash, retries its failed lines, and answers the rest (from the cache when they were answered
    before the crash). The file must come from the same model and prompt version
    (``overwrite=True`` starts afresh); a line whose passages differ from the input's is
    answered again. At the end it is rewritten in input order (atomically)
    and ``<out stem>.summary.json`` holds the counts. Only one run may write an output file at a
    time (an advisory lock on ``.<out name>.lock`` next to it).

>>> res = generate_answers("runs/fiqa.bm25.jsonl", "openai:gpt-4o", prompt="v2",
...                        out="runs/fiqa.gpt-4o.jsonl")  # doctest: +SKIP
>>> res["n"], res["n_failed"], res["n_truncated"], res["predictions"][0]["answer"]  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lfrqa._jsonl import iter_jsonl
from metric_arena._backends import Backend, ChatRequest, make_backend, parse_spec
from metric_arena._cache import CompletionCache
from metric_arena._judge import (
    _atomic_write,
    _package_version,
    _Progress,
    make_budgets,
    refused_result,
)
from metric_arena._prompts import (
    GENERATION_TAGS,
    GENERATION_TEMPLATES,
    clean_response,
    generation_messages,
    is_no_answer,
    neutralize_delimiters,
)
from metric_arena._runner import RetryPolicy, Runner, gather_or_cancel
from metric_arena._sync import run_sync

__all__ = [
    "GENERATION_MAX_TOKENS",
    "agenerate_answers",
    "generate_answers",
    "generation_dry_run",
    "generation_request",
    "read_retrieved",
    "summary_path",
]

#: Decoding parameters of the reference implementation's answer generation.
GENERATION_MAX_TOKENS = 256
GENERATION_TEMPERATURE = 0.0
GENERATION_TOP_P = 1.0


# --------------------------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------------------------
def read_retrieved(path: str | os.PathLike) -> list[dict]:
    """The rows of a ``retrieve`` output file, checked (line numbers in every error)."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"Retrieved file {path} {what}: write it with `rag-qa-arena retrieve --out`")
    rows, where = [], []
    hint = 'Each line must be one {"qid", "question", "passages": [...]} object, as `rag-qa-arena retrieve` writes'
    for number, row in iter_jsonl(path, hint=hint):
        rows.append(row)
        where.append(f"{path} line {number}")
    if not rows:
        raise ValueError(f"Retrieved file {path} holds no questions")
    return _check_rows(rows, where)


def _check_rows(rows: Sequence[Any], where: Sequence[str]) -> list[dict]:
    checked: list[dict] = []
    seen: dict[str, str] = {}
    for row, place in zip(rows, where):
        if not isinstance(row, Mapping):
            raise ValueError(f"{place}: expected a JSON object with qid, question and passages, "
                             f"got {type(row).__name__}")
        for field in ("qid", "question", "passages"):
            if field not in row:
                raise ValueError(f"{place}: missing field {field!r} (each row needs qid, question and passages)")
        qid = row["qid"]
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == "":
            raise ValueError(f"{place}: qid {qid!r} must be a non-empty string")
        qid = str(qid).strip()
        if qid in seen:
            raise ValueError(f"{place}: qid {qid!r} appears twice (also at {seen[qid]}); keep one row per qid")
        seen[qid] = place
        question = row["question"]
        if not isinstance(question, str):
            raise ValueError(f"{place} (qid {qid}): question must be a string, "
                             f"got {type(question).__name__} ({question!r})")
        domain = row.get("domain")
        if domain is not None and not isinstance(domain, str):
            raise ValueError(f"{place} (qid {qid}): domain must be a string, got {domain!r}")
        passages = row["passages"]
        if not isinstance(passages, list):
            raise ValueError(f"{place} (qid {qid}): passages must be a list of {{'pid', 'text', 'rank'}} objects, "
                             f"got {type(passages).__name__}")
        clean = []
        for k, passage in enumerate(passages):
            if not isinstance(passage, Mapping) or not isinstance(passage.get("text"), str):
                raise ValueError(f"{place} (qid {qid}): passages[{k}] must be an object with a string 'text', "
                                 f"got {passage!r:.80}")
            pid = passage.get("pid")
            if pid is None or isinstance(pid, bool) or not isinstance(pid, (str, int)):
                raise ValueError(f"{place} (qid {qid}): passages[{k}] has pid {pid!r}; give each passage its id")
            rank = passage.get("rank")
            if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
                raise ValueError(f"{place} (qid {qid}): passages[{k}] has rank {rank!r}; ranks are integers from 1")
            clean.append({"pid": str(pid), "text": passage["text"], "rank": rank})
        if all(p["rank"] is not None for p in clean):
            clean.sort(key=lambda p: p["rank"])  # stable: ties keep file order
        checked.append({"qid": qid, "domain": domain, "question": question, "passages": clean})
    return checked


def _rows(retrieved) -> list[dict]:
    if isinstance(retrieved, (str, os.PathLike)):
        return read_retrieved(retrieved)
    if isinstance(retrieved, Mapping):
        raise TypeError("retrieved must be a file path or a list of rows, not one dict: wrap it in a list")
    rows = list(retrieved)
    if not rows:
        raise ValueError("No retrieved rows given: nothing to generate")
    return _check_rows(rows, [f"retrieved[{i}]" for i in range(len(rows))])


def _check_settings(model, prompt, n_passages, max_tokens, max_concurrency=1) -> None:
    if not isinstance(model, Backend):
        parse_spec(model)  # names a bad spec or backend
    if prompt not in GENERATION_TEMPLATES:
        raise ValueError(f"Unknown prompt version {prompt!r}. Available: {', '.join(GENERATION_TEMPLATES)}")
    for name, value in (("n_passages", n_passages), ("max_tokens", max_tokens), ("max_concurrency", max_concurrency)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def generation_request(
    row: Mapping,
    *,
    prompt: str = "v1",
    n_passages: int = 5,
    max_tokens: int = GENERATION_MAX_TOKENS,
    temperature: float = GENERATION_TEMPERATURE,
    top_p: float = GENERATION_TOP_P,
    data_dir: str | os.PathLike | None = None,
) -> ChatRequest:
    """The request for one checked row: its top ``n_passages`` passages and question."""
    texts = [p["text"] for p in row["passages"][:n_passages]]
    messages = generation_messages(row["question"], texts, prompt, data_dir=data_dir)
    return ChatRequest(messages, max_tokens=max_tokens, temperature=temperature, top_p=top_p)


def _neutralized(row: Mapping, n_passages: int) -> bool:
    texts = [row["question"]] + [p["text"] for p in row["passages"][:n_passages]]
    return any(neutralize_delimiters(text, GENERATION_TAGS)[1] for text in texts)


# --------------------------------------------------------------------------------------------
# Output file: resume, lock, final rewrite
# --------------------------------------------------------------------------------------------
def summary_path(out: str | os.PathLike) -> Path:
    """``runs/preds.jsonl`` -> ``runs/preds.summary.json``."""
    out = Path(out)
    return out.with_name(out.stem + ".summary.json")


def _write_error(error: OSError, path: Path) -> OSError:
    """The OS error with the path we tried to write (``error.filename``) and a hint."""
    return OSError(error.errno, f"{error.strerror or error} (disk full or read-only?)", str(path))


def _previous_lines(out: Path, spec: str, prompt: str) -> tuple[dict[str, str], int]:
    """Answered lines of an earlier run of ``out`` by qid (failed and cut lines dropped), and
    how many lines were dropped."""
    data = out.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(f"{out} line {line}: not UTF-8 text; it is not an answer file of this tool. "
                         "Choose another --out, or pass --overwrite to replace it") from None
    lines = text.splitlines(keepends=True)
    kept: dict[str, str] = {}
    dropped = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            qid = record["qid"]
            model, version = record["model"], record["prompt"]
        except (json.JSONDecodeError, KeyError, TypeError):
            if number == len(lines) and not line.endswith("\n"):  # cut short by a crash
                dropped += 1
                continue
            raise ValueError(f"{out} line {number} is not an answer record of this tool: fix or delete the file, "
                             "or pass --overwrite to replace it") from None
        if model != spec or version != prompt:
            raise ValueError(
                f"{out} holds answers of model {model!r} with prompt {version!r}, not {spec!r} with {prompt!r}: "
                "choose another --out, or pass --overwrite to replace it"
            )
        if record.get("failed") or qid in kept:
            dropped += 1  # failed lines are asked again
            continue
        kept[str(qid)] = line if line.endswith("\n") else line + "\n"
    return kept, dropped


@contextlib.contextmanager
def _exclusive(out: Path):
    """Hold an advisory lock on ``.<out name>.lock`` so two runs never append to one file.

    The lock file stays (removing it would let a third run lock a new file while a second still
    holds the old one); the kernel releases the lock when the process ends, even on kill -9.
    """
    lock_path = out.with_name(f".{out.name}.lock")
    try:
        handle = open(lock_path, "a+")
    except OSError as error:
        raise _write_error(error, lock_path) from None
    try:
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks
            fcntl = None
        if fcntl is not None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise FileExistsError(
                    f"Another run is writing {out} right now (lock {lock_path}): wait for it, or choose another --out"
                ) from None
        yield
    finally:
        handle.close()


class _Appender:
    def __init__(self, path: Path):
        self.path = path
        try:
            self.handle = open(path, "a", encoding="utf-8")
        except OSError as error:
            raise _write_error(error, path) from None

    def write(self, record: dict) -> None:
        try:
            self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.handle.flush()
        except OSError as error:
            raise _write_error(error, self.path) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------
def _make_backend(model, base_url, api_key, backend_options, timeout) -> Backend:
    if isinstance(model, Backend):
        return model
    name, _ = parse_spec(model)
    options = dict(backend_options or {})
    if name == "openai":
        if timeout is not None:
            options["timeout"] = timeout
        return make_backend(model, base_url=base_url, api_key=api_key, **options)
    if base_url is not None:
        raise ValueError(f"base_url applies to openai models only, not to {model!r}")
    return make_backend(model, **options)


async def agenerate_answers(
    retrieved: str | os.PathLike | Iterable[Mapping],
    model: str | Backend,
    *,
    prompt: str = "v1",
    n_passages: int = 5,
    out: str | os.PathLike | None = None,
    overwrite: bool = False,
    base_url: str | None = None,
    api_key: str | None = None,
    max_concurrency: int = 16,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    max_tokens: int = GENERATION_MAX_TOKENS,
    temperature: float = GENERATION_TEMPERATURE,
    top_p: float = GENERATION_TOP_P,
    max_input_tokens: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    limiter=None,
    progress: bool | None = None,
    data_dir: str | os.PathLike | None = None,
    backend_options: dict | None = None,
) -> dict:
    """Async form of :func:`generate_answers` (same arguments, same result)."""
    _check_settings(model, prompt, n_passages, max_tokens, max_concurrency)
    rows = _rows(retrieved)
    backend = _make_backend(model, base_url, api_key, backend_options, timeout)
    spec = backend.spec
    budgets = make_budgets([backend], max_input_tokens)
    out_path = Path(out) if out is not None else None
    started = time.monotonic()
    if out_path is not None:
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise _write_error(error, out_path.parent) from None
    with _exclusive(out_path) if out_path is not None else contextlib.nullcontext():
        wanted = {row["qid"]: [p["pid"] for p in row["passages"][:n_passages]] for row in rows}
        previous: dict[str, str] = {}
        resumed: dict[str, dict] = {}
        if out_path is not None:
            dropped = 0
            if out_path.exists() and not overwrite:
                previous, dropped = _previous_lines(out_path, spec, prompt)
                for qid, line in list(previous.items()):
                    record = json.loads(line)
                    if qid not in wanted:
                        continue  # another question: kept as it is
                    if record.get("passages") == wanted[qid]:  # same question, same passages: keep it
                        resumed[qid] = record
                    else:
                        del previous[qid]  # retrieved again since: answered again
                        dropped += 1
            if dropped or not out_path.exists() or overwrite:
                _atomic_write(out_path, "".join(previous.values()))
        todo = [i for i, row in enumerate(rows) if row["qid"] not in resumed]

        cache = CompletionCache(cache_dir) if use_cache else None
        runner = Runner(cache, max_concurrency=max_concurrency, retry=retry, limiter=limiter)
        appender = _Appender(out_path) if out_path is not None else None
        show = progress if progress is not None else (len(todo) >= 20 and sys.stderr.isatty())
        bar = _Progress(len(todo), bool(show), f"generating with {spec}")
        records: list[dict | None] = [resumed.get(row["qid"]) for row in rows]

        async def answer_one(i: int) -> None:
            row = rows[i]
            request = generation_request(row, prompt=prompt, n_passages=n_passages, max_tokens=max_tokens,
                                         temperature=temperature, top_p=top_p, data_dir=data_dir)
            refusal = budgets[spec].refusal(request) if budgets else None
            if refusal:
                result = await refused_result(runner, refusal)
            else:
                result = await runner.run_one(backend, request, reask=1)
            failed = not result.valid or result.completion is None
            completion = result.completion
            record = {
                "qid": row["qid"],
                "domain": row["domain"],
                "question": row["question"],
                "answer": None if failed else clean_response(completion.text),
                "raw": None if failed else completion.text,
                "model": spec,
                "prompt": prompt,
                "passages": [p["pid"] for p in row["passages"][:n_passages]],
                "finish_reason": None if failed else completion.finish_reason,
                "failed": failed,
            }
            if failed:
                record["error"] = result.error or "no reply"
            if _neutralized(row, n_passages):
                record["neutralized"] = True
            records[i] = record
            if appender is not None:
                appender.write(record)
            bar.advance(failed, result.cached)

        try:
            await gather_or_cancel([asyncio.ensure_future(answer_one(i)) for i in todo])
        finally:
            bar.close()
            if appender is not None:
                appender.close()
            await backend.aclose()
            if cache is not None:
                cache.close()

        done: list[dict] = records  # type: ignore[assignment]
        summary = _summary(done, spec, prompt, n_passages, max_tokens, runner, len(resumed), started)
        if out_path is not None:
            extra = [line for qid, line in previous.items() if qid not in wanted]  # other questions: kept
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in done) + "".join(extra)
            _atomic_write(out_path, text)
            summary["out"] = str(out_path)
            _atomic_write(summary_path(out_path), json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return {**summary, "predictions": done}


def _summary(records, spec, prompt, n_passages, max_tokens, runner: Runner, n_resumed: int, started: float) -> dict:
    answered = [r for r in records if not r["failed"]]
    return {
        "model": spec,
        "prompt": prompt,
        "n_passages": n_passages,
        "max_tokens": max_tokens,
        "n": len(records),
        "n_answered": len(answered),
        "n_failed": len(records) - len(answered),
        "n_truncated": sum(r["finish_reason"] == "length" for r in answered),
        "n_no_answer": sum(is_no_answer(r["answer"]) for r in answered),
        "n_neutralized": sum(bool(r.get("neutralized")) for r in records),
        "n_resumed": n_resumed,
        **runner.counters(),
        "elapsed_s": round(time.monotonic() - started, 3),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "package_version": _package_version(),
    }


def generate_answers(
    retrieved: str | os.PathLike | Iterable[Mapping],
    model: str | Backend,
    *,
    prompt: str = "v1",
    n_passages: int = 5,
    **kwargs,
) -> dict:
    """Answer each retrieved question with ``model`` using the paper's prompt; return counts and records.

    ``retrieved`` is a ``retrieve`` output file or a list of its rows. ``model`` is a
    ``"<backend>:<model>"`` spec (``openai:gpt-4o``, ``hf:PATH``, ``vllm:...``) or a
    :class:`~metric_arena.Backend`. Keywords: ``prompt`` ("v1" or "v2"), ``n_passages`` (top
    passages shown, default 5), ``out`` (JSONL written as answers arrive; resumed when it exists,
    unless ``overwrite=True``), ``base_url``/``api_key`` (openai backend; default
    ``$OPENAI_BASE_URL``/``$OPENAI_API_KEY``), ``max_concurrency``, ``cache_dir``/``use_cache``,
    ``max_tokens`` (256), ``temperature`` (0.0), ``top_p`` (1.0), ``max_input_tokens`` (refuse
    longer prompts), ``timeout``, ``retry``, ``limiter``, ``progress``, ``data_dir`` (pinned
    templates), ``backend_options`` (e.g. ``{"device": "cpu", "batch_size": 8}`` for hf).

    Returns ``n``, ``n_answered``, ``n_failed``, ``n_truncated``, ``n_no_answer``,
    ``n_neutralized``, ``n_resumed``, ``errors`` (by kind), ``n_sent``, ``n_cached`` and
    ``predictions`` (one record per row, in input order).

    >>> res = generate_answers([{"qid": "q1", "question": "Why?", "passages": [{"pid": "d-0", "text": "..."}]}],
    ...                        "openai:gpt-4o-mini", prompt="v2")  # doctest: +SKIP
    >>> res["predictions"][0]["answer"]  # doctest: +SKIP
    """
    return run_sync(agenerate_answers(retrieved, model, prompt=prompt, n_passages=n_passages, **kwargs))


# --------------------------------------------------------------------------------------------
# Dry run
# --------------------------------------------------------------------------------------------
def generation_dry_run(
    retrieved: str | os.PathLike | Iterable[Mapping],
    model: str,
    *,
    prompt: str = "v1",
    n_passages: int = 5,
    max_tokens: int = GENERATION_MAX_TOKENS,
    base_url: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    data_dir: str | os.PathLike | None = None,
):
    """Requests, input tokens, expected output tokens and the cost of :func:`generate_answers`; sends nothing.

    Expected output comes from the length the prompt asks for (``_cost._GENERATION_REPLY_WORDS``);
    the ``max_tokens`` bound and the cost at that bound are reported apart. Returns a
    :class:`metric_arena._cost.CostEstimate`.
    """
    from metric_arena._cache import cache_key
    from metric_arena._cost import _identity_for, estimate_cost, expected_generation_reply_tokens

    _check_settings(model, prompt, n_passages, max_tokens)
    rows = _rows(retrieved)
    requests = [generation_request(r, prompt=prompt, n_passages=n_passages, max_tokens=max_tokens, data_dir=data_dir)
                for r in rows]
    cached = None
    identity = _identity_for(model, base_url)
    if use_cache and identity is not None:
        with CompletionCache(cache_dir) as cache:
            keys = [cache_key(identity, r, 0) for r in requests]
            found = cache.get_many(keys)
        cached = [k in found and found[k].valid for k in keys]
    expected = min(max_tokens, expected_generation_reply_tokens(model, prompt))
    return estimate_cost(requests, model, expected_output_tokens=expected, cached=cached)


def format_generation_estimate(estimate) -> str:
    """Lines for ``generate --dry-run``, ending with ``estimated_cost_usd: N`` (the expected cost)."""
    lines = [
        f"model {estimate.judge}",
        f"  requests:       {estimate.n_requests:,} ({estimate.n_cached:,} already cached, "
        f"{estimate.n_requests - estimate.n_cached:,} to send)",
        f"  input tokens:   {estimate.input_tokens:,}"
        + ("" if estimate.exact_tokenizer else " (approximate: o200k_base tokenizer, not the model's own)"),
        f"  output tokens:  ~{estimate.output_tokens_estimate:,} expected "
        f"(at most {estimate.output_tokens_max:,} with max_tokens)",
    ]
    if estimate.cost_usd_max is None:
        lines.append(f"  cost:           unknown for model {estimate.model!r}")
        lines.append("estimated_cost_usd: nan")
    else:
        lines.append(f"  cost:           ~${estimate.cost_usd:,.2f} expected, at most ${estimate.cost_usd_max:,.2f} "
                     f"(${estimate.input_price_per_m:g}/${estimate.output_price_per_m:g} per M tokens in/out, "
                     "OpenAI list prices of 2024)")
        lines.append(f"estimated_cost_usd: {estimate.cost_usd:.4f}")
    return "\n".join(lines)
