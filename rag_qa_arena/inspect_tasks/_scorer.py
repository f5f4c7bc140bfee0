"""The arena judge as an Inspect scorer: the evaluated answer against LFRQA's, with the paper's
exact judge messages and order rule (:func:`metric_arena.judge.judge_request`,
:func:`metric_arena.judge.answer_positions`), judged by the package's one judge loop
(:func:`metric_arena.judge.judge_one`: its parse, validity check and re-asks) through the grader.

Each score's value is ``{"win": 1.0|0.0, "win_tie": 1.0|0.0}``; a failed judgment (no valid
rating after the re-ask of strict parsing) has NaN in both, ``answer="failed"`` and counts in
``n_failed``, never as a tie. The position of the evaluated answer (``a_position``, 1 or 2), the
judge, the parse and the raw reply are in the score's metadata.
"""

from __future__ import annotations

import math

from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import TaskState

from lfrqa.errors import RagQaArenaError
from metric_arena.judge import PARSES, answer_positions, judge_one, judge_request, outcome_of, parse_rating, plain_ask
from metric_arena.llm import OPENAI
from metric_arena.prompts import clean_response
from metric_arena.stats import summarize

__all__ = ["arena_judge", "grader_model", "judged", "per_domain", "win_rate", "win_tie_rate"]

#: The evaluated answer's position rule: the reference implementation's (question length parity).
ORDER = "paper"
_MESSAGES = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}


def _outcomes(scores: list[SampleScore]) -> list[str | None]:
    """Each sample's outcome from its score value (None: failed)."""
    out: list[str | None] = []
    for sample_score in scores:
        value = sample_score.score.value
        win = value.get("win") if isinstance(value, dict) else None
        tie = value.get("win_tie") if isinstance(value, dict) else None
        if win is None or tie is None or math.isnan(win) or math.isnan(tie):
            out.append(None)
        else:
            out.append("win" if win >= 0.5 else "tie" if tie >= 0.5 else "loss")
    return out


def _rate_and_stderr(outcomes: list[str | None], good: set[str], name: str) -> dict[str, float]:
    """The rate over judged pairs and its standard error (``std(ddof=1) / sqrt(n)``, as Inspect's ``stderr``)."""
    judged_outcomes = [o for o in outcomes if o is not None]
    n = len(judged_outcomes)
    if n == 0:
        return {name: float("nan"), f"{name}_stderr": float("nan")}
    rate = sum(o in good for o in judged_outcomes) / n
    stderr = math.sqrt(rate * (1.0 - rate) / (n - 1)) if n > 1 else 0.0
    return {name: rate, f"{name}_stderr": stderr}


@metric
def win_rate():
    """Share of judged pairs the evaluated answer won, with its standard error (failed pairs left out)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _rate_and_stderr(_outcomes(scores), {"win"}, "win_rate")

    return compute


@metric
def win_tie_rate():
    """Share of judged pairs won or tied, with its standard error (failed pairs left out)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return _rate_and_stderr(_outcomes(scores), {"win", "tie"}, "win_tie_rate")

    return compute


@metric
def judged():
    """``n_judged`` and ``n_failed``: pairs with a verdict, and pairs whose judgment failed."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        outcomes = _outcomes(scores)
        failed = sum(o is None for o in outcomes)
        return {"n_judged": float(len(outcomes) - failed), "n_failed": float(failed)}

    return compute


@metric
def per_domain():
    """``<domain>_win_rate`` and ``<domain>_win_tie_rate`` for each LFRQA domain in the samples
    (:func:`metric_arena.stats.summarize`, failed pairs left out)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        domains = [(s.sample_metadata or {}).get("domain") or "unknown" for s in scores]
        summary = summarize(_outcomes(scores), domains=domains, n_boot=0)
        out: dict[str, float] = {}
        for domain, stats in sorted((summary.get("per_domain") or {}).items()):
            out[f"{domain}_win_rate"] = stats["win_rate"]
            out[f"{domain}_win_tie_rate"] = stats["win_tie_rate"]
        return out

    return compute


def grader_model(judge: str | None) -> Model:
    """The judge: the ``grader`` model role when one is bound (``--model-role grader=…``), else the
    model named by ``judge``: an Inspect model name such as ``openai/gpt-4o``, or this package's
    ``openai:MODEL`` spec, which means OpenAI's chat-completions API (at ``$OPENAI_BASE_URL`` when
    set), as the package's own judge sends it."""
    if "grader" in model_roles():
        return get_model(role="grader")
    if not judge:
        raise RagQaArenaError(
            "No judge: bind one with --model-role grader=MODEL (e.g. grader=openai/gpt-4-0125-preview) "
            "or give -T judge=MODEL"
        )
    if ":" in judge and "/" not in judge.split(":", 1)[0]:
        kind, name = judge.split(":", 1)
        if kind != OPENAI:
            raise RagQaArenaError(f"Unknown judge {judge!r} for the Inspect task: give an Inspect model name "
                                  "(e.g. openai/gpt-4o) or openai:MODEL")
        return get_model(f"openai/{name}", responses_api=False)
    return get_model(judge)


@scorer(metrics=[win_rate(), win_tie_rate(), judged(), per_domain()])
def arena_judge(*, judge: str | None = None, parse: str = "strict", data_dir: str | None = None):
    """Judge each answer against the target (LFRQA's answer) as the paper's judge does.

    ``parse="strict"``: a reply counts only when its ``<rating>`` tags hold one of 0/1/2; otherwise it
    is asked once more, then the judgment fails. ``parse="reference"``: read as the reference
    scripts read replies (never re-asked; a reply without a tag is a tie unless it holds a 1 or 2).
    """
    if parse not in PARSES:
        raise RagQaArenaError(f"Unknown parse {parse!r}. Available: {', '.join(PARSES)} (-T parse=strict)")

    async def score(state: TaskState, target: Target) -> Score:
        grader = grader_model(judge)
        question = state.metadata.get("question") or state.input_text
        a_text = clean_response(state.output.completion)
        b_text = clean_response(target.text)
        [position] = answer_positions(ORDER, str(state.sample_id), question)
        request = judge_request(question, a_text, b_text, position, data_dir=data_dir)
        messages = [_MESSAGES[m["role"]](content=m["content"]) for m in request.messages]
        config = GenerateConfig(max_tokens=request.max_tokens, temperature=request.temperature, top_p=request.top_p)

        async def send(_request) -> str:
            return (await grader.generate(messages, config=config)).completion

        judgment = await judge_one(plain_ask(send), request, position, judge=str(grader), parse=parse)
        raw, rating, outcome, attempts = judgment["raw"], judgment["rating"], judgment["outcome"], judgment["attempts"]
        metadata = {"outcome": outcome, "failed": outcome is None, "a_position": position, "rating": rating,
                    "judge": str(grader), "parse": parse, "order": ORDER, "attempts": attempts}
        if parse == "reference":
            metadata["outcome_strict"] = outcome_of(parse_rating(raw), position)
        if outcome is None:
            metadata["error"] = f"no valid <rating> in the judge's reply after {attempts} attempt(s)"
            value = {"win": float("nan"), "win_tie": float("nan")}
        else:
            value = {"win": float(outcome == "win"), "win_tie": float(outcome in ("win", "tie"))}
        return Score(value=value, answer=outcome or "failed", explanation=raw, metadata=metadata)

    return score
