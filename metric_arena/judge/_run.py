"""``judge_pairs``: every pair through every judge, concurrently, verdicts written as they come."""

from __future__ import annotations

import asyncio
import functools
import os
from collections import Counter
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from lfrqa.checks import grouped_keywords
from lfrqa.errors import InvalidInputType, RagQaArenaError
from lfrqa.kernel import package_version
from metric_arena.judge._config import JudgeConfig, JudgeSpec, judge_config
from metric_arena.judge._inputs import JudgeInputs, old_input_form
from metric_arena.judge._parse import judge_one, judge_outcome, parse_fields, strict_outcome
from metric_arena.judge._plan import DEFAULT_JUDGE, PairInputs, check_pair_inputs, check_system_names, pair_requests
from metric_arena.judge._records import RunWriter, summarize_verdicts
from metric_arena.llm import RunConfig, Session, synchronous
from metric_arena.prompts import is_no_answer, is_no_answer_reference
from metric_arena.records import RUN_OUTPUT_KEYWORDS, RunOutput, Verdict, injection_counts, run_output
from metric_arena.stats import IntervalStopper, Intervals, reference_vote, majority_vote
from metric_arena.style import verdict_style

__all__ = ["ajudge_pairs", "import_fields", "judge_intervals", "judge_pairs"]

_NOT_GENERATED = "the prediction file marks this answer as failed to generate: not judged"


class _PairJudge:
    """What judging one pair needs: the inputs, the judge's settings and the session's judges."""

    def __init__(self, pairs: PairInputs, config: JudgeConfig, session: Session, *, system: str, opponent: str,
                 data_dir) -> None:
        self.pairs, self.config, self.session = pairs, config, session
        self.system, self.opponent, self.data_dir = system, opponent, data_dir

    def _verdict(self, i: int, outcome: str | None, **fields) -> Verdict:
        return {"qid": self.pairs.ids[i], "domain": self.pairs.domains[i], "system_a": self.system,
                "system_b": self.opponent, "outcome": outcome, "failed": outcome is None, **fields}

    async def judge(self, i: int) -> Verdict:
        """The verdict of pair ``i`` (every judge, every order the policy asks for)."""
        if self.pairs.skipped[i]:
            return self._verdict(i, None, flipped=None, no_answer_a=False, judgments=[], error=_NOT_GENERATED)
        config, backends = self.config, self.session.backends
        planned = pair_requests(self.pairs.questions[i], self.pairs.predictions[i], self.pairs.references[i],
                                qid=self.pairs.ids[i], order=config.order, seed=config.seed, data_dir=self.data_dir)
        jobs = [(backend, position, request) for backend in backends for position, request in planned.requests]
        asks = [judge_one(functools.partial(self.session.ask, backend), request, position, judge=backend.spec,
                          parse=config.parse)
                for backend, position, request in jobs]
        judgments = [await asks[0]] if len(asks) == 1 else list(await asyncio.gather(*asks))  # one: no task for it
        per_judge = [judge_outcome(judgments, backend.spec) for backend in backends]
        flips = [flip for o, flip in per_judge if o is not None]
        fields: dict = {"no_answer_a": is_no_answer(planned.a_text), "judgments": judgments,
                        **verdict_style(planned.a_text, planned.b_text)}
        if planned.neutralized:
            fields["neutralized"] = True
        for side, signs in (("injection_a", planned.signs_a), ("injection_b", planned.signs_b)):
            if signs:
                fields[side] = signs  # the answer spoke to the judge: defused tags, plain-language address
        if is_no_answer_reference(planned.a_text):
            fields["no_answer_a_reference"] = True  # the reference scripts' substring rule, for comparison
        if config.parse == "reference":
            # The reference's counting: a failed judge votes 0 (a tie), votes that all differ are a tie, else
            # the most frequent (first seen on a tie of counts); a pair no judge answered is a tie, still in n_failed.
            outcome = reference_vote([o for o, _ in per_judge])
            fields["outcome_strict"] = strict_outcome(judgments, [b.spec for b in backends])
            if all(o is None for o, _ in per_judge):
                fields["failed_as_tie"] = True
        else:
            outcome = majority_vote([o for o, _ in per_judge])
        flipped = (any(flips) if flips else None) if config.order == "both" else None
        verdict = self._verdict(i, outcome, flipped=flipped, **fields)
        if fields.get("failed_as_tie"):
            verdict["failed"] = True
        return verdict


async def _run_schedule(pair_judge: _PairJudge, schedule: list[int], *, writer: RunWriter | None, show: bool,
                        stopper: IntervalStopper | None) -> list[dict | None]:
    """Judge the scheduled pairs; with a stopper, start pairs in order until the interval is narrow enough."""
    session = pair_judge.session
    bar = session.progress(len(schedule), show, f"judging {pair_judge.system} vs {pair_judge.opponent}")
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
        await session.run_all(one, schedule)  # pairs pulled by a fixed pool of workers, prompts made when sent
    else:
        await session.run_until(one, schedule, lambda: stopper.should_stop)
    return verdicts


@grouped_keywords("output", RunOutput, RUN_OUTPUT_KEYWORDS)
@grouped_keywords("intervals", Intervals, ["n_boot"])
@old_input_form("ajudge_pairs")
async def ajudge_pairs(
    inputs: JudgeInputs,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    out: str | os.PathLike | None = None,
    output: RunOutput | None = None,
    intervals: Intervals | None = None,
    data_dir: str | os.PathLike | None = None,
) -> dict:
    """Async form of :func:`judge_pairs` (same arguments, same result)."""
    return await _judge_pairs(inputs, judge=judge, run=run, out=out, output=output, intervals=intervals,
                              data_dir=data_dir)


def judge_intervals(intervals: Intervals | None, config: JudgeConfig) -> Intervals:
    """The intervals of a judged run, ``intervals`` (None: the defaults) checked against the judge: their seed
    is the judge's (``JudgeConfig(seed=...)``, the summary's ``seed``), another than 0 (Intervals' default)
    or the judge's is refused."""
    if intervals is None:
        return Intervals(seed=config.seed)
    if not isinstance(intervals, Intervals):
        raise InvalidInputType(f"intervals={intervals!r}: give an Intervals(n_boot=..., confidence=...) "
                               "(from metric_arena.stats)")
    if intervals.seed not in (0, config.seed):
        raise RagQaArenaError(f"intervals=Intervals(seed={intervals.seed}): a judged run seeds its intervals with "
                              f"the judge's seed ({config.seed}): set JudgeConfig(seed={intervals.seed}) (--seed) "
                              "instead and leave Intervals' seed out")
    return Intervals(n_boot=intervals.n_boot, seed=config.seed, confidence=intervals.confidence)


async def _judge_pairs(inputs: JudgeInputs, *, judge, run, out, output, intervals, data_dir) -> dict:
    sample, target_width, system, opponent = inputs.sample, inputs.target_width, inputs.system, inputs.opponent
    config = judge_config(judge)
    output, intervals = run_output(output), judge_intervals(intervals, config)
    pairs = check_pair_inputs(inputs.predictions, inputs.references, inputs.questions, inputs.ids, inputs.domains,
                              inputs.generation_failed)
    stopper = IntervalStopper(target_width, confidence=intervals.confidence) if target_width is not None else None
    schedule = pairs.schedule(sample, config.seed, ordered=stopper is not None)
    if system is None:
        system = Path(out).resolve().name if out is not None else "system"
    check_system_names(system, opponent)
    settings = {"system": system, "opponent": opponent, "judges": config.specs, "order": config.order,
                "seed": config.seed, "parse": config.parse,
                "endpoint_name": run.endpoint_name if run is not None else None}
    writer = RunWriter(out, settings, overwrite=output.overwrite) if out is not None else None
    started = time.monotonic()
    try:
        session = Session(config.judges, run, options=config.options, max_input_tokens=config.max_input_tokens)
        async with session:
            pair_judge = _PairJudge(pairs, config, session, system=system, opponent=opponent, data_dir=data_dir)
            show = output.progress if output.progress is not None else (len(pairs) >= 20 and sys.stderr.isatty())
            verdicts = await _run_schedule(pair_judge, schedule, writer=writer, show=bool(show), stopper=stopper)
        done: list[dict] = [v for v in verdicts if v is not None]  # input order; unjudged pairs left out
        summary = {**settings, **summarize_verdicts(done, settings["judges"], order=config.order, intervals=intervals,
                                                    parse=config.parse),
                   **({} if intervals.confidence == Intervals().confidence else {"confidence": intervals.confidence}),
                   **parse_fields(done, config.parse), **_schedule_fields(len(schedule), sample, stopper, target_width),
                   **_run_fields(session, done, started),
                   "injection": injection_counts(done, [system, opponent])}
        if writer is not None:
            writer.finish(done, summary)
    finally:
        if writer is not None:
            writer.close()
    return {**summary, "verdicts": done}


def _run_fields(session: Session, verdicts: list[dict], started: float) -> dict:
    """Counters, time taken, when and by which version: the last fields of a summary. ``n_system_folded``
    counts judgments whose local judge's chat template refused the system role (folded into the user turn)."""
    folded = sum(bool(j.get("system_folded")) for v in verdicts for j in v["judgments"])
    return {**session.runner.counters(), "n_system_folded": folded, "imports": import_fields(verdicts),
            "endpoints": session.endpoints(),
            "elapsed_s": round(time.monotonic() - started, 3),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "package_version": package_version()}


def import_fields(verdicts: list[dict]) -> dict:
    """How many judgments of ``verdicts`` were answered by ``judge --import-results`` (``n_judgments``), by
    file, and by the model the imported replies named (``reply_models``)."""
    imported = [j["imported"] for v in verdicts for j in v.get("judgments") or [] if isinstance(j.get("imported"), dict)]
    return {"n_judgments": len(imported), "files": dict(sorted(Counter(str(i.get("file")) for i in imported).items())),
            "reply_models": dict(sorted(Counter(str(i.get("model")) for i in imported if i.get("model")).items()))}


def _schedule_fields(n_planned: int, sample: int | None, stopper: IntervalStopper | None,
                     target_width: float | None) -> dict:
    fields: dict = {}
    if sample is not None or stopper is not None:
        fields["n_planned"] = n_planned
        if sample is not None:
            fields["sample"] = sample  # as asked; sample_judged: the pairs it chose (fewer when there are fewer)
            fields["sample_judged"] = n_planned
    if stopper is not None:
        fields.update(stopped_early=stopper.should_stop, interval_width=stopper.width, target_width=target_width,
                      win_tie_rate_wilson=list(stopper.interval))
    return fields


_blocking_judge_pairs = synchronous(_judge_pairs, name="judge_pairs", doc="judge_pairs without the argument check")


@grouped_keywords("output", RunOutput, RUN_OUTPUT_KEYWORDS)
@grouped_keywords("intervals", Intervals, ["n_boot"])
@old_input_form("judge_pairs")
def judge_pairs(
    inputs: JudgeInputs,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    out: str | os.PathLike | None = None,
    output: RunOutput | None = None,
    intervals: Intervals | None = None,
    data_dir: str | os.PathLike | None = None,
) -> dict:
    """Judge each prediction against its reference answer; return win rates and verdicts.

    ``inputs``: the pairs, a :class:`~metric_arena.judge.JudgeInputs` (predictions, references,
    questions, ids, domains, generation_failed, the two sides' names, sample, target_width); the
    form of earlier releases, ``judge_pairs(predictions, references, questions, ids=..., ...)``,
    still works for one release, with a ``DeprecationWarning``.
    ``judge``: what judges and how, a :class:`~metric_arena.JudgeConfig` (judges, order, seed, parse,
    max_input_tokens, backend options), or just a ``"<backend>:<model>"`` spec, a
    :class:`~metric_arena.llm.Backend` or a list of them (several judges vote) with the default
    settings. ``run``: how the requests run, a :class:`~metric_arena.RunConfig` (server, key,
    timeout, concurrency, rate limiter, retries, cache). ``out``: a run folder (``verdicts.jsonl`` as
    pairs finish, ``summary.json`` at the end; locked while the run lasts). ``output``: a
    :class:`~metric_arena.judge.RunOutput`: a folder holding a run with other settings (system,
    opponent, judges, order) is refused unless ``RunOutput(overwrite=True)``; its verdicts are then
    replaced only once the new set is complete; ``RunOutput(progress=...)``: a progress bar (None, the
    default: one when at least 20 pairs and stderr is a terminal). ``intervals``: an
    :class:`~metric_arena.stats.Intervals`, the bootstrap resamples (``n_boot``) and ``confidence`` of
    the summary's intervals (and of ``target_width``'s); their seed is the judge's, so ``Intervals(seed=)``
    other than 0 or the judge's seed is refused. Loose ``overwrite=``, ``progress=`` and ``n_boot=``
    work for one release, with a ``DeprecationWarning``. ``data_dir``: the pinned prompt files.

    Returns the fields of :func:`metric_arena.stats.summarize` (``n``, ``n_failed``, ``win_rate``,
    ``tie_rate``, ``loss_rate``, ``win_tie_rate``, their ``_ci``, ``no_answer_rate``,
    ``per_domain``), ``position_flip_rate`` (order "both"), ``per_judge`` (several judges), ``parse``
    (with "reference": ``n_differ_from_strict``), error counters, and ``verdicts`` (one dict per
    pair, in input order).

    >>> judge = JudgeConfig("openai:gpt-4o-mini", order="both", parse="reference")       # doctest: +SKIP
    >>> pairs = JudgeInputs(predictions=["Paris."], references=["Paris is the capital of France."],
    ...                     questions=["Capital of France?"])                             # doctest: +SKIP
    >>> res = judge_pairs(pairs, judge=judge, run=RunConfig(max_concurrency=64))        # doctest: +SKIP
    >>> res["win_rate"], res["verdicts"][0]["judgments"][0]["raw"]                       # doctest: +SKIP
    """
    return _blocking_judge_pairs(inputs, judge=judge, run=run, out=out, output=output, intervals=intervals,
                                 data_dir=data_dir)
