"""``judge_pairs``: every pair through every judge, concurrently, verdicts written as they come."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from lfrqa.errors import InvalidInputType
from lfrqa.files import package_version
from metric_arena.judge._parse import (
    check_parse,
    judge_outcome,
    outcome_of,
    parse_fields,
    read_rating,
    reask_count,
    strict_outcome,
    valid_reply,
)
from metric_arena.judge._plan import (
    DEFAULT_JUDGE,
    PairInputs,
    answer_positions,
    check_order,
    check_pair_inputs,
    judge_request,
)
from metric_arena.judge._records import RunWriter, summarize_verdicts
from metric_arena.llm import (
    Backend,
    CompletionCache,
    Progress,
    RateLimiter,
    RequestResult,
    RetryPolicy,
    Runner,
    gather_or_cancel,
    make_backends,
    make_budgets,
    run_sync,
    run_until_stopped,
)
from metric_arena.prompts import (
    JUDGE_TAGS,
    clean_response,
    is_no_answer,
    neutralize_delimiters,
)
from metric_arena.stats import IntervalStopper, majority_vote

__all__ = ["ajudge_pairs", "judge_pairs"]

_NOT_GENERATED = "the prediction file marks this answer as failed to generate: not judged"


class _PairJudge:
    """What judging one pair needs: the inputs, the judges, their budgets and the runner."""

    def __init__(self, pairs: PairInputs, backends: list[Backend], runner: Runner, *, order: str, seed: int,
                 system: str, opponent: str, max_input_tokens: int | None, data_dir, parse: str = "strict") -> None:
        self.pairs, self.backends, self.runner, self.parse = pairs, backends, runner, parse
        self.order, self.seed, self.system, self.opponent, self.data_dir = order, seed, system, opponent, data_dir
        self.budgets = make_budgets(backends, max_input_tokens)

    def _verdict(self, i: int, outcome: str | None, **fields) -> dict:
        return {"qid": self.pairs.ids[i], "domain": self.pairs.domains[i], "system_a": self.system,
                "system_b": self.opponent, "outcome": outcome, "failed": outcome is None, **fields}

    async def judge(self, i: int) -> dict:
        """The verdict of pair ``i`` (every judge, every order the policy asks for)."""
        if self.pairs.skipped[i]:
            return self._verdict(i, None, flipped=None, no_answer_a=False, judgments=[], error=_NOT_GENERATED)
        question = self.pairs.questions[i]
        a_text = clean_response(self.pairs.predictions[i])
        b_text = clean_response(self.pairs.references[i])
        neutralized = any(neutralize_delimiters(text, JUDGE_TAGS)[1] for text in (question, a_text, b_text))
        positions = answer_positions(self.order, self.pairs.ids[i], question, self.seed)
        requests = [(p, judge_request(question, a_text, b_text, p, data_dir=self.data_dir)) for p in positions]
        jobs = [(backend, position, self._ask(backend, request))
                for backend in self.backends for position, request in requests]
        results = await asyncio.gather(*(job for _, _, job in jobs))
        judgments = [_judgment(backend, position, result, self.parse)
                     for (backend, position, _), result in zip(jobs, results)]
        per_judge = [judge_outcome(judgments, backend.spec) for backend in self.backends]
        outcome = majority_vote([o for o, _ in per_judge])
        flips = [flip for o, flip in per_judge if o is not None]
        flipped = (any(flips) if outcome is not None else None) if self.order == "both" else None
        strict = {"outcome_strict": strict_outcome(judgments, [b.spec for b in self.backends])} \
            if self.parse == "reference" else {}
        return self._verdict(i, outcome, flipped=flipped, no_answer_a=is_no_answer(a_text), judgments=judgments,
                             **({"neutralized": True} if neutralized else {}), **strict)

    async def _ask(self, backend: Backend, request) -> RequestResult:
        refusal = self.budgets[backend.spec].refusal(request) if self.budgets else None
        if refusal:
            return self.runner.refuse(refusal)
        return await self.runner.run_one(backend, request, validate=valid_reply, reask=reask_count(self.parse))


def _judgment(backend: Backend, position: int, result: RequestResult, parse: str = "strict") -> dict:
    rating = read_rating(result.text, parse, valid=result.valid)
    return {
        "judge": backend.spec,
        "a_position": position,
        "rating": rating,
        "outcome": outcome_of(rating, position),
        "raw": result.text if result.text is not None else "",
        "attempts": result.attempts,
        "cached": result.cached,
        **({"error": result.error} if result.error and rating is None else {}),
        **({"oversized": result.completion.original_chars} if result.completion and result.completion.original_chars
           else {}),
    }


async def _run_schedule(pair_judge: _PairJudge, schedule: list[int], *, writer: RunWriter | None, bar: Progress,
                        stopper: IntervalStopper | None) -> list[dict | None]:
    """Judge the scheduled pairs; with a stopper, start pairs in order until the interval is narrow enough."""
    verdicts: list[dict | None] = [None] * len(pair_judge.pairs)

    async def one(i: int) -> None:
        verdict = await pair_judge.judge(i)
        verdicts[i] = verdict
        if writer is not None:
            writer.write(verdict)
        bar.advance(verdict["failed"], bool(verdict["judgments"]) and all(j["cached"] for j in verdict["judgments"]))
        if stopper is not None and not pair_judge.pairs.skipped[i]:
            stopper.update(verdict["outcome"])

    if stopper is None:
        await gather_or_cancel([asyncio.ensure_future(one(i)) for i in schedule])
    else:
        await run_until_stopped(one, schedule, lambda: stopper.should_stop, pair_judge.runner.max_concurrency)
    return verdicts


async def ajudge_pairs(
    predictions: Sequence[str],
    references: Sequence[str],
    questions: Sequence[str],
    *,
    ids: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    judge: str | Backend | Sequence[str | Backend] = DEFAULT_JUDGE,
    base_url: str | None = None,
    api_key: str | None = None,
    order: str = "paper",
    seed: int = 0,
    max_concurrency: int = 16,
    cache_dir: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    system: str | None = None,
    opponent: str = "LFRQA",
    progress: bool | None = None,
    limiter: RateLimiter | None = None,
    retry: RetryPolicy | None = None,
    n_boot: int = 1000,
    data_dir: str | os.PathLike | None = None,
    backend_options: dict | None = None,
    timeout: float | None = None,
    use_cache: bool = True,
    sample: int | None = None,
    target_width: float | None = None,
    generation_failed: Sequence[bool] | None = None,
    max_input_tokens: int | None = None,
    overwrite: bool = False,
    parse: str = "strict",
) -> dict:
    """Async form of :func:`judge_pairs` (same arguments, same result)."""
    check_order(order)
    check_parse(parse)
    if not isinstance(seed, int):
        raise InvalidInputType(f"seed must be an integer, got {seed!r}")
    pairs = check_pair_inputs(predictions, references, questions, ids, domains, generation_failed)
    stopper = IntervalStopper(target_width) if target_width is not None else None
    schedule = pairs.schedule(sample, seed, ordered=stopper is not None)
    backends = make_backends(judge, base_url=base_url, api_key=api_key, timeout=timeout, options=backend_options)
    if system is None:
        system = Path(out).resolve().name if out is not None else "system"
    settings = {"system": system, "opponent": opponent, "judges": [b.spec for b in backends], "order": order,
                "seed": seed}
    writer = RunWriter(out, settings, overwrite=overwrite) if out is not None else None
    started = time.monotonic()
    try:
        runner = Runner(CompletionCache(cache_dir) if use_cache else None, max_concurrency=max_concurrency,
                        retry=retry, limiter=limiter)
        pair_judge = _PairJudge(pairs, backends, runner, order=order, seed=seed, system=system, opponent=opponent,
                                max_input_tokens=max_input_tokens, data_dir=data_dir, parse=parse)
        show = progress if progress is not None else (len(pairs) >= 20 and sys.stderr.isatty())
        verdicts = await _judge_all(pair_judge, schedule, writer, stopper, bool(show))
        done: list[dict] = [v for v in verdicts if v is not None]  # input order; unjudged pairs left out
        summary = {**settings, **summarize_verdicts(done, settings["judges"], order=order, seed=seed, n_boot=n_boot),
                   **parse_fields(done, parse), **_schedule_fields(len(schedule), sample, stopper, target_width), **_run_fields(runner, started)}
        if writer is not None:
            writer.finish(done, summary)
    finally:
        if writer is not None:
            writer.close()
    return {**summary, "verdicts": done}


async def _judge_all(pair_judge: _PairJudge, schedule: list[int], writer: RunWriter | None,
                     stopper: IntervalStopper | None, show: bool) -> list[dict | None]:
    """The verdicts of the scheduled pairs (a progress bar while they come); backends and cache closed after."""
    bar = Progress(len(schedule), show, f"judging {pair_judge.system} vs {pair_judge.opponent}")
    try:
        return await _run_schedule(pair_judge, schedule, writer=writer, bar=bar, stopper=stopper)
    finally:
        bar.close()
        for backend in pair_judge.backends:
            await backend.aclose()
        if pair_judge.runner.cache is not None:
            pair_judge.runner.cache.close()


def _run_fields(runner: Runner, started: float) -> dict:
    """Counters, time taken, when and by which version: the last fields of a summary."""
    return {**runner.counters(), "elapsed_s": round(time.monotonic() - started, 3),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "package_version": package_version()}


def _schedule_fields(n_planned: int, sample: int | None, stopper: IntervalStopper | None,
                     target_width: float | None) -> dict:
    fields: dict = {}
    if sample is not None or stopper is not None:
        fields["n_planned"] = n_planned
        if sample is not None:
            fields["sample"] = sample
    if stopper is not None:
        fields.update(stopped_early=stopper.should_stop, interval_width=stopper.width, target_width=target_width,
                      win_tie_rate_wilson=list(stopper.interval))
    return fields


def judge_pairs(
    predictions: Sequence[str],
    references: Sequence[str],
    questions: Sequence[str],
    *,
    ids: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    judge: str | Backend | Sequence[str | Backend] = DEFAULT_JUDGE,
    base_url: str | None = None,
    api_key: str | None = None,
    order: str = "paper",
    seed: int = 0,
    max_concurrency: int = 16,
    cache_dir: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    system: str | None = None,
    opponent: str = "LFRQA",
    progress: bool | None = None,
    limiter: RateLimiter | None = None,
    retry: RetryPolicy | None = None,
    n_boot: int = 1000,
    data_dir: str | os.PathLike | None = None,
    backend_options: dict | None = None,
    timeout: float | None = None,
    use_cache: bool = True,
    sample: int | None = None,
    target_width: float | None = None,
    generation_failed: Sequence[bool] | None = None,
    max_input_tokens: int | None = None,
    overwrite: bool = False,
    parse: str = "strict",
) -> dict:
    """Judge each prediction against its reference answer; return win rates and verdicts.

    ``judge`` is a ``"<backend>:<model>"`` spec, a :class:`~metric_arena.llm.Backend`, or a list
    of them to vote. ``base_url``/``api_key`` (openai judges) default to ``$OPENAI_BASE_URL`` /
    ``$OPENAI_API_KEY``. ``order``: "paper", "random" or "both". ``cache_dir`` defaults to
    ``$RAG_QA_ARENA_CACHE`` or ``~/.cache/rag_qa_arena``. ``system``/``opponent``: names in the
    verdicts. ``out``: a run folder (``verdicts.jsonl`` as pairs finish, ``summary.json`` at the
    end; locked while the run lasts). A folder holding a run with other settings (system,
    opponent, judges, order) is refused unless ``overwrite=True``; its verdicts are then replaced
    only once the new set is complete.
    ``limiter``: a :class:`~metric_arena.RateLimiter`; ``retry``: a :class:`~metric_arena.RetryPolicy`.
    ``data_dir``: the pinned benchmark files. ``backend_options`` go to
    :func:`~metric_arena.llm.make_backend`; ``timeout`` bounds each attempt as a whole (openai judges).
    ``sample``: judge a seeded, domain-stratified sub-sample of that many pairs. ``target_width``:
    stop once the win+tie rate's 95% interval is that narrow (e.g. 0.04). ``generation_failed``: one
    bool per pair, True fails the pair without judging it. ``max_input_tokens``: refuse (and fail)
    judgments whose prompt is longer. ``parse``: "strict" (default) or "reference" (replies read as
    the reference implementation reads them, never re-asked; each verdict then also carries
    ``outcome_strict`` and the summary ``n_differ_from_strict``).

    Returns the fields of :func:`metric_arena.stats.summarize` (``n``, ``n_failed``, ``win_rate``,
    ``tie_rate``, ``loss_rate``, ``win_tie_rate``, their ``_ci``, ``no_answer_rate``,
    ``per_domain``), ``position_flip_rate`` (order "both"), ``per_judge`` (several judges),
    error counters, and ``verdicts`` (one dict per pair, in input order).

    >>> res = judge_pairs(["Paris."], ["Paris is the capital of France."], ["Capital of France?"],
    ...                   judge="openai:gpt-4o-mini")  # doctest: +SKIP
    >>> res["win_rate"], res["verdicts"][0]["judgments"][0]["raw"]  # doctest: +SKIP
    """
    return run_sync(ajudge_pairs(
        predictions, references, questions, ids=ids, domains=domains, judge=judge, base_url=base_url,
        api_key=api_key, order=order, seed=seed, max_concurrency=max_concurrency, cache_dir=cache_dir, out=out,
        system=system, opponent=opponent, progress=progress, limiter=limiter, retry=retry, n_boot=n_boot,
        data_dir=data_dir, backend_options=backend_options, timeout=timeout, use_cache=use_cache, sample=sample,
        target_width=target_width, generation_failed=generation_failed, max_input_tokens=max_input_tokens,
        overwrite=overwrite, parse=parse,
    ))
