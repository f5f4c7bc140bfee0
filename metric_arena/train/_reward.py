"""The RAG-QA Arena judge as a reward: a callable in the shape TRL's ``GRPOTrainer(reward_funcs=...)``
expects, ``fn(prompts, completions, **dataset_columns) -> list[float | None]``.

Each completion is judged against its row's reference answer for its row's question (the dataset
columns TRL passes along: with LFRQA's own columns, ``answer``, ``question`` and ``qid``), with the
paper's prompt and order rule, through the cache, concurrency, rate limits and retries of every
judge run. A win scores 1.0, a tie 0.5, a loss 0.0 (``scores=`` changes them, e.g. +1/0/-1). A
failed judgment scores ``None``, which TRL leaves out of the reward, and is counted.

Ids. The judge sees one pair per distinct (row, completion): the id ``"<qid>~<12 hex of the
completion's sha256>"`` (the qid is the ``id_column`` value, or a hash of the question without one),
so identical completions of one prompt are judged once and, with ``order="random"``, a completion's
position is seeded by what it says, the same in every step.

>>> reward = reward_function(judge="openai:gpt-4o-mini")                    # doctest: +SKIP
>>> reward(prompts=["..."], completions=["Paris."], question=["Capital of France?"],
...        answer=["The capital of France is Paris."], qid=["q1"])            # doctest: +SKIP
[1.0]
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lfrqa.checks import grouped_keywords
from lfrqa.errors import InvalidInputType, RagQaArenaError
from metric_arena.judge import DEFAULT_JUDGE, JudgeSpec
from metric_arena.llm import BackendError, RunConfig
from metric_arena.prompts import clean_response
from metric_arena.train._judge import ArenaJudge

__all__ = ["DEFAULT_SCORES", "LENGTH_CONTROLS", "REWARD_DEADLINE", "ArenaReward", "RewardColumns", "completion_text", "reward_function"]

logger = logging.getLogger("metric_arena.train")
#: Seconds one reward call may take when the RunConfig sets no ``deadline``: judgments still
#: unanswered then score None.
REWARD_DEADLINE = 120.0
#: ``length_control`` values: None (the judge's reward as it is) or "regress" (its fitted length advantage removed).
LENGTH_CONTROLS = (None, "regress")

#: Reward of each outcome of the completion against the reference.
DEFAULT_SCORES = {"win": 1.0, "tie": 0.5, "loss": 0.0}
# What GRPOTrainer passes besides the dataset's columns (none of them is a column).
_TRAINER_KWARGS = ("completion_ids", "trainer_state", "log_extra", "log_metric", "environments")


def completion_text(completion: Any, index: int = 0) -> str:
    """The answer in one completion: a string as it is, or the content of the last assistant message
    of a chat completion (``[{"role": "assistant", "content": ...}]``; content parts of type "text"
    are joined)."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else completion
    if not isinstance(messages, Sequence) or not all(isinstance(m, Mapping) for m in messages):
        raise InvalidInputType(f"completions[{index}] is {type(completion).__name__}: give a string or chat messages "
                               '[{"role": "assistant", "content": "..."}]')
    replies = [m for m in messages if m.get("role") == "assistant"]
    if not replies:
        roles = [m.get("role") for m in messages]
        raise RagQaArenaError(f"completions[{index}] holds no assistant message (roles: {roles}): the answer judged "
                              "is the content of the last assistant message")
    content = replies[-1].get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping) and part.get("type") == "text")
    raise InvalidInputType(f"completions[{index}]: the assistant content is {type(content).__name__}, not text")


def _check_scores(scores: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(scores, Mapping) or set(scores) != set(DEFAULT_SCORES):
        given = sorted(scores) if isinstance(scores, Mapping) else scores
        raise RagQaArenaError(f"scores must give a number for exactly win, tie and loss (e.g. {DEFAULT_SCORES}), got {given!r}")
    checked = {}
    for outcome, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise RagQaArenaError(f"scores[{outcome!r}] must be a finite number, got {value!r}")
        checked[outcome] = float(value)
    return checked


def _digest(text: str, size: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:size]


class ArenaReward:
    """A TRL reward function judging completions against their rows' references (see :func:`reward_function`).

    ``counts`` holds what was judged so far: ``calls``, ``completions``, ``pairs`` (distinct pairs
    judged), ``failed`` (completions scored None), ``win``/``tie``/``loss``, ``n_sent``,
    ``n_cached`` and ``errors`` by kind.
    """

    def __init__(self, judge: ArenaJudge, *, scores: Mapping[str, float], reference_column: str,
                 question_column: str, id_column: str | None, name: str, length_control: str | None = None) -> None:
        if length_control not in LENGTH_CONTROLS:
            raise RagQaArenaError(f"length_control={length_control!r} is not known. Available: None (the judge's "
                                  "reward as it is) or 'regress' (remove the fitted length advantage)")
        self.length_control = length_control
        self._length_sums = [0.0] * 5  # n, sum f, sum r, sum f^2, sum f*r over every rewarded completion
        self.judge = judge
        self.scores = _check_scores(scores)
        for what, column in (("reference_column", reference_column), ("question_column", question_column)):
            if not isinstance(column, str) or not column:
                raise RagQaArenaError(f"{what} must name a dataset column, got {column!r}")
        self.reference_column, self.question_column, self.id_column = reference_column, question_column, id_column
        self.__name__ = name  # TRL names the reward after it: rewards/<name>/mean
        self.counts: Counter = Counter()
        self.errors: Counter = Counter()

    def __repr__(self) -> str:
        return f"ArenaReward({self.__name__!r}, judge={self.judge.specs}, scores={self.scores})"

    def _column(self, columns: Mapping[str, Any], name: str, n: int, what: str) -> list:
        if name not in columns:
            available = sorted(k for k in columns if k not in _TRAINER_KWARGS)
            raise RagQaArenaError(
                f"The reward needs the {what} of each completion from the dataset column {name!r}, which is not among "
                f"the columns passed ({available}): add it to the dataset or set "
                f"columns=RewardColumns({what.split()[0]}=...)"
            )
        values = list(columns[name])
        if len(values) != n:
            raise RagQaArenaError(f"column {name!r} has {len(values)} values for {n} completions")
        return values

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **dataset_columns: Any) -> list[float | None]:
        """One reward per completion (None for a failed judgment), in order; TRL passes the dataset's
        other columns as keyword lists (plus its own ``trainer_state``, ``log_metric``...)."""
        log_metric: Callable[[str, float], None] | None = dataset_columns.get("log_metric")
        log_extra: Callable[[str, list], None] | None = dataset_columns.get("log_extra")
        n = len(completions)
        if len(prompts) != n:
            raise RagQaArenaError(f"{len(prompts)} prompts for {n} completions: give one prompt per completion")
        references = self._column(dataset_columns, self.reference_column, n, "reference answer")
        questions = self._column(dataset_columns, self.question_column, n, "question")
        if self.id_column is not None and self.id_column in dataset_columns:
            qids = [str(q) for q in self._column(dataset_columns, self.id_column, n, "id")]
        else:
            qids = [f"q{_digest(str(q))}" for q in questions]
        answers = [completion_text(c, i) for i, c in enumerate(completions)]
        pair_ids = [f"{qid}~{_digest(answer)}" for qid, answer in zip(qids, answers)]
        first: dict[str, int] = {}
        for i, pair_id in enumerate(pair_ids):
            first.setdefault(pair_id, i)
        unique = list(first.values())
        outcomes: dict[str, str | None] = {}
        result = self._judge(unique, answers, references, questions, pair_ids) if unique else None
        if result is not None:
            outcomes = {v["qid"]: v["outcome"] for v in result["verdicts"]}
            self.counts.update(n_sent=result.get("n_sent", 0), n_cached=result.get("n_cached", 0), pairs=len(unique))
            self.errors.update(result.get("errors") or {})
        per_completion = [outcomes.get(pair_id) for pair_id in pair_ids]
        rewards = [None if o is None else self.scores[o] for o in per_completion]
        if self.length_control == "regress":
            rewards = self._without_length(rewards, answers, references)
        tally = Counter("failed" if o is None else o for o in per_completion)
        self.counts.update(calls=1, completions=n, **tally)
        if log_metric is not None and n:
            for key in ("win", "tie", "loss", "failed"):
                log_metric(f"{self.__name__}/{key}", tally[key] / n)
        if log_extra is not None:
            log_extra(f"{self.__name__}_outcome", [o if o is not None else "failed" for o in per_completion])
        return rewards

    @property
    def length_slope(self) -> float:
        """The least-squares slope of the reward on ``f = (L_c - L_r) / (L_c + L_r)`` (words of the
        cleaned completion and reference) over every completion rewarded so far; 0 before two distinct f."""
        n, sf, sr, sff, sfr = self._length_sums
        spread = n * sff - sf * sf
        return (n * sfr - sf * sr) / spread if n > 1 and spread > 1e-12 else 0.0

    def _without_length(self, rewards: list[float | None], answers: list[str], references: list) -> list[float | None]:
        """``reward - slope * f``: the judge's fitted length advantage taken out (slope refitted with this batch)."""
        fs = []
        for answer, reference in zip(answers, references):
            a, r = len(clean_response(answer).split()), len(clean_response(str(reference)).split())
            fs.append((a - r) / (a + r) if a + r else 0.0)
        for f, reward in zip(fs, rewards):
            if reward is not None:
                for k, value in enumerate((1.0, f, reward, f * f, f * reward)):
                    self._length_sums[k] += value
        slope = self.length_slope
        return [None if r is None else r - slope * f for r, f in zip(rewards, fs)]

    def _judge(self, unique, answers, references, questions, pair_ids) -> dict | None:
        """The judge's result on the distinct pairs, or None when the judge cannot be used right now
        (unreachable, the key or model refused, its cache unwritable: a full disk): then every
        completion of this call scores None, a warning says why, and the next call tries again.
        Training goes on. (Mistakes in the call itself, such as a missing column, still raise.)"""
        try:
            return self.judge([answers[i] for i in unique], [references[i] for i in unique],
                              [questions[i] for i in unique], ids=[pair_ids[i] for i in unique],
                              system=self.__name__, n_boot=0)
        except (BackendError, OSError) as error:
            self.errors[getattr(error, "kind", type(error).__name__)] += 1
            logger.warning("%s: the judge could not be used (%s); the %d completions of this call score None "
                           "and training goes on", self.__name__, error, len(answers))
            return None

    def close(self) -> None:
        """Free what the judge holds (a local judge model)."""
        self.judge.close()


@dataclass(frozen=True, kw_only=True)
class RewardColumns:
    """The dataset columns a reward reads: the ``reference`` answer (LFRQA's ``answer``), the ``question``,
    and the ``id`` naming the pair (LFRQA's ``qid``; None or absent: a hash of the question)."""

    reference: str = "answer"
    question: str = "question"
    id: str | None = "qid"


@grouped_keywords("columns", RewardColumns, {"reference_column": "reference", "question_column": "question",
                                             "id_column": "id"})
def reward_function(
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
    columns: RewardColumns | None = None,
    scores: Mapping[str, float] = DEFAULT_SCORES,
    name: str = "rag_qa_arena",
    length_control: str | None = None,
) -> ArenaReward:
    """The RAG-QA Arena judge as a reward function for TRL's ``GRPOTrainer(reward_funcs=[...])``.

    The returned callable takes ``(prompts, completions, **dataset_columns)`` and returns one
    ``float | None`` per completion: ``scores`` of the completion's outcome against the row's
    reference answer for its question, or None when the judgment failed (TRL ignores it; counted in
    ``reward.counts["failed"]``). Completions may be strings or chat messages. ``columns``
    (:class:`RewardColumns`) names the dataset's columns: reference (``answer``), question
    (``question``) and id (``qid``; None or absent: a hash of the question), which names the pairs in
    the cache and seeds ``order="random"``. The loose ``reference_column=``, ``question_column=``,
    ``id_column=`` work for one release, with a ``DeprecationWarning``.

    ``judge``: a :class:`~metric_arena.JudgeConfig` (or a spec / list of specs): judges, order,
    seed, parse, ``max_input_tokens``, backend options. ``run``: a :class:`~metric_arena.RunConfig`
    (server, key, concurrency, a rate limiter shared by all calls, retries, timeout, cache).

    A call never takes training down: a judge that is unreachable (after ``retry.fail_fast_after``,
    20 s), refuses the key or the model, or dies mid-call scores its completions None (a warning on
    the ``metric_arena.train`` logger says why). Each call is bounded by ``run.deadline``
    (:data:`REWARD_DEADLINE`, 120 s, when the RunConfig sets none; judgments unanswered then score
    None), and retries are :data:`~metric_arena.train.TRAINING_RETRY` (2 quick retries) unless
    ``run.retry`` is given.
    ``data_dir``: the pinned prompt files. ``name`` is the reward's name in TRL's logs
    (``rewards/<name>/mean``); through TRL's ``log_metric`` it also logs the shares
    ``<name>/win|tie|loss|failed``.

    ``length_control="regress"`` (opt-in): judges prefer longer answers, and a policy trained on
    their verdicts learns to pad. With it, each reward becomes ``reward - slope * f`` where ``f =
    (L_c - L_r) / (L_c + L_r)`` compares the completion's words with the reference's and ``slope``
    (``reward.length_slope``) is the least-squares slope of the rewards on ``f`` over every
    completion rewarded so far: the length advantage the judge shows in this run is taken out, so a
    completion earns reward by what it says, not by how long it is. Part of length's effect may be
    legitimate (the rubric values completeness); leave it None to keep the judge's reward as it is.

    >>> from trl import GRPOTrainer                                        # doctest: +SKIP
    >>> reward = reward_function(judge=JudgeConfig("openai:gpt-4o-mini", parse="reference"),
    ...                          run=RunConfig(max_concurrency=64), scores={"win": 1, "tie": 0, "loss": -1})  # doctest: +SKIP
    >>> trainer = GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=lfrqa_with_prompts)  # doctest: +SKIP
    """
    columns = columns if columns is not None else RewardColumns()
    settings = ArenaJudge(judge=judge, run=run, data_dir=data_dir, deadline=REWARD_DEADLINE)
    return ArenaReward(settings, scores=scores, reference_column=columns.reference, question_column=columns.question,
                       id_column=columns.id, name=name, length_control=length_control)
