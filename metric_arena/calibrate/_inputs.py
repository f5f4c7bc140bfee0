"""What the verdicts do not hold: each answer's length (prediction files + LFRQA) and each judge's price
(the dry-run token count of the run's own requests times the known list prices)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial

from lfrqa.errors import RagQaArenaError
from metric_arena.judge import JudgeConfig, JudgeInputs, judge_dry_run, lfrqa_references, prepare_judge_inputs, read_predictions
from metric_arena.llm import RunConfig
from metric_arena.prompts import clean_response
from metric_arena.report import REFERENCE, Run

__all__ = ["answer_words", "price_and_time"]

Key = tuple[str, str, str]


def _words(text: str) -> int:
    """Whitespace words of an answer as the judge saw it (after the reference's cleanup)."""
    return len(clean_response(text).split())


def _has_words(verdict: Mapping) -> bool:
    return all(isinstance(verdict.get(side), Mapping) and "words" in verdict[side] for side in ("style_a", "style_b"))


def _verdict_words(key: Key, verdict: Mapping) -> tuple[int, int]:
    """The words of ``key``'s system and opponent from a verdict row, whichever side the row holds them on."""
    a, b = int(verdict["style_a"]["words"]), int(verdict["style_b"]["words"])
    return (a, b) if verdict.get("system_a") == key[0] else (b, a)


def answer_words(keys: list[Key], verdicts: Mapping[Key, dict], predictions: Mapping[str, str | os.PathLike] | None,
                 data_dir: str | os.PathLike | None) -> dict[Key, tuple[int, int]] | None:
    """``{(system, opponent, qid): (words of system's answer, words of opponent's)}``; None when neither
    the verdicts (``style_a``/``style_b``, written since 0.2) nor prediction files give the lengths."""
    if keys and all(_has_words(verdicts[k]) for k in keys):
        return {k: _verdict_words(k, verdicts[k]) for k in keys}
    if not predictions:
        return None
    texts = {name: read_predictions(path) for name, path in predictions.items()}
    lfrqa_qids = sorted({q for s, o, q in keys for side in (s, o) if side == REFERENCE and side not in texts})
    if lfrqa_qids:
        texts[REFERENCE] = dict(lfrqa_references(data_dir).pick(lfrqa_qids))
    lengths = {}
    for system, opponent, qid in keys:
        pair = []
        for side in (system, opponent):
            if side not in texts:
                raise RagQaArenaError(f"No prediction file for system {side!r}: pass --predictions {side}=FILE "
                                      f"(given: {', '.join(sorted(predictions)) or 'none'})")
            row = texts[side].get(qid)
            if row is None:
                raise RagQaArenaError(f"The prediction file of {side!r} has no answer for qid {qid!r}: pass the file "
                                      "that was judged")
            pair.append(_words(row["answer"]))
        lengths[(system, opponent, qid)] = (pair[0], pair[1])
    return lengths


def price_and_time(runs: list[Run], predictions: Mapping[str, str | os.PathLike] | None,
                   data_dir: str | os.PathLike | None) -> dict:
    """Price per 1,000 judgments (dry-run tokens of the runs' requests × 2024 list prices, where the model's
    price is known and prediction files are given) and time per 1,000 judgments (the summaries' ``elapsed_s``)."""
    n_judgments = sum(len(v.get("judgments") or []) for run in runs for v in run.verdicts)
    timed = [run for run in runs if isinstance(run.summary.get("elapsed_s"), (int, float))]
    timed_judgments = sum(len(v.get("judgments") or []) for run in timed for v in run.verdicts)
    n_cached = sum(int(run.summary.get("n_cached") or 0) for run in timed)
    result: dict = {
        "n_judgments": n_judgments,
        "time_per_1000_s": (sum(run.summary["elapsed_s"] for run in timed) / timed_judgments * 1000
                            if timed and timed_judgments else None),
        "time_note": (f"from the elapsed_s of {len(timed)} of {len(runs)} run summaries; {n_cached:,} of their "
                      "requests were answered from the cache (wall time, concurrency as run)"),
        "price_per_1000_usd": None,
        "price_by_judge": {},
    }
    if not predictions:
        result["price_note"] = "no prediction files given (--predictions): the requests cannot be rebuilt to count tokens"
        return result
    costs: dict[str, list[float | None]] = {}
    requests: dict[str, int] = {}
    for run in runs:
        if run.system not in predictions or (run.opponent != REFERENCE and run.opponent not in predictions):
            result["price_note"] = f"no prediction file for {run.system!r} or {run.opponent!r}"
            return result
        inputs = prepare_judge_inputs(predictions[run.system], partial(lfrqa_references, data_dir),
                                      versus=None if run.opponent == REFERENCE else predictions[run.opponent],
                                      versus_name=None if run.opponent == REFERENCE else run.opponent)
        judged = {v["qid"] for v in run.verdicts}
        keep = [i for i, q in enumerate(inputs.qids) if q in judged and not inputs.failed[i]]
        pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
        for estimate in judge_dry_run(
            JudgeInputs(predictions=pick(inputs.predictions), references=pick(inputs.references),
                        questions=pick(inputs.questions), ids=pick(inputs.qids),
                        domains=None if inputs.domains is None else pick(inputs.domains)),
            judge=JudgeConfig(list(run.judges), order=str(run.summary.get("order") or "paper"),
                              seed=int(run.summary.get("seed") or 0)),
            run=RunConfig(use_cache=False), data_dir=data_dir,
        ):
            costs.setdefault(estimate.judge, []).append(estimate.cost_usd)
            requests[estimate.judge] = requests.get(estimate.judge, 0) + estimate.n_requests
    for judge, values in costs.items():
        known = None not in values and requests[judge]
        result["price_by_judge"][judge] = sum(values) / requests[judge] * 1000 if known else None
    prices = list(result["price_by_judge"].values())
    if prices and None not in prices:
        total = sum(p * requests[j] / 1000 for j, p in result["price_by_judge"].items())
        result["price_per_1000_usd"] = total / sum(requests.values()) * 1000
        result["price_note"] = ("expected cost: the runs' requests counted offline with the model's tokenizer, "
                                "replies at the paper's mean example length, OpenAI list prices of 2024")
    else:
        unknown = sorted(j for j, p in result["price_by_judge"].items() if p is None)
        result["price_note"] = f"no known price for {', '.join(unknown)}"
    return result
