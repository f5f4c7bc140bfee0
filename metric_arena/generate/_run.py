"""Answer generation: retrieved passages + question -> an answer, with the paper's prompt.

Input: the ``retrieve`` output, one ``{"qid", "domain", "question", "passages": [{"pid",
"doc_id", "text", "score", "rank"}]}`` per line (or such dicts in a list). For each question the
top ``n_passages`` passages (in rank order) are rendered as the reference implementation renders
them (:func:`metric_arena.prompts.render_passages`) into the pinned generation template (``v1``
ends with the step-by-step "thinking" request; ``v2``, used for GPT-4o, does not) and sent as one
user message with the reference's decoding parameters (``max_tokens=256``, ``temperature=0.0``,
``top_p=1.0``), through the same backends, cache, concurrency and retries as the judge
(one :class:`metric_arena.llm.Session` with the given :class:`~metric_arena.RunConfig`).

Output: one JSON line per question, appended and flushed as each answer arrives::

    {"qid", "domain", "question", "answer", "raw", "model", "prompt", "passages": [pid, ...],
     "finish_reason", "failed"}

``answer`` is ``raw`` cleaned the reference's way (:func:`~metric_arena.prompts.clean_response`).
A failed line also has ``error``; a reply longer than what is kept (32 characters per ``max_tokens``
token, at least 4,096) is cut there and its line has ``"oversized": <full length in characters>``; a
line whose question or passages held the prompt's own tags
(``<passage…>``, ``</passage>``, ``<query>``, ``</query>``: defused before sending, see
:func:`~metric_arena.prompts.neutralize_delimiters`) has ``"neutralized": true``.

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
      (:class:`~metric_arena.AuthenticationFailed`, :class:`~metric_arena.ModelNotFound`).

Resuming
    Re-running into the same ``out`` keeps its answered lines, drops a last line cut short by a
    crash, retries its failed lines, and answers the rest (from the cache when they were answered
    before the crash). The file must come from the same model and prompt version
    (``output=RunOutput(overwrite=True)`` starts afresh); a line whose passages differ from the input's is
    answered again. At the end it is rewritten in input order (atomically)
    and ``<out stem>.summary.json`` holds the counts. Only one run may write an output file at a
    time (an advisory lock on ``.<out name>.lock`` next to it).

>>> res = generate_answers("runs/fiqa.bm25.jsonl", "openai:gpt-4o", generation=GenerationConfig(prompt="v2"),
...                        out="runs/fiqa.gpt-4o.jsonl", run=RunConfig(max_concurrency=64))  # doctest: +SKIP
>>> res["n"], res["n_failed"], res["n_truncated"], res["predictions"][0]["answer"]  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from lfrqa.checks import grouped_keywords
from lfrqa.errors import InvalidInputType
from lfrqa.kernel import (
    JsonlAppender,
    atomic_write,
    dumps_json,
    json_line,
    make_folder,
    package_version,
    refuse_output_over_input,
    write_error,
)
from metric_arena.generate._inputs import GenerationConfig, check_model, neutralized, retrieved_rows
from metric_arena.generate._output import exclusive, previous_lines, summary_path
from metric_arena.llm import Backend, RunConfig, Session, synchronous
from metric_arena.prompts import clean_response, is_no_answer
from metric_arena.records import RUN_OUTPUT_KEYWORDS, Prediction, RunOutput, run_output

__all__ = ["agenerate_answers", "generate_answers"]


@dataclass(frozen=True)
class _Settings:
    spec: str
    generation: GenerationConfig
    data_dir: str | os.PathLike | None

    @property
    def prompt(self) -> str:
        return self.generation.prompt

    @property
    def n_passages(self) -> int:
        return self.generation.n_passages


def _resume(out: Path, rows: list[dict], settings: _Settings, overwrite: bool) -> tuple[dict[str, str], dict[str, dict]]:
    """Lines kept from an earlier run of ``out`` (by qid), and the records of those that need no new answer.

    The file is rewritten at once without the lines that are dropped (failed, cut short, or
    answered from other passages than the input's).
    """
    wanted = {row["qid"]: [p["pid"] for p in row["passages"][: settings.n_passages]] for row in rows}
    previous: dict[str, str] = {}
    resumed: dict[str, dict] = {}
    dropped = 0
    if out.exists() and not overwrite:
        previous, dropped = previous_lines(out, settings.spec, settings.prompt)
        for qid, line in list(previous.items()):
            if qid not in wanted:
                continue  # another question: kept as it is
            record = json.loads(line)
            if record.get("passages") == wanted[qid]:  # same question, same passages: keep it
                resumed[qid] = record
            else:
                del previous[qid]  # retrieved again since: answered again
                dropped += 1
    if dropped or not out.exists() or overwrite:
        atomic_write(out, "".join(previous.values()))
    return previous, resumed


def _record(row: Mapping, result, settings: _Settings) -> Prediction:
    failed = not result.valid or result.completion is None
    completion = result.completion
    record = {
        "qid": row["qid"],
        "domain": row["domain"],
        "question": row["question"],
        "answer": None if failed else clean_response(completion.text),
        "raw": None if failed else completion.text,
        "model": settings.spec,
        "prompt": settings.prompt,
        "passages": [p["pid"] for p in row["passages"][: settings.n_passages]],
        "finish_reason": None if failed else completion.finish_reason,
        "failed": failed,
    }
    if failed:
        record["error"] = result.error or "no reply"
    if completion is not None and completion.original_chars:
        record["oversized"] = completion.original_chars  # the reply's full length; raw is cut
    if neutralized(row, settings.n_passages):
        record["neutralized"] = True
    return record


async def _answer(rows: list[dict], todo: list[int], records: list[dict | None], session: Session,
                  settings: _Settings, *, appender: JsonlAppender | None, show: bool) -> None:
    [backend] = session.backends
    bar = session.progress(len(todo), show, f"generating with {settings.spec}")

    async def answer_one(i: int) -> None:
        request = settings.generation.request(rows[i], data_dir=settings.data_dir)
        result = await session.ask(backend, request, reask=1)
        records[i] = record = _record(rows[i], result, settings)
        if appender is not None:
            appender.write(record)
        bar.advance(record["failed"], result.cached)

    await session.gather(answer_one(i) for i in todo)


@grouped_keywords("output", RunOutput, RUN_OUTPUT_KEYWORDS)
async def agenerate_answers(
    retrieved: str | os.PathLike | Iterable[Mapping],
    model: str | Backend,
    *,
    generation: GenerationConfig | None = None,
    run: RunConfig | None = None,
    out: str | os.PathLike | None = None,
    output: RunOutput | None = None,
    data_dir: str | os.PathLike | None = None,
    limit: int | None = None,
) -> dict:
    """Async form of :func:`generate_answers` (same arguments, same result)."""
    check_model(model)
    output = run_output(output)
    generation = generation if generation is not None else GenerationConfig()
    if not isinstance(generation, GenerationConfig):
        raise InvalidInputType(f"generation={generation!r}: give a metric_arena.generate.GenerationConfig")
    if out is not None and isinstance(retrieved, (str, os.PathLike)):
        for written in (out, summary_path(out)):
            refuse_output_over_input(("--out", written), [("--retrieved", retrieved)])
    rows = retrieved_rows(retrieved, limit=limit)
    session = Session(model, run, options=generation.options, max_input_tokens=generation.max_input_tokens)
    settings = _Settings(session.specs[0], generation, data_dir)
    out_path = Path(out) if out is not None else None
    started = time.monotonic()
    if out_path is not None:
        try:
            make_folder(out_path.parent, target=out_path)
        except OSError as error:
            raise write_error(error, out_path.parent) from None
    with exclusive(out_path) if out_path is not None else contextlib.nullcontext():
        previous, resumed = _resume(out_path, rows, settings, output.overwrite) if out_path is not None else ({}, {})
        todo = [i for i, row in enumerate(rows) if row["qid"] not in resumed]
        appender = JsonlAppender(out_path) if out_path is not None else None
        show = output.progress if output.progress is not None else (len(todo) >= 20 and sys.stderr.isatty())
        records: list[dict | None] = [resumed.get(row["qid"]) for row in rows]
        try:
            async with session:
                await _answer(rows, todo, records, session, settings, appender=appender, show=bool(show))
        finally:
            if appender is not None:
                appender.close()
        summary = _summary(records, settings, session, len(resumed), started)
        if out_path is not None:
            wanted = {row["qid"] for row in rows}
            extra = [line for qid, line in previous.items() if qid not in wanted]  # other questions: kept
            atomic_write(out_path, "".join(json_line(r) for r in records) + "".join(extra))
            summary["out"] = str(out_path)
            atomic_write(summary_path(out_path), dumps_json(summary))
    return {**summary, "predictions": records}


def _summary(records: list[dict], settings: _Settings, session: Session, n_resumed: int, started: float) -> dict:
    answered = [r for r in records if not r["failed"]]
    return {
        "model": settings.spec,
        "prompt": settings.prompt,
        "n_passages": settings.n_passages,
        "max_tokens": settings.generation.max_tokens,
        "n": len(records),
        "n_answered": len(answered),
        "n_failed": len(records) - len(answered),
        "n_truncated": sum(r["finish_reason"] == "length" for r in answered),
        "n_no_answer": sum(is_no_answer(r["answer"]) for r in answered),
        "n_neutralized": sum(bool(r.get("neutralized")) for r in records),
        "n_resumed": n_resumed,
        **session.runner.counters(),
        "elapsed_s": round(time.monotonic() - started, 3),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "package_version": package_version(),
    }


GENERATE_ANSWERS_DOC = """Answer each retrieved question with ``model`` using the paper's prompt; return counts and records.

    ``retrieved`` is a ``retrieve`` output file or a list of its rows. ``model`` is a
    ``"<backend>:<model>"`` spec (``openai:gpt-4o``, ``hf:PATH``, ``vllm:...``) or a
    :class:`~metric_arena.llm.Backend`. ``generation``: a :class:`GenerationConfig` (prompt
    version, passages shown, decoding, ``max_input_tokens``, backend options); ``run``: a
    :class:`~metric_arena.RunConfig` (server, key, concurrency, retries, limiter, cache). ``out``:
    JSONL written as answers arrive (resumed when it exists, unless ``output=RunOutput(overwrite=True)``;
    ``RunOutput(progress=...)`` shows a progress bar or not; loose ``overwrite=``/``progress=`` work for
    one release, with a ``DeprecationWarning``);
    ``data_dir``: the pinned templates. ``limit``: only the first N questions of ``retrieved``, in its
    order (a larger N later resumes the same file).

    Returns ``n``, ``n_answered``, ``n_failed``, ``n_truncated``, ``n_no_answer``,
    ``n_neutralized``, ``n_resumed``, ``errors`` (by kind), ``n_sent``, ``n_cached`` and
    ``predictions`` (one record per row, in input order).

    >>> res = generate_answers([{"qid": "q1", "question": "Why?", "passages": [{"pid": "d-0", "text": "..."}]}],
    ...                        "openai:gpt-4o-mini", generation=GenerationConfig(prompt="v2"))  # doctest: +SKIP
    >>> res["predictions"][0]["answer"]  # doctest: +SKIP
    """

generate_answers = synchronous(agenerate_answers, name="generate_answers", doc=GENERATE_ANSWERS_DOC)
