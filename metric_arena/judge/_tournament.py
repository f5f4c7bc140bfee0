"""A tournament over many systems, as the paper's Elo study does (Table 5).

1. Against LFRQA: every system is judged against LFRQA on all its questions (``RUNS/<name>``).
2. Complete pairs: every unordered pair of systems is judged on one shared, seeded, domain-stratified sample of the
   questions all systems answered (``RUNS/<a>__vs__<b>``). Several sample sizes are nested: one seeded stratified
   order of the shared questions, each sample a prefix of it; every pair is judged once, on the largest, and the
   smaller samples' verdicts are the first of those (``report`` then shows one Table 5 column per size).

Every match is an ordinary judge run (:func:`~metric_arena.judge.ajudge_pairs`) through one cache and one rate
limiter, and all of them feed one request pool (``Session.pool``): the matches run at once under the run's one
``max_concurrency``, and each adaptive round plays all its pairs together, so no slot idles while work remains
(verdict files are those of the matches run one after another). The tournament is resumable after a kill (finished
matches are reused, the interrupted one continues from the cache; a match that still holds failed pairs asks them
again) and ``report RUNS/*`` links all battles by system name. A folder holds one design: see
:mod:`metric_arena.judge._tournament_folder`.

With ``adaptive=True`` the pairs are judged in rounds instead (:class:`~metric_arena.stats.SequentialRanking`): each
round ranks the systems by their Bradley–Terry ratings on every battle so far and spends ``round_size`` questions on
the neighbouring pairs whose anytime-valid confidence sequence of the win probability still holds 1/2, until every
neighbouring pair is separated, ``max_judgments`` pair judgments are spent (never more), or no question is left. The
chance of ever declaring a wrong order between any two systems is at most ``alpha``, however many rounds are looked
at.

>>> result = tournament(["runs/a.jsonl", "runs/b.jsonl", "runs/c.jsonl"], out="runs/arena",
...                     judge="openai:gpt-4o", sample=[700, 1400])  # doctest: +SKIP
>>> result["matches"][0]["system"], result["stopped"]  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from lfrqa.checks import check_int, grouped_keywords
from lfrqa.errors import RagQaArenaError
from metric_arena.judge._config import JudgeConfig, JudgeSpec, TournamentSchedule, judge_config
from metric_arena.judge._cost import judge_dry_run
from metric_arena.judge._inputs import (
    MAX_EXPORT_SYSTEMS,
    MAX_TOURNAMENT_SYSTEMS,
    JudgeInputs,
    References,
    check_system_count,
    lfrqa_references,
    read_predictions,
    spill_predictions,
)
from metric_arena.judge._plan import DEFAULT_JUDGE
from metric_arena.judge._run import ajudge_pairs, judge_intervals
from metric_arena.judge._tournament_folder import TournamentFolder, finished_match, folder_battles, match_folder_name
from metric_arena.llm import CostEstimate, Progress, RunConfig, Session, synchronous
from metric_arena.records import DEFAULT_SAMPLE, REFERENCE, REPLACING_FILE, RUN_OUTPUT_KEYWORDS, RunOutput, run_output
from metric_arena.stats import DEFAULT_ALPHA, BattleCounts, Intervals, SequentialRanking, stratified_sample

if TYPE_CHECKING:
    from metric_arena.llm._session import RequestPool

__all__ = ["Tournament", "atournament", "load_tournament", "tournament",
           "tournament_dry_run", "tournament_requests"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class Tournament:
    """The systems' answers by qid, LFRQA's rows, and the shared order of the questions all systems answered."""

    systems: dict[str, dict[str, dict]]  # name -> qid -> {"answer", "failed"?}
    lfrqa: dict[str, dict]  # qid -> {"question", "answer", "domain"}
    order: list[str]  # every common question, in one seeded, domain-stratified order

    def pairs(self) -> list[tuple[str, str]]:
        return list(itertools.combinations(list(self.systems), 2))

    @property
    def n_common(self) -> int:
        """How many questions every system answered (the most a pair can be judged on)."""
        return len(self.order)

    def sample(self, n: int, seed: int | None = None) -> list[str]:
        """The shared sample of ``n`` questions for every pair: the first ``n`` of the seeded stratified
        order, so that a smaller sample is always inside a larger one. The order's seed is the one
        :func:`load_tournament` was given; ``seed`` here never took effect and is deprecated."""
        if seed is not None:
            warnings.warn("Tournament.sample(n, seed=...) is deprecated and the seed was never used: the order's "
                          "seed is load_tournament(..., seed=); call sample(n)", DeprecationWarning, stacklevel=2)
        return self.order[:n]


def _sample_sizes(sample: int | Sequence[int]) -> list[int]:
    """``sample`` (an int or a list of ints) as sorted distinct sizes; errors name the bad value."""
    sizes = [sample] if isinstance(sample, int) and not isinstance(sample, bool) else sample
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise RagQaArenaError(f"sample={sample!r}: give the number of shared questions per pair, or a list of "
                              "them (e.g. [700, 1400]) for several Table 5 columns")
    for size in sizes:
        check_int("sample (shared questions per pair)", size, minimum=1)
    return sorted(set(sizes))


def load_tournament(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike],
    *,
    seed: int = 0,
    data_dir: str | os.PathLike | None = None,
    references: References | None = None,
    max_systems: int = MAX_TOURNAMENT_SYSTEMS,
    spill_to: str | os.PathLike | None = None,
) -> Tournament:
    """The systems of a tournament: prediction files named by their stems (or by the mapping's keys), with
    the benchmark's ``references`` (default: LFRQA's, read from ``data_dir``); more than ``max_systems`` are
    refused before any is read; with ``spill_to`` (a folder) the answers are kept in SQLite there, not in
    memory."""
    check_system_count(len(predictions), most=max_systems)
    named = dict(predictions) if isinstance(predictions, Mapping) else {Path(p).stem: p for p in predictions}
    if not isinstance(predictions, Mapping) and len(named) != len(predictions):
        stems = [Path(p).stem for p in predictions]
        twice = sorted({s for s in stems if stems.count(s) > 1})
        raise RagQaArenaError(f"Two prediction files are both named {twice[0]!r}: give each system a name with --name")
    if len(named) < 2:
        raise RagQaArenaError("A tournament needs at least two prediction files (one per system)")
    for name in named:
        if name == REFERENCE or not _NAME.fullmatch(name):
            raise RagQaArenaError(f"System name {name!r} cannot name a run folder (or is {REFERENCE!r}): use letters, "
                                  "digits and . _ + - (rename it with --name FILE=NAME)")
        if "__vs__" in name:
            raise RagQaArenaError(f"System name {name!r} holds '__vs__', which names the folder of a match between two "
                                  "systems: rename it with --name FILE=NAME (e.g. a name without '__vs__')")
    if spill_to is None:
        systems = {name: read_predictions(path) for name, path in named.items()}
    else:
        systems, _ = spill_predictions(named, spill_to)
    every = list(dict.fromkeys(q for answers in systems.values() for q in answers))
    rows = {q: dict(row) for q, row in (references or lfrqa_references(data_dir)).pick(every).items()}
    common = [q for q in every if all(q in s and not s[q].get("failed") for s in systems.values())]
    if not common:
        raise RagQaArenaError("No question is answered by every system: the complete pairs need shared questions")
    order = stratified_sample(common, [rows[q]["domain"] for q in common], len(common), seed)
    return Tournament(systems, rows, order)


def _match_inputs(plan: Tournament, a: str, b: str, qids: list[str]) -> JudgeInputs:
    mine = plan.systems[a]
    other = None if b == REFERENCE else plan.systems[b]
    return JudgeInputs(
        predictions=[mine[q]["answer"] for q in qids],
        references=[plan.lfrqa[q]["answer"] if other is None else other[q]["answer"] for q in qids],
        questions=[plan.lfrqa[q]["question"] for q in qids],
        ids=qids,
        domains=[plan.lfrqa[q]["domain"] for q in qids],
        generation_failed=[bool(mine[q].get("failed")) or bool(other and other[q].get("failed")) for q in qids],
        system=a, opponent=b,
    )


async def _play(plan: Tournament, a: str, b: str, qids: list[str], *, folder: TournamentFolder,
                judge: JudgeConfig, settings: dict) -> dict:
    """One match (``a`` against ``b`` on ``qids``): reused when its folder already holds it finished."""
    where = folder.root / match_folder_name(a, b)
    found = finished_match(where, a, b, qids, judge)
    old = folder.reusable(match_folder_name(a, b))
    if found is None and old is not None and finished_match(old, a, b, qids, judge) is not None:
        shutil.rmtree(where, ignore_errors=True)  # the folder being replaced holds this very match: copy it
        shutil.copytree(old, where, ignore=shutil.ignore_patterns(".lock", REPLACING_FILE))
        found = finished_match(where, a, b, qids, judge)
    if found is not None:
        return {**found, "reused": True, "n_sent": 0, "n_cached": 0}  # nothing asked by this call
    result = await ajudge_pairs(_match_inputs(plan, a, b, qids), judge=judge, out=where,
                                output=RunOutput(progress=False), **settings)
    result.pop("verdicts")
    return {**result, "reused": False}


def _match_row(result: dict) -> dict:
    keys = ("system", "opponent", "n", "n_failed", "win_rate", "win_tie_rate", "n_sent", "n_cached", "reused")
    return {key: result.get(key) for key in keys}


async def _adaptive(plan: Tournament, matches: list[dict], *, folder: TournamentFolder, judge: JudgeConfig,
                    settings: dict, alpha: float, round_size: int, max_judgments: int | None, bar: Progress,
                    pool: RequestPool) -> dict:
    rule = SequentialRanking(list(plan.systems), alpha=alpha, tuned_n=min(200, plan.n_common))
    taken = {pair: 0 for pair in plan.pairs()}
    spent, rounds, pair_results = 0, 0, {}
    against_reference = folder_battles(folder.root, matches)  # read once: only the pairs' folders change between rounds
    while True:
        battles = against_reference + folder_battles(folder.root, list(pair_results.values()))
        ranking, records = rule.look(BattleCounts.from_battles(battles, [REFERENCE, *plan.systems]), anchor=REFERENCE)
        left = math.inf if max_judgments is None else max_judgments - spent
        step = rule.plan(records, ranking, n_max=plan.n_common, round_size=round_size, budget_left=left, taken=taken)
        if step.stopped:
            break
        for (a, b), n in step.grown.items():
            spent += n - taken[(a, b)]
            taken[(a, b)] = n
        grown = list(step.grown.items())  # the round's pairs all at once, through the one request pool
        rows = await pool.gather(_play(plan, a, b, plan.order[:n], folder=folder, judge=judge, settings=settings)
                                 for (a, b), n in grown)
        pair_results.update({pair: _match_row(row) for (pair, _), row in zip(grown, rows)})
        rounds += 1
        bar.advance(False, False)
    neighbours = [{**{k: v for k, v in row.items() if k != "pair"}} for row in step.neighbours]
    return {"stopped": step.stopped, "alpha": alpha, "max_judgments": max_judgments, "round_size": round_size,
            "rounds": rounds, "pair_judgments": spent, "ranking": step.ranking, "neighbours": neighbours,
            "pairs": list(pair_results.values()),
            "questions_per_pair": {f"{a}__vs__{b}": n for (a, b), n in taken.items()}}


def _design(plan: Tournament, config: JudgeConfig, *, sizes: list[int], adaptive: bool, alpha: float,
            max_judgments: int | None, round_size: int) -> dict:
    design = {"systems": list(plan.systems), "judges": config.specs, "order": config.order, "seed": config.seed,
              "parse": config.parse, "max_input_tokens": config.max_input_tokens,
              "schedule": "adaptive" if adaptive else "complete"}
    if adaptive:
        return {**design, "alpha": alpha, "max_judgments": max_judgments, "round_size": round_size}
    return {**design, "samples": sizes}


def _check_settings(*, alpha: float, round_size: int, max_judgments: int | None, adaptive: bool) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise RagQaArenaError(f"alpha={alpha!r} must be between 0 and 1: the family-wise error level of the "
                              "adaptive stopping rule (e.g. 0.05)")
    check_int("round_size", round_size, minimum=1)
    if max_judgments is not None:
        check_int("max_judgments (judged pairs)", max_judgments, minimum=1)
        if not adaptive:
            raise RagQaArenaError(f"max_judgments={max_judgments!r} is the budget of the adaptive schedule: pass "
                                  "adaptive=True (--adaptive), or drop it")


@grouped_keywords("output", RunOutput, RUN_OUTPUT_KEYWORDS)
@grouped_keywords("intervals", Intervals, ["n_boot"])
@grouped_keywords("schedule", TournamentSchedule, ["sample", "adaptive", "alpha", "max_judgments", "round_size"])
async def atournament(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike],
    *,
    out: str | os.PathLike,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    schedule: TournamentSchedule | None = None,
    intervals: Intervals | None = None,
    data_dir: str | os.PathLike | None = None,
    output: RunOutput | None = None,
) -> dict:
    """Async form of :func:`tournament` (same arguments, same result)."""
    config = judge_config(judge)
    output = run_output(output)
    schedule = schedule if schedule is not None else TournamentSchedule()
    intervals = judge_intervals(intervals, config)
    sample, adaptive, alpha = schedule.sample, schedule.adaptive, schedule.alpha
    max_judgments, round_size = schedule.max_judgments, schedule.round_size
    requested = _sample_sizes(sample)
    _check_settings(alpha=alpha, round_size=round_size, max_judgments=max_judgments, adaptive=adaptive)
    plan = load_tournament(predictions, seed=config.seed, data_dir=data_dir)
    sizes = sorted({min(n, plan.n_common) for n in requested})
    names = [match_folder_name(name, REFERENCE) for name in plan.systems] + [match_folder_name(a, b) for a, b in plan.pairs()]
    folder = TournamentFolder(out, _design(plan, config, sizes=requested, adaptive=adaptive, alpha=alpha,
                                           max_judgments=max_judgments, round_size=round_size),
                              names, overwrite=output.overwrite)
    folder.start()
    play = dict(folder=folder, judge=config, settings=dict(run=run, intervals=intervals, data_dir=data_dir))
    steps = len(plan.systems) + (0 if adaptive else len(plan.pairs()))
    bar = Progress(steps, bool(output.progress), f"tournament of {len(plan.systems)} systems")
    # Every match feeds one request pool: matches run at once and share the run's concurrency limit (and
    # its one limiter), so no slot idles while any match has work left.
    pool = Session.pool(max_concurrency=(run or RunConfig()).max_concurrency)

    async def played(a: str, b: str, qids: list[str]) -> dict:
        row = _match_row(await _play(plan, a, b, qids, **play))
        bar.advance(False, row["reused"])
        return row

    try:
        with pool:
            # every system against LFRQA on all its questions; without adaptive, every pair on the sample too
            shared = [] if adaptive else plan.sample(sizes[-1])  # the largest; smaller ones are its prefixes
            games = [(name, REFERENCE, list(answers)) for name, answers in plan.systems.items()]
            games += [] if adaptive else [(a, b, shared) for a, b in plan.pairs()]
            rows = await pool.gather(played(*game) for game in games)
            matches, pairs = rows[:len(plan.systems)], rows[len(plan.systems):]
            result = {"systems": list(plan.systems), "n_common": plan.n_common, "against_reference": matches}
            if adaptive:
                result.update(await _adaptive(plan, matches, alpha=alpha, round_size=round_size,
                                              max_judgments=max_judgments, bar=bar, pool=pool, **play))
        if not adaptive:
            result.update(stopped="complete", sample=len(shared), samples=sizes, samples_requested=requested,
                          pairs=pairs, pair_judgments=sum(p["n"] for p in pairs), sample_qids=shared)
    finally:
        bar.close()
    result["judgments"] = result["pair_judgments"] + sum(m["n"] for m in matches)
    folder.finish({**result, "judges": config.specs, "order": config.order, "seed": config.seed,
                   "parse": config.parse})
    result.pop("sample_qids", None)
    return result


TOURNAMENT_DOC = """Judge every system against LFRQA and every pair of systems against each other; one run folder per match.

    ``predictions``: prediction files (systems named by the file stems) or ``{name: file}``. ``judge``: a
    :class:`~metric_arena.JudgeConfig` (or a spec / list of specs); its ``seed`` also draws the sample.
    ``run``: a :class:`~metric_arena.RunConfig`; one limiter and one cache serve every match. ``sample``:
    the questions every pair is judged on (stratified by domain, drawn from the questions every system
    answered), or a list of sizes (e.g. ``[700, 1400]``): nested samples, each pair judged once on the
    largest, one Table 5 column per size in ``report``. ``adaptive``: judge pairs in rounds of
    ``round_size`` questions on the neighbouring pairs not yet separated, until separated (family-wise
    error level ``alpha`` under repeated looks), ``max_judgments`` pair judgments are spent (a hard
    budget) or no question is left. Those five are ``schedule=TournamentSchedule(...)``; ``intervals``
    (:class:`~metric_arena.stats.Intervals`) sets the matches' bootstrap resamples and confidence (their
    seed is the judge's). Loose ``sample=``,
    ``adaptive=``, ``alpha=``, ``max_judgments=``, ``round_size=`` and ``n_boot=`` work for one release,
    with a ``DeprecationWarning``. ``out``: holds one design (systems, samples, judges, order, seed,
    parse, adaptive settings); another is refused unless ``output=RunOutput(overwrite=True)``, which
    replaces the folder's tournament only once the new one is complete (``RunOutput(progress=True)``: a
    progress bar; loose ``overwrite=``/``progress=`` work for one release, with a ``DeprecationWarning``).
    A re-run reuses finished matches and asks again the pairs that failed at the judge.

    Returns ``against_reference`` and ``pairs`` (one row per match: system, opponent, n, n_failed,
    win_rate, win_tie_rate, n_sent, n_cached, reused), ``stopped`` ("complete", or with ``adaptive``
    "separated", "budget" or "questions exhausted"), ``n_common`` (the questions every system answered),
    ``pair_judgments`` (system-against-system pairs judged) and ``judgments`` (with those against
    LFRQA); without ``adaptive`` ``samples`` (the sizes, capped at ``n_common``); with it ``alpha``,
    ``rounds``, ``ranking``, ``neighbours`` (each neighbouring pair's confidence sequence and whether it
    is separated) and ``questions_per_pair``. ``RUNS/tournament.json`` records the same with the design
    (and the shared questions in order, ``sample_qids``).
    """

tournament = synchronous(atournament, name="tournament", doc=TOURNAMENT_DOC)


def _adaptive_pair_questions(plan: Tournament, max_judgments: int | None) -> list[tuple[str, str, list[str]]]:
    """The most an adaptive tournament can ask of the pairs: every shared question of every pair, or
    ``max_judgments`` questions shared round robin (each pair a prefix of the shared order)."""
    pairs = plan.pairs()
    budget = len(pairs) * plan.n_common if max_judgments is None else min(max_judgments, len(pairs) * plan.n_common)
    counts = [budget // len(pairs) + (k < budget % len(pairs)) for k in range(len(pairs))]
    return [(a, b, plan.order[:n]) for (a, b), n in zip(pairs, counts) if n]


def tournament_requests(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike] | Tournament,
    *,
    seed: int = 0,
    sample: int | Sequence[int] = DEFAULT_SAMPLE,
    data_dir: str | os.PathLike | None = None,
) -> Iterator[JudgeInputs]:
    """The inputs of every match of the complete schedule (each system against LFRQA on all its questions,
    every pair on the largest sample; up to :data:`MAX_EXPORT_SYSTEMS` systems), one :class:`JudgeInputs` per match as
    :func:`export_judge_requests` takes them, made one at a time (the answers in SQLite in a temporary folder);
    pairs whose answer failed to generate are left out (never sent). The files are read at once."""
    spill = None if isinstance(predictions, Tournament) else tempfile.mkdtemp(prefix="rag-qa-arena-answers-")
    try:  # the answers in SQLite under a temporary folder, removed once the last match is made (or on an error)
        plan = predictions if spill is None else load_tournament(predictions, seed=seed, data_dir=data_dir,
                                                                 max_systems=MAX_EXPORT_SYSTEMS, spill_to=spill)
        return _made(plan, plan.sample(min(max(_sample_sizes(sample)), plan.n_common)), spill)
    except BaseException:
        shutil.rmtree(spill or "", ignore_errors=True)
        raise


def _made(plan: Tournament, shared: list[str], spill: str | None) -> Iterator[JudgeInputs]:
    try:
        yield from (_match_inputs(plan, name, REFERENCE, list(plan.systems[name])) for name in plan.systems)
        yield from (_match_inputs(plan, a, b, shared) for a, b in plan.pairs())
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)


def tournament_dry_run(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike] | Tournament,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    sample: int | Sequence[int] = DEFAULT_SAMPLE,
    adaptive: bool = False,
    max_judgments: int | None = None,
    data_dir: str | os.PathLike | None = None,
) -> list[CostEstimate]:
    """What the tournament would send, per judge, summed over every match; sends nothing.

    The pairs are priced on the largest sample (capped at the questions every system answered); with
    ``adaptive``, at the most it can spend: ``max_judgments`` pair judgments, or every shared question
    of every pair without a budget. ``predictions`` may be a :func:`load_tournament` result."""
    config = judge_config(judge)
    sizes = _sample_sizes(sample)
    _check_settings(alpha=DEFAULT_ALPHA, round_size=1, max_judgments=max_judgments, adaptive=adaptive)
    plan = predictions if isinstance(predictions, Tournament) else load_tournament(predictions, seed=config.seed,
                                                                                     data_dir=data_dir)
    matches = [(name, REFERENCE, list(answers)) for name, answers in plan.systems.items()]
    if adaptive:
        matches += _adaptive_pair_questions(plan, max_judgments)
    else:
        shared = plan.sample(sizes[-1])  # one list for every pair
        matches += [(a, b, shared) for a, b in plan.pairs()]
    totals: dict[str, CostEstimate] = {}
    for a, b, qids in matches:
        inputs = _match_inputs(plan, a, b, qids).without_failed()  # never sent
        for estimate in judge_dry_run(inputs, judge=config, run=run, data_dir=data_dir):
            totals[estimate.judge] = estimate if estimate.judge not in totals else _added(totals[estimate.judge],
                                                                                          estimate)
    return list(totals.values())


_KEPT = {"judge", "model", "input_price_per_m", "output_price_per_m", "cached_input_price_per_m",
         "batch_cached_input_price_per_m"}


def _added(a: CostEstimate, b: CostEstimate) -> CostEstimate:
    """Two estimates of the same judge as one: counts and costs summed (None when either is unknown), the
    prices kept, the fixed prefix the larger of the two (it is per request, not summed)."""
    values = {}
    for field in fields(CostEstimate):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.name in _KEPT:
            values[field.name] = x if x is not None else y
        elif field.name == "exact_tokenizer":
            values[field.name] = x and y
        elif field.name in ("prefix_tokens", "cached_prefix_tokens"):
            values[field.name] = max(x, y)
        else:
            values[field.name] = None if x is None or y is None else x + y
    return CostEstimate(**values)
