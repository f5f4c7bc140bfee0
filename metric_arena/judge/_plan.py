"""Which requests a judge run sends: order policy, the paper's request, checked inputs, the plan."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from dataclasses import dataclass

from lfrqa.errors import InvalidInputType, RagQaArenaError
from lfrqa.kernel import lone_surrogate
from metric_arena.llm import ChatRequest
from metric_arena.prompts import JUDGE_TAGS, clean_response, injection_signs, judge_messages, neutralize_delimiters
from metric_arena.records import REFERENCE, text_too_long
from metric_arena.stats import pair_schedule

__all__ = [
    "DEFAULT_JUDGE",
    "ORDERS",
    "REFERENCE_NAME",
    "PairInputs",
    "PairRequests",
    "answer_positions",
    "check_pair_inputs",
    "check_system_names",
    "judge_request",
    "pair_requests",
    "planned_requests",
]

DEFAULT_JUDGE = "openai:gpt-4-0125-preview"
ORDERS = ("paper", "random", "both")
#: Decoding parameters of the reference implementation.
JUDGE_MAX_TOKENS = 256
JUDGE_TEMPERATURE = 0.0
JUDGE_TOP_P = 1.0


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise RagQaArenaError(f"Unknown order policy {order!r}. Available: {', '.join(ORDERS)}")
    return order


def answer_positions(order: str, qid: str, question: str, seed: int = 0) -> list[int]:
    """Where the evaluated answer is shown (1 = Answer 1) under an order policy; two for "both"."""
    if order == "paper":
        return [1] if len(question.split(" ")) % 2 == 0 else [2]
    if order == "random":
        return [1] if random.Random(f"{seed}:{qid}").random() < 0.5 else [2]
    check_order(order)
    return [1, 2]


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


@dataclass(frozen=True)
class PairRequests:
    """The requests of one pair: the cleaned answers, each position with its request, and whether a
    prompt delimiter had to be defused in the question or an answer; ``signs_a``/``signs_b``: what each
    answer held that speaks to the judge (:func:`~metric_arena.delimiters.injection_signs`, ``{}`` for none)."""

    a_text: str
    b_text: str
    requests: list[tuple[int, ChatRequest]]
    neutralized: bool
    signs_a: dict
    signs_b: dict


def pair_requests(question: str, prediction: str, reference: str, *, qid: str, order: str, seed: int,
                  data_dir: str | os.PathLike | None = None) -> PairRequests:
    """The one place a pair becomes requests (online, dry run and Batch API alike): both answers
    cleaned the reference's way, shown in the order the policy gives."""
    a_text, b_text = clean_response(prediction), clean_response(reference)
    signs_a, signs_b = injection_signs(a_text), injection_signs(b_text)
    neutralized = bool(signs_a.get("defused_tags") or signs_b.get("defused_tags")
                       or neutralize_delimiters(question, JUDGE_TAGS)[1])
    requests = [(position, judge_request(question, a_text, b_text, position, data_dir=data_dir))
                for position in answer_positions(order, qid, question, seed)]
    return PairRequests(a_text, b_text, requests, neutralized, signs_a, signs_b)


@dataclass(frozen=True)
class PairInputs:
    """Checked inputs of a judge run: one entry per pair."""

    predictions: Sequence[str]
    references: Sequence[str]
    questions: Sequence[str]
    ids: list[str]
    domains: list[str | None]
    skipped: list[bool]  # the prediction file marked the answer as failed to generate

    def __len__(self) -> int:
        return len(self.ids)

    def schedule(self, sample: int | None, seed: int, *, ordered: bool = False) -> list[int]:
        """Indices to judge: all pairs in input order, or a seeded stratified order (``sample`` of them)."""
        if sample is None and not ordered:
            return list(range(len(self.ids)))
        return pair_schedule(self.ids, self.domains, sample, seed)


def check_pair_inputs(predictions, references, questions, ids=None, domains=None, generation_failed=None) -> PairInputs:
    """The inputs checked (lengths, types, unique non-empty ids); errors name the position and the fix."""
    for name, values in (("predictions", predictions), ("references", references), ("questions", questions),
                         ("ids", ids), ("domains", domains), ("generation_failed", generation_failed)):
        if isinstance(values, (str, bytes)):
            raise InvalidInputType(f"{name} is one {type(values).__name__} ({_short(values)}), not a list: give one "
                                   f"entry per pair, e.g. {name}=[{_short(values)}]")
    n = len(predictions)
    for name, values in (("references", references), ("questions", questions)):
        _check_length(name, values, n)
    for name, values in (("predictions", predictions), ("references", references), ("questions", questions)):
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise InvalidInputType(
                    f"{name}[{i}] is {type(value).__name__} ({value!r}), not a string: every answer and question "
                    "must be text (an empty answer is allowed and judged as such)"
                )
            if lone_surrogate(value) is not None:
                raise RagQaArenaError(f"{name}[{i}] holds a lone surrogate (such as '\\ud800'), which is not text and "
                                      "cannot be sent: fix or remove it")
    if ids is None:
        ids = [str(i) for i in range(n)]
    else:
        ids = _check_names("ids", ids, n, one="one id", example=" (e.g. LFRQA's qid)")
        seen: dict[str, int] = {}
        for i, value in enumerate(ids):
            if value in seen:
                raise RagQaArenaError(f"Duplicate id {value!r} at positions {seen[value]} and {i}: ids must be unique")
            seen[value] = i
    domains = [None] * n if domains is None else _check_names("domains", domains, n)
    skipped = _check_flags(generation_failed, n)
    for name, values in (("predictions", predictions), ("references", references), ("questions", questions)):
        for i, value in enumerate(values):
            refusal = None if skipped[i] and name != "questions" else text_too_long(
                name[:-1], value, f"{name}[{i}] (id {ids[i]})")
            if refusal:
                raise RagQaArenaError(refusal)
    return PairInputs(predictions, references, questions, ids, domains, skipped)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: The name of the reference answers' side: no evaluated system may take it.
REFERENCE_NAME = REFERENCE


def check_system_names(system: str, opponent: str) -> None:
    """Refuse names that would pass one side off as the other: a system named like the reference
    (``LFRQA``) or like its opponent, and names that are not text (say, a folder name that is not
    valid UTF-8); the error names the value and the fix."""
    for role, value in (("system", system), ("opponent", opponent)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputType(f"The {role} name {value!r} must be a non-empty string: pass --name NAME")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise RagQaArenaError(
                f"The {role} name '{value.encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')}' is not valid UTF-8 (a folder "
                f"or file name in another encoding?): pass {'--name' if role == 'system' else '--versus-name'} NAME "
                "in UTF-8") from None
    if system == REFERENCE_NAME:
        raise RagQaArenaError(f"The system name {system!r} is reserved for LFRQA's reference answers: pass --name "
                              "with another name")
    if system == opponent:
        raise RagQaArenaError(f"The system and its opponent are both named {system!r}: give them distinct names "
                              "(--name / --versus-name)")


def _check_length(name: str, values, n: int, one: str = "one") -> None:
    if len(values) != n:
        raise RagQaArenaError(f"{name} has {len(values)} entries but predictions has {n}: give {one} per prediction")


def _check_names(name: str, values, n: int, *, one: str = "one", example: str = "") -> list[str]:
    """``values`` as a list, one non-empty string per prediction."""
    _check_length(name, values, n, one)
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value:
            raise InvalidInputType(f"{name}[{i}] is {value!r}: {name} must be non-empty strings{example}")
    return values


def _check_flags(flags, n: int) -> list[bool]:
    if flags is None:
        return [False] * n
    flags = list(flags)
    _check_length("generation_failed", flags, n)
    for i, value in enumerate(flags):
        if not isinstance(value, bool):
            raise InvalidInputType(f"generation_failed[{i}] is {value!r}: give True or False")
    return flags


def planned_requests(inputs, *, order: str = "paper", seed: int = 0,
                     data_dir: str | os.PathLike | None = None) -> list[ChatRequest]:
    """Every request :func:`~metric_arena.judge_pairs` would build for one judge from ``inputs`` (a
    :class:`~metric_arena.judge.JudgeInputs`), in schedule order (all pairs, or the ``sample``), leaving
    out the pairs flagged in ``generation_failed``: what the dry run counts and the Batch API path sends."""
    check_order(order)
    pairs = check_pair_inputs(inputs.predictions, inputs.references, inputs.questions, inputs.ids, inputs.domains,
                              inputs.generation_failed)
    requests: list[ChatRequest] = []
    for i in pairs.schedule(inputs.sample, seed):
        if not pairs.skipped[i]:
            planned = pair_requests(pairs.questions[i], pairs.predictions[i], pairs.references[i], qid=pairs.ids[i],
                                    order=order, seed=seed, data_dir=data_dir)
            requests.extend(request for _, request in planned.requests)
    return requests
