"""The RAG-QA Arena pairwise judge: a system's answers against LFRQA's (or another system's).

Each pair is judged as the paper does (see :mod:`metric_arena._prompts` for the request): both
answers are cleaned with the reference implementation's cleanup, put in the order the policy
says, and sent to every judge. Verdicts are seen from the evaluated system's side (``system_a``).

Order policies
    ``"paper"``: the reference's rule: when the question has an even number of space-separated
    words (``len(q.split(' ')) % 2 == 0``) the prediction is Answer 1, otherwise the reference is.
    ``"random"``: per id, ``random.Random(f"{seed}:{qid}").random() < 0.5`` puts the prediction
    first; the position is recorded in each judgment (``a_position``).
    ``"both"``: both orders are judged; a judge whose two verdicts differ counts as a tie for that
    pair and as a position flip (``position_flip_rate``). A judge that fails on either order is
    failed for the pair.

Parsing (strict)
    The rating is read only from ``<rating>…</rating>`` tags. Every such tag must hold exactly
    one of 0, 1, 2 (whitespace around it allowed) and all tags of a reply must agree (a repeated
    identical tag is accepted; two different ratings, a "3", an empty tag or no tag at all make
    the reply invalid). Digits elsewhere in the text are never read. An invalid reply is asked
    once more (a fresh request, not answered from the cache); if that fails too, the judgment is
    failed: it counts in ``n_failed`` and in no rate — never as a tie. A reply cut at
    ``max_tokens`` (``finish_reason: "length"``, counted as ``truncated``) is read the same way:
    with a valid rating it counts; without one it is re-asked once, then the judgment fails.

Several judges
    Each judge votes with its outcome (win/tie/loss); failed judges do not vote. The outcome with
    the most votes wins; a tie between top counts is a tie (as the paper's majority vote, where
    three different votes make a tie). All judges failed: the pair is failed. Each judge's
    judgments are kept in the verdict, and ``per_judge`` holds each judge's own summary.

Fewer pairs
    ``sample=N`` judges a seeded sub-sample of N pairs stratified by domain
    (:func:`~metric_arena._sampling.stratified_sample`, seeded with ``seed``). ``target_width=W``
    judges the pairs in a seeded stratified order and starts no new pair once the 95% (Wilson)
    interval of the win+tie rate is at most W wide (after at least 50 pairs); pairs in flight
    then finish and are counted. The summary records ``stopped_early``, ``interval_width`` and
    ``n_planned``; verdicts cover the judged pairs only.

Verdicts follow the run-folder contract (``qid``, ``domain``, ``system_a``, ``system_b``,
``outcome``, ``failed``, ``flipped``, ``no_answer_a``, ``judgments``); a failed judgment also
carries ``error``, the last failure's description.

Hostile text
    Question, answers and reference are data: prompt delimiters inside them are defused before
    they are inserted (:func:`metric_arena._prompts.neutralize_delimiters`), and the verdict then
    carries ``"neutralized": true`` (the key is absent otherwise).

Pairs that are not sent
    ``generation_failed[i]`` true (the prediction file marked the answer ``failed``): the pair is
    failed at once, with no judgment and ``error``. With ``max_input_tokens``, a request whose
    prompt is longer (tiktoken count; approximate for non-OpenAI models) is refused rather than
    truncated: that judgment fails with the reason in ``error`` and counts as ``over_budget``.
    Without a budget, a server that rejects an over-long prompt (HTTP 400) fails that judgment
    the same way (not retried, counted as ``"400"``).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from metric_arena._backends import Backend, ChatRequest, Completion, make_backend, parse_spec
from metric_arena._cache import CompletionCache
from metric_arena._prompts import JUDGE_TAGS, clean_response, is_no_answer, judge_messages, neutralize_delimiters
from metric_arena._runner import RequestResult, RetryPolicy, Runner, gather_or_cancel
from metric_arena._sampling import IntervalStopper, pair_schedule, run_until_stopped
from metric_arena._stats import summarize
from metric_arena._sync import run_sync

__all__ = [
    "DEFAULT_JUDGE",
    "ORDERS",
    "answer_positions",
    "ajudge_pairs",
    "judge_pairs",
    "judge_request",
    "majority_vote",
    "parse_rating",
]

DEFAULT_JUDGE = "openai:gpt-4-0125-preview"
ORDERS = ("paper", "random", "both")
#: Decoding parameters of the reference implementation.
JUDGE_MAX_TOKENS = 256
JUDGE_TEMPERATURE = 0.0
JUDGE_TOP_P = 1.0

_RATING_TAG = re.compile(r"<rating>(.*?)</rating>", re.DOTALL)
_RATING_VALUE = re.compile(r"\s*([012])\s*")


def parse_rating(text: str | None) -> int | None:
    """The rating (0 tie, 1, 2) of a judge reply, or None when the reply has no valid rating.

    >>> parse_rating("<thinking>Answer 2 cites more.</thinking><rating> 1 </rating>")
    1
    >>> parse_rating("I prefer answer 2.") is None           # digits outside the tag never count
    True
    >>> parse_rating("<rating>1</rating> ... <rating>2</rating>") is None
    True
    """
    if not text:
        return None
    values = set()
    for inner in _RATING_TAG.findall(text):
        match = _RATING_VALUE.fullmatch(inner)
        if match is None:
            return None
        values.add(int(match.group(1)))
    return values.pop() if len(values) == 1 else None


def _valid_reply(completion: Completion) -> bool:
    return parse_rating(completion.text) is not None


def answer_positions(order: str, qid: str, question: str, seed: int = 0) -> list[int]:
    """Where the evaluated answer is shown (1 = Answer 1) under an order policy; two for "both"."""
    if order == "paper":
        return [1] if len(question.split(" ")) % 2 == 0 else [2]
    if order == "random":
        return [1] if random.Random(f"{seed}:{qid}").random() < 0.5 else [2]
    if order == "both":
        return [1, 2]
    raise ValueError(f"Unknown order policy {order!r}. Available: {', '.join(ORDERS)}")


def judge_request(
    question: str, a_text: str, b_text: str, a_position: int, *, data_dir: str | os.PathLike | None = None
) -> ChatRequest:
    """The judge request for one ordered pair; ``a_text``/``b_text`` are already cleaned and
    ``a_position`` (1 or 2) is where ``a_text`` is shown."""
    first, second = (a_text, b_text) if a_position == 1 else (b_text, a_text)
    return ChatRequest(
        judge_messages(question, first, second, data_dir=data_dir),
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=JUDGE_TEMPERATURE,
        top_p=JUDGE_TOP_P,
    )


class InputBudget:
    """Refuses requests whose prompt exceeds ``max_input_tokens`` tokens (refuse, never truncate).

    Tokens are counted with tiktoken for ``model`` (OpenAI's chat counting rule; ``o200k_base``,
    an approximation, for models tiktoken does not know).

    >>> budget = InputBudget(10, "gpt-4o")
    >>> budget.refusal(ChatRequest([{"role": "user", "content": "word " * 50}]))[:38]
    'prompt has 58 tokens, over the max_inp'
    """

    def __init__(self, max_input_tokens: int, model: str):
        if isinstance(max_input_tokens, bool) or not isinstance(max_input_tokens, int) or max_input_tokens < 1:
            raise ValueError(f"max_input_tokens must be a positive integer, got {max_input_tokens!r}")
        from metric_arena._cost import _Counter, get_encoding

        self.limit = max_input_tokens
        self.model = model
        encoding, self.exact = get_encoding(model)
        self._counter = _Counter(encoding)

    def count(self, request: ChatRequest) -> int:
        return self._counter.chat(request.messages)

    def refusal(self, request: ChatRequest) -> str | None:
        """None when the request fits, else why it is refused."""
        n = self.count(request)
        if n <= self.limit:
            return None
        approx = "" if self.exact else " (approximate count)"
        return (f"prompt has {n} tokens{approx}, over the max_input_tokens budget of {self.limit}: not sent. "
                "Raise --max-input-tokens up to the model's context window, or shorten the input")


def make_budgets(backends: Sequence[Backend], max_input_tokens: int | None) -> dict[str, InputBudget]:
    """One :class:`InputBudget` per backend spec, or none without a budget."""
    if max_input_tokens is None:
        return {}
    return {b.spec: InputBudget(max_input_tokens, b.model) for b in backends}


async def refused_result(runner: Runner, reason: str) -> RequestResult:
    """The result of a request that was not sent (counted as ``over_budget``)."""
    runner.errors["over_budget"] += 1
    return RequestResult(None, False, 0, False, error=reason)


def _outcome(rating: int | None, a_position: int) -> str | None:
    if rating is None:
        return None
    if rating == 0:
        return "tie"
    return "win" if rating == a_position else "loss"


def majority_vote(outcomes: Sequence[str | None]) -> str | None:
    """Most common outcome among the judges that did not fail; a tie for the top is a tie.

    >>> majority_vote(["win", "win", "loss"]), majority_vote(["win", "loss", "tie"]), majority_vote([None, None])
    ('win', 'tie', None)
    """
    counts = Counter(o for o in outcomes if o is not None)
    if not counts:
        return None
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return "tie"
    return ranked[0][0]


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
def _check_inputs(predictions, references, questions, ids, domains) -> tuple[list[str], list[str | None]]:
    n = len(predictions)
    for name, values in (("references", references), ("questions", questions)):
        _check_length(name, values, n)
    for name, values in (("predictions", predictions), ("references", references), ("questions", questions)):
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise TypeError(
                    f"{name}[{i}] is {type(value).__name__} ({value!r}), not a string: every answer and question "
                    "must be text (an empty answer is allowed and judged as such)"
                )
    if ids is None:
        ids = [str(i) for i in range(n)]
    else:
        ids = _check_names("ids", ids, n, one="one id", example=" (e.g. LFRQA's qid)")
        seen: dict[str, int] = {}
        for i, value in enumerate(ids):
            if value in seen:
                raise ValueError(f"Duplicate id {value!r} at positions {seen[value]} and {i}: ids must be unique")
            seen[value] = i
    domains = [None] * n if domains is None else _check_names("domains", domains, n)
    return ids, domains


def _check_length(name: str, values, n: int, one: str = "one") -> None:
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries but predictions has {n}: give {one} per prediction")


def _check_names(name: str, values, n: int, *, one: str = "one", example: str = "") -> list[str]:
    """``values`` as a list, one non-empty string per prediction."""
    _check_length(name, values, n, one)
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value:
            raise TypeError(f"{name}[{i}] is {value!r}: {name} must be non-empty strings{example}")
    return values


def _check_flags(flags, n: int) -> list[bool]:
    if flags is None:
        return [False] * n
    flags = list(flags)
    _check_length("generation_failed", flags, n)
    for i, value in enumerate(flags):
        if not isinstance(value, bool):
            raise TypeError(f"generation_failed[{i}] is {value!r}: give True or False")
    return flags


def _planned_requests(
    predictions, references, questions, *, ids=None, domains=None, order: str = "paper", seed: int = 0,
    sample: int | None = None, generation_failed=None, data_dir=None,
) -> list[ChatRequest]:
    """Every request :func:`ajudge_pairs` would build for one judge, in schedule order (all pairs,
    or the ``sample``), leaving out the pairs flagged in ``generation_failed``: what the dry run
    counts and the Batch API path sends."""
    if order not in ORDERS:
        raise ValueError(f"Unknown order policy {order!r}. Available: {', '.join(ORDERS)}")
    ids, domains = _check_inputs(predictions, references, questions, ids, domains)
    skipped = _check_flags(generation_failed, len(ids))
    schedule = pair_schedule(ids, domains, sample, seed) if sample is not None else range(len(ids))
    requests: list[ChatRequest] = []
    for i in (i for i in schedule if not skipped[i]):
        a_text, b_text = clean_response(predictions[i]), clean_response(references[i])
        for position in answer_positions(order, ids[i], questions[i], seed):
            requests.append(judge_request(questions[i], a_text, b_text, position, data_dir=data_dir))
    return requests


def _make_backends(judge, base_url, api_key, backend_options, timeout=None) -> list[Backend]:
    specs = [judge] if isinstance(judge, (str, Backend)) else list(judge)
    if not specs:
        raise ValueError("No judge given: pass judge='openai:gpt-4-0125-preview' or a list of specs")
    backends = []
    for spec in specs:
        if isinstance(spec, Backend):
            backends.append(spec)
            continue
        name, _ = parse_spec(spec)
        if name == "openai":
            options = dict(backend_options or {})
            if timeout is not None:
                options["timeout"] = timeout
            backends.append(make_backend(spec, base_url=base_url, api_key=api_key, **options))
        else:
            backends.append(make_backend(spec, **(backend_options or {})))
    names = [b.spec for b in backends]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"Judge {duplicates[0]!r} is given twice: list each judge once")
    return backends


# --------------------------------------------------------------------------------------------
# Run folder
# --------------------------------------------------------------------------------------------
class _RunWriter:
    """Appends each verdict to ``verdicts.jsonl`` as soon as its pair finishes (flushed), then
    rewrites the file in input order and writes ``summary.json`` atomically at the end."""

    def __init__(self, out: str | os.PathLike):
        self.dir = Path(out)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.path = self.dir / "verdicts.jsonl"
            self._handle = open(self.path, "w", encoding="utf-8")  # a re-run rebuilds it (from the cache)
        except OSError as error:
            raise PermissionError(
                error.errno,
                f"Cannot write the run folder {self.dir}: {error.strerror or error}. Choose a writable --out folder",
                str(self.dir),
            ) from None

    def write(self, verdict: dict) -> None:
        try:
            self._handle.write(json.dumps(verdict, ensure_ascii=False) + "\n")
            self._handle.flush()
        except OSError as error:
            raise OSError(error.errno, f"{error.strerror or error} (disk full?)", str(self.path)) from None

    def finish(self, verdicts: list[dict], summary: dict) -> None:
        self._handle.close()
        _atomic_write(self.path, "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in verdicts))
        _atomic_write(self.dir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        raise OSError(error.errno, f"{error.strerror or error} (disk full or read-only?)", str(path)) from None


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("rag-qa-arena")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "0+unknown"


# --------------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------------
class _Progress:
    def __init__(self, total: int, enabled: bool, description: str):
        self._progress = None
        if not enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]} · cached {task.fields[cached]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=False,
        )
        self._task = self._progress.add_task(description, total=total, failed=0, cached=0)
        self._progress.start()
        self.failed = 0
        self.cached = 0

    def advance(self, failed: bool, cached: bool) -> None:
        if self._progress is None:
            return
        self.failed += int(failed)
        self.cached += int(cached)
        self._progress.update(self._task, advance=1, failed=self.failed, cached=self.cached)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


# --------------------------------------------------------------------------------------------
# The judge
# --------------------------------------------------------------------------------------------
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
    limiter=None,
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
) -> dict:
    """Async form of :func:`judge_pairs` (same arguments, same result)."""
    if order not in ORDERS:
        raise ValueError(f"Unknown order policy {order!r}. Available: {', '.join(ORDERS)}")
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    ids, domains = _check_inputs(predictions, references, questions, ids, domains)
    skipped = _check_flags(generation_failed, len(predictions))
    stopper = IntervalStopper(target_width) if target_width is not None else None
    if sample is not None or stopper is not None:
        schedule = pair_schedule(ids, domains, sample, seed)
    else:
        schedule = list(range(len(ids)))
    backends = _make_backends(judge, base_url, api_key, backend_options, timeout)
    budgets = make_budgets(backends, max_input_tokens)
    judge_names = [b.spec for b in backends]
    if system is None:
        system = Path(out).resolve().name if out is not None else "system"
    cache = CompletionCache(cache_dir) if use_cache else None
    runner = Runner(cache, max_concurrency=max_concurrency, retry=retry, limiter=limiter)
    writer = _RunWriter(out) if out is not None else None
    n = len(predictions)
    show = progress if progress is not None else (n >= 20 and sys.stderr.isatty())
    bar = _Progress(len(schedule), bool(show), f"judging {system} vs {opponent}")
    verdicts: list[dict | None] = [None] * n
    started = time.monotonic()

    async def judge_one(i: int) -> None:
        if skipped[i]:
            verdict = {"qid": ids[i], "domain": domains[i], "system_a": system, "system_b": opponent,
                       "outcome": None, "failed": True, "flipped": None, "no_answer_a": False, "judgments": [],
                       "error": "the prediction file marks this answer as failed to generate: not judged"}
            verdicts[i] = verdict
            if writer is not None:
                writer.write(verdict)
            bar.advance(True, False)
            return
        question = questions[i]
        a_text = clean_response(predictions[i])
        b_text = clean_response(references[i])
        neutralized = any(neutralize_delimiters(text, JUDGE_TAGS)[1] for text in (question, a_text, b_text))
        positions = answer_positions(order, ids[i], question, seed)
        requests = [(p, judge_request(question, a_text, b_text, p, data_dir=data_dir)) for p in positions]
        jobs = []
        for backend in backends:
            for position, request in requests:
                refusal = budgets[backend.spec].refusal(request) if budgets else None
                job = (refused_result(runner, refusal) if refusal else
                       runner.run_one(backend, request, validate=_valid_reply, reask=1))
                jobs.append((backend, position, job))
        results = await asyncio.gather(*(job[2] for job in jobs))
        judgments = []
        for (backend, position, _), result in zip(jobs, results):
            rating = parse_rating(result.text) if result.valid else None
            judgments.append(
                {
                    "judge": backend.spec,
                    "a_position": position,
                    "rating": rating,
                    "outcome": _outcome(rating, position),
                    "raw": result.text if result.text is not None else "",
                    "attempts": result.attempts,
                    "cached": result.cached,
                    **({"error": result.error} if result.error and rating is None else {}),
                }
            )
        per_judge, flips = [], []
        for backend in backends:
            mine = [j for j in judgments if j["judge"] == backend.spec]
            outs = [j["outcome"] for j in mine]
            if any(o is None for o in outs):
                per_judge.append(None)
            elif len(set(outs)) == 1:
                per_judge.append(outs[0])
                flips.append(False)
            else:
                per_judge.append("tie")
                flips.append(True)
        outcome = majority_vote(per_judge)
        verdict = {
            "qid": ids[i],
            "domain": domains[i],
            "system_a": system,
            "system_b": opponent,
            "outcome": outcome,
            "failed": outcome is None,
            "flipped": (any(flips) if outcome is not None else None) if order == "both" else None,
            "no_answer_a": is_no_answer(a_text),
            "judgments": judgments,
            **({"neutralized": True} if neutralized else {}),
        }
        verdicts[i] = verdict
        if writer is not None:
            writer.write(verdict)
        bar.advance(outcome is None, all(j["cached"] for j in judgments))
        if stopper is not None:
            stopper.update(outcome)

    try:
        if stopper is None:
            await gather_or_cancel([asyncio.ensure_future(judge_one(i)) for i in schedule])
        else:  # start pairs in the stratified order until the interval is narrow enough
            await run_until_stopped(judge_one, schedule, lambda: stopper.should_stop, runner.max_concurrency)
    finally:
        bar.close()
        if writer is not None:
            writer.close()
        for backend in backends:
            await backend.aclose()
        if cache is not None:
            cache.close()

    done: list[dict] = [v for v in verdicts if v is not None]  # input order; unjudged pairs left out
    summary = _summarize(done, judge_names, order=order, seed=seed, n_boot=n_boot)
    if sample is not None or stopper is not None:
        summary["n_planned"] = len(schedule)
        if sample is not None:
            summary["sample"] = sample
    if stopper is not None:
        summary.update(stopped_early=stopper.should_stop, interval_width=stopper.width, target_width=target_width,
                       win_tie_rate_wilson=list(stopper.interval))
    summary = {
        "system": system,
        "opponent": opponent,
        "judges": judge_names,
        "order": order,
        "seed": seed,
        **summary,
        **runner.counters(),
        "elapsed_s": round(time.monotonic() - started, 3),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "package_version": _package_version(),
    }
    if writer is not None:
        writer.finish(done, summary)
    return {**summary, "verdicts": done}


def _summarize(verdicts: list[dict], judge_names: list[str], *, order: str, seed: int, n_boot: int) -> dict:
    outcomes = [v["outcome"] for v in verdicts]
    domains = [v["domain"] for v in verdicts]
    has_domains = bool(verdicts) and all(d is not None for d in domains)
    no_answer = [v["no_answer_a"] for v in verdicts]
    summary = summarize(outcomes, domains if has_domains else None, no_answer, n_boot=n_boot, seed=seed)
    if order == "both":
        summary["position_flip_rate"] = _flip_rate(verdicts)
        for domain, part in summary.get("per_domain", {}).items():
            part["position_flip_rate"] = _flip_rate([v for v in verdicts if v["domain"] == domain])
    if len(judge_names) > 1:
        summary["per_judge"] = {}
        for name in judge_names:
            own = []
            for v in verdicts:
                outs = [j["outcome"] for j in v["judgments"] if j["judge"] == name]
                if any(o is None for o in outs) or not outs:
                    own.append(None)
                else:
                    own.append(outs[0] if len(set(outs)) == 1 else "tie")
            summary["per_judge"][name] = summarize(own, None, no_answer, n_boot=n_boot, seed=seed)
    return summary


def _flip_rate(verdicts: list[dict]) -> float:
    judged = [v for v in verdicts if v["outcome"] is not None]
    return sum(bool(v["flipped"]) for v in judged) / len(judged) if judged else float("nan")


def judge_pairs(
    predictions: Sequence[str],
    references: Sequence[str],
    questions: Sequence[str],
    **kwargs,
) -> dict:
    """Judge each prediction against its reference answer; return win rates and verdicts.

    Arguments (keyword): ``ids`` (default "0".."n-1"), ``domains``, ``judge`` (a
    ``"<backend>:<model>"`` spec, a :class:`~metric_arena.Backend`, or a list of them to vote),
    ``base_url``/``api_key`` (openai backend; default ``$OPENAI_BASE_URL``/``$OPENAI_API_KEY``),
    ``order`` ("paper", "random", "both"), ``seed``, ``max_concurrency``, ``cache_dir``
    (default ``$RAG_QA_ARENA_CACHE`` or ``~/.cache/rag_qa_arena``), ``out`` (a run folder: writes
    ``verdicts.jsonl`` as pairs finish and ``summary.json`` at the end), ``system``/``opponent``
    (names recorded in verdicts), ``progress``, ``limiter`` (an object with
    ``async acquire(n_tokens)``), ``retry`` (:class:`~metric_arena._runner.RetryPolicy`),
    ``n_boot``, ``data_dir`` (pinned benchmark files), ``backend_options`` (passed to
    :func:`~metric_arena.make_backend`), ``timeout`` (per request, openai judges), ``use_cache``,
    ``sample`` (judge a seeded, domain-stratified sub-sample of that many pairs),
    ``target_width`` (stop once the win+tie rate's 95% interval is that narrow, e.g. 0.04),
    ``generation_failed`` (one bool per pair: True fails the pair without judging it),
    ``max_input_tokens`` (refuse, and fail, judgments whose prompt is longer).

    Returns the fields of :func:`metric_arena.summarize` (``n``, ``n_failed``, ``win_rate``,
    ``tie_rate``, ``loss_rate``, ``win_tie_rate``, their ``_ci``, ``no_answer_rate``,
    ``per_domain``), ``position_flip_rate`` (order "both"), ``per_judge`` (several judges),
    error counters, and ``verdicts`` (one dict per pair, in input order).

    >>> res = judge_pairs(["Paris."], ["Paris is the capital of France."], ["Capital of France?"],
    ...                   judge="openai:gpt-4o-mini")  # doctest: +SKIP
    >>> res["win_rate"], res["verdicts"][0]["judgments"][0]["raw"]  # doctest: +SKIP
    """
    return run_sync(ajudge_pairs(predictions, references, questions, **kwargs))
