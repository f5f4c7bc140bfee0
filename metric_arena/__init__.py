"""The RAG-QA Arena judge: pairwise LLM judging against LFRQA, as an ``evaluate`` metric too.

>>> import evaluate, metric_arena
>>> arena = evaluate.load(metric_arena.METRIC_PATH)  # doctest: +SKIP
>>> res = arena.compute(predictions=[...], references=[...], questions=[...],
...                     judge="openai:gpt-4-0125-preview")  # doctest: +SKIP
>>> res = metric_arena.judge_pairs(predictions, references, questions, judge="openai:gpt-4o")  # doctest: +SKIP

The rooms, each importing only the ones below it: :mod:`metric_arena.stats` (numbers),
:mod:`metric_arena.llm` (backends, cache, retries, limits, Batch API), :mod:`metric_arena.prompts`
(the paper's templates), :mod:`metric_arena.judge`, :mod:`metric_arena.generate` and
:mod:`metric_arena.report`. Importing this package loads no ``datasets``, ``torch`` or plotting
library.
"""

from pathlib import Path

from lfrqa.errors import RagQaArenaError
from metric_arena import stats
from metric_arena.generate import generate_answers
from metric_arena.judge import DEFAULT_JUDGE, ajudge_pairs, judge_pairs
from metric_arena.llm import (
    AuthenticationFailed,
    BackendError,
    ModelNotFound,
    RateLimiter,
    RetryPolicy,
)
from metric_arena.report import build_leaderboard, push_run, write_report

#: Folder of the ``rag_qa_arena`` evaluate module: ``evaluate.load(metric_arena.METRIC_PATH)``.
METRIC_PATH = str(Path(__file__).resolve().parent / "rag_qa_arena")

__all__ = [
    "DEFAULT_JUDGE",
    "METRIC_PATH",
    "AuthenticationFailed",
    "BackendError",
    "ModelNotFound",
    "RagQaArenaError",
    "RateLimiter",
    "RetryPolicy",
    "ajudge_pairs",
    "build_leaderboard",
    "generate_answers",
    "judge_pairs",
    "push_run",
    "stats",
    "write_report",
]
