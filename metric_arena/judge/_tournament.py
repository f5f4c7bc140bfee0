"""A tournament over many systems, as the paper's Elo study does (Table 5).

1. Against LFRQA: every system is judged against LFRQA on all its questions (``RUNS/<name>``).
2. Complete pairs: every unordered pair of systems is judged on one shared, seeded, domain-stratified
   sample of the questions all systems answered (``RUNS/<a>__vs__<b>``).

Every match is an ordinary judge run (:func:`~metric_arena.judge.ajudge_pairs`) through one cache and
one rate limiter, so the tournament is resumable after a kill (finished matches are reused, the
interrupted one continues from the cache) and ``report RUNS/*`` links all battles by system name.

With ``adaptive=True`` the pairs are judged in rounds instead: each round fits Bradley–Terry ratings
on every battle so far and spends ``round_size`` judgments on the neighbouring systems whose 95%
intervals still overlap (more where they overlap more), until every neighbouring pair is separated,
``max_judgments`` is spent, or no question is left.

>>> result = tournament(["runs/a.jsonl", "runs/b.jsonl", "runs/c.jsonl"], out="runs/arena",
...                     judge="openai:gpt-4o", sample=700)  # doctest: +SKIP
>>> result["matches"][0]["system"], result["stopped"]  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lfrqa.checks import check_int
from lfrqa.errors import RagQaArenaError
from lfrqa.files import atomic_write, dumps_json, iter_jsonl
from metric_arena.judge._config import JudgeConfig, JudgeSpec, judge_config
from metric_arena.judge._cost import judge_dry_run
from metric_arena.judge._inputs import lfrqa_rows, read_predictions
from metric_arena.judge._plan import DEFAULT_JUDGE
from metric_arena.judge._run import ajudge_pairs
from metric_arena.llm import CostEstimate, Progress, RunConfig, synchronous
from metric_arena.stats import BattleCounts, bootstrap_bradley_terry, stratified_sample

__all__ = ["Tournament", "atournament", "load_tournament", "tournament", "tournament_dry_run"]

REFERENCE = "LFRQA"
TOURNAMENT_FILE = "tournament.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class Tournament:
    """The systems' answers by qid, LFRQA's rows, and the shared order of the questions all systems answered."""

    systems: dict[str, dict[str, dict]]  # name -> qid -> {"answer", "failed"?}
    lfrqa: dict[str, dict]  # qid -> {"question", "answer", "domain"}
    order: list[str]  # every common question, in one seeded, domain-stratified order

    def pairs(self) -> list[tuple[str, str]]:
        return list(itertools.combinations(list(self.systems), 2))

    def sample(self, n: int, seed: int) -> list[str]:
        """The shared sample of ``n`` questions for every pair (domain-stratified, seeded)."""
        domains = [self.lfrqa[q]["domain"] for q in self.order]
        return stratified_sample(self.order, domains, n, seed)


def load_tournament(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike],
    *,
    seed: int = 0,
    data_dir: str | os.PathLike | None = None,
) -> Tournament:
    """The systems of a tournament: prediction files named by their stems (or by the mapping's keys)."""
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
    systems = {name: read_predictions(path) for name, path in named.items()}
    every = list(dict.fromkeys(q for answers in systems.values() for q in answers))
    rows = lfrqa_rows(every, data_dir)
    common = [q for q in every if all(q in s and not s[q].get("failed") for s in systems.values())]
    if not common:
        raise RagQaArenaError("No question is answered by every system: the complete pairs need shared questions")
    order = stratified_sample(common, [rows[q]["domain"] for q in common], len(common), seed)
    return Tournament(systems, rows, order)


def _match_inputs(plan: Tournament, a: str, b: str, qids: list[str]) -> dict:
    mine = plan.systems[a]
    other = None if b == REFERENCE else plan.systems[b]
    return {
        "predictions": [mine[q]["answer"] for q in qids],
        "references": [plan.lfrqa[q]["answer"] if other is None else other[q]["answer"] for q in qids],
        "questions": [plan.lfrqa[q]["question"] for q in qids],
        "ids": qids,
        "domains": [plan.lfrqa[q]["domain"] for q in qids],
        "generation_failed": [bool(mine[q].get("failed")) or bool(other and other[q].get("failed")) for q in qids],
    }


def _folder(out: Path, a: str, b: str) -> Path:
    return out / (a if b == REFERENCE else f"{a}__vs__{b}")


def _finished(folder: Path, a: str, b: str, qids: list[str], judges: list[str], order: str, seed: int) -> dict | None:
    """The summary of a finished run folder holding exactly this match, or None."""
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        judged = [row["qid"] for _, row in iter_jsonl(folder / "verdicts.jsonl")]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = (summary.get("system"), summary.get("opponent"), summary.get("judges"), summary.get("order"),
            summary.get("seed")) == (a, b, judges, order, seed)
    return summary if same and sorted(judged) == sorted(qids) else None


async def _play(plan: Tournament, a: str, b: str, qids: list[str], *, out: Path, judge: JudgeConfig,
                settings: dict) -> dict:
    """One match (``a`` against ``b`` on ``qids``): reused when its folder already holds it."""
    folder = _folder(out, a, b)
    found = _finished(folder, a, b, qids, judge.specs, judge.order, judge.seed)
    if found is not None:
        return {**found, "reused": True, "n_sent": 0, "n_cached": 0}  # nothing asked by this call
    result = await ajudge_pairs(**_match_inputs(plan, a, b, qids), judge=judge, out=folder, system=a, opponent=b,
                                progress=False, **settings)
    result.pop("verdicts")
    return {**result, "reused": False}


def _match_row(result: dict) -> dict:
    keys = ("system", "opponent", "n", "n_failed", "win_rate", "win_tie_rate", "n_sent", "n_cached", "reused")
    return {key: result.get(key) for key in keys}


def _battles(out: Path, matches: list[dict]) -> list[tuple[str, str, str]]:
    """Every judged battle so far, read back from the match folders."""
    battles = []
    for match in matches:
        folder = _folder(out, match["system"], match["opponent"])
        for _, row in iter_jsonl(folder / "verdicts.jsonl"):
            if row.get("outcome") is not None:
                battles.append((row["system_a"], row["system_b"], row["outcome"]))
    return battles


def _overlaps(battles, players: list[str], *, seed: int, n_boot: int) -> tuple[list[str], list[tuple[str, str, float]]]:
    """Players by rating, and each neighbouring pair whose intervals overlap, with the overlap's width."""
    counts = BattleCounts.from_battles(battles, players)
    ratings = bootstrap_bradley_terry(counts, anchor=REFERENCE, n_boot=n_boot, seed=seed)
    ranked = sorted(players, key=lambda p: -ratings[p]["rating"])
    overlapping = []
    for upper, lower in zip(ranked, ranked[1:]):
        width = ratings[lower]["rating_ci"][1] - ratings[upper]["rating_ci"][0]
        if width >= 0:
            overlapping.append((upper, lower, width))
    return ranked, overlapping


def _allocate(overlapping, ranked: list[str], taken: dict[tuple[str, str], int], n_max: int,
              round_size: int, budget_left: float) -> dict[tuple[str, str], int]:
    """New question counts per pair for the next round: ``round_size`` judgments shared by overlap width.

    A neighbouring pair that holds LFRQA is tightened through the system's nearest other system."""
    systems = [p for p in ranked if p != REFERENCE]
    wanted: dict[tuple[str, str], float] = {}
    for upper, lower, width in overlapping:
        if REFERENCE in (upper, lower):
            system = lower if upper == REFERENCE else upper
            others = [s for s in systems if s != system]
            if not others:
                continue
            nearest = min(others, key=lambda s: abs(systems.index(s) - systems.index(system)))
            upper, lower = system, nearest
        pair = (upper, lower) if (upper, lower) in taken else (lower, upper)
        if pair in taken and taken[pair] < n_max:
            wanted[pair] = wanted.get(pair, 0.0) + width + 1.0
    spend = min(round_size, budget_left)
    total = sum(wanted.values())
    grown = {}
    for pair, weight in wanted.items():
        extra = max(1, int(round(spend * weight / total)))
        grown[pair] = min(n_max, taken[pair] + extra)
    return grown


async def _adaptive(plan: Tournament, matches: list[dict], *, out: Path, judge: JudgeConfig, settings: dict,
                    round_size: int, max_judgments: int | None, n_boot: int, bar: Progress) -> dict:
    players = [REFERENCE, *plan.systems]
    taken = {pair: 0 for pair in plan.pairs()}
    spent, rounds, pair_results = 0, 0, {}
    against_reference = _battles(out, matches)  # read once: only the pairs' folders change between rounds
    while True:
        ranked, overlapping = _overlaps(against_reference + _battles(out, list(pair_results.values())), players,
                                        seed=judge.seed, n_boot=n_boot)
        if not overlapping:
            reason = "separated"
            break
        left = float("inf") if max_judgments is None else max_judgments - spent
        if left <= 0:
            reason = "budget"
            break
        grown = _allocate(overlapping, ranked, taken, len(plan.order), round_size, left)
        if not grown:
            reason = "questions exhausted"
            break
        for (a, b), n in grown.items():
            spent += n - taken[(a, b)]
            taken[(a, b)] = n
            pair_results[(a, b)] = _match_row(await _play(plan, a, b, plan.order[:n], out=out, judge=judge,
                                                          settings=settings))
        rounds += 1
        bar.advance(False, False)
    return {"stopped": reason, "rounds": rounds, "judgments": spent, "pairs": list(pair_results.values()),
            "questions_per_pair": {f"{a}__vs__{b}": n for (a, b), n in taken.items()}}


async def atournament(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike],
    *,
    out: str | os.PathLike,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    sample: int = 700,
    adaptive: bool = False,
    max_judgments: int | None = None,
    round_size: int = 100,
    n_boot: int = 1000,
    data_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> dict:
    """Async form of :func:`tournament` (same arguments, same result)."""
    config = judge_config(judge)
    check_int("sample", sample, minimum=1)
    check_int("round_size", round_size, minimum=1)
    if max_judgments is not None:
        check_int("max_judgments (judged pairs)", max_judgments, minimum=1)
    plan = load_tournament(predictions, seed=config.seed, data_dir=data_dir)
    out = Path(out)
    play = dict(out=out, judge=config, settings=dict(run=run, n_boot=n_boot, data_dir=data_dir))
    steps = len(plan.systems) + (0 if adaptive else len(plan.pairs()))
    bar = Progress(steps, progress, f"tournament of {len(plan.systems)} systems")
    try:
        matches = []
        for name, answers in plan.systems.items():  # every system against LFRQA, on all its questions
            matches.append(_match_row(await _play(plan, name, REFERENCE, list(answers), **play)))
            bar.advance(False, matches[-1]["reused"])
        result = {"systems": list(plan.systems), "n_common": len(plan.order), "against_reference": matches}
        if adaptive:
            result.update(await _adaptive(plan, matches, round_size=round_size, max_judgments=max_judgments,
                                          n_boot=min(n_boot, 200), bar=bar, **play))
        else:
            shared = plan.sample(sample, config.seed)
            pairs = []
            for a, b in plan.pairs():
                pairs.append(_match_row(await _play(plan, a, b, shared, **play)))
                bar.advance(False, pairs[-1]["reused"])
            result.update(stopped="complete", sample=len(shared), pairs=pairs,
                          judgments=sum(p["n"] for p in pairs))
    finally:
        bar.close()
    result["judgments"] += sum(m["n"] for m in matches)
    atomic_write(out / TOURNAMENT_FILE, dumps_json({**result, "judges": config.specs, "order": config.order,
                                                    "seed": config.seed, "parse": config.parse}))
    return result


TOURNAMENT_DOC = """Judge every system against LFRQA and every pair of systems against each other; one run folder per match.

    ``predictions``: prediction files (systems named by the file stems) or ``{name: file}``. ``judge``: a
    :class:`~metric_arena.JudgeConfig` (or a spec / list of specs); its ``seed`` also draws the sample.
    ``run``: a :class:`~metric_arena.RunConfig`; one limiter and one cache serve every match. ``sample``:
    the questions every pair is judged on (stratified by domain, drawn from the questions every system
    answered). ``adaptive``: judge pairs in rounds of ``round_size`` where the ratings' intervals still
    overlap, until separated or ``max_judgments`` are spent.

    Returns ``against_reference`` and ``pairs`` (one row per match: system, opponent, n, n_failed,
    win_rate, win_tie_rate, n_sent, n_cached, reused), ``stopped`` ("complete", or with ``adaptive``
    "separated", "budget" or "questions exhausted"), ``judgments`` (pairs judged in all), and with
    ``adaptive`` ``rounds`` and ``questions_per_pair``. ``RUNS/tournament.json`` records the same with
    the judges, order, seed and parse.
    """

tournament = synchronous(atournament, name="tournament", doc=TOURNAMENT_DOC)


def tournament_dry_run(
    predictions: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike],
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    sample: int = 700,
    data_dir: str | os.PathLike | None = None,
) -> list[CostEstimate]:
    """What the (exhaustive) tournament would send, per judge, summed over every match; sends nothing."""
    config = judge_config(judge)
    plan = load_tournament(predictions, seed=config.seed, data_dir=data_dir)
    shared = plan.sample(sample, config.seed)
    matches = [(name, REFERENCE, list(answers)) for name, answers in plan.systems.items()]
    matches += [(a, b, shared) for a, b in plan.pairs()]
    totals: dict[str, CostEstimate] = {}
    for a, b, qids in matches:
        inputs = _match_inputs(plan, a, b, qids)
        keep = [i for i, failed in enumerate(inputs.pop("generation_failed")) if not failed]  # never sent
        inputs = {key: [values[i] for i in keep] for key, values in inputs.items()}
        for estimate in judge_dry_run(**inputs, judge=config, run=run, data_dir=data_dir):
            totals[estimate.judge] = estimate if estimate.judge not in totals else _added(totals[estimate.judge],
                                                                                          estimate)
    return list(totals.values())


def _added(a: CostEstimate, b: CostEstimate) -> CostEstimate:
    def add(x, y):
        return None if x is None or y is None else x + y

    return CostEstimate(
        judge=a.judge, model=a.model, n_requests=a.n_requests + b.n_requests, n_cached=a.n_cached + b.n_cached,
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens_estimate=a.output_tokens_estimate + b.output_tokens_estimate,
        output_tokens_max=a.output_tokens_max + b.output_tokens_max, exact_tokenizer=a.exact_tokenizer,
        input_price_per_m=a.input_price_per_m, output_price_per_m=a.output_price_per_m,
        cost_usd=add(a.cost_usd, b.cost_usd), cost_usd_max=add(a.cost_usd_max, b.cost_usd_max),
    )
