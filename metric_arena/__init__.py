"""The RAG-QA Arena judge: pairwise LLM judging against LFRQA, as an ``evaluate`` metric too.

>>> import evaluate, metric_arena
>>> judge = metric_arena.JudgeConfig("openai:gpt-4-0125-preview", order="paper", parse="strict")  # what judges, how
>>> run = metric_arena.RunConfig(max_concurrency=64, cache_dir="/tmp/rag_qa_arena")  # how requests run
>>> arena = evaluate.load(metric_arena.METRIC_PATH)  # doctest: +SKIP
>>> res = arena.compute(predictions=[...], references=[...], questions=[...], judge=judge, run=run)  # doctest: +SKIP
>>> pairs = metric_arena.JudgeInputs(predictions=[...], references=[...], questions=[...], ids=[...])  # doctest: +SKIP
>>> res = metric_arena.judge_pairs(pairs, judge=judge, run=run)  # doctest: +SKIP
>>> reward = metric_arena.reward_function(judge=judge, run=run)  # for GRPOTrainer  # doctest: +SKIP
>>> callback = metric_arena.ArenaCallback(trainer=trainer, judge=judge, run=run,
...                                       schedule=metric_arena.train.ArenaSchedule(every_n_steps=200))  # doctest: +SKIP

The same two objects go to every entry point: :func:`judge_pairs`, :func:`generate_answers` (``run``),
:func:`metric_arena.judge.tournament`, the dry runs and Batch API steps, :func:`reward_function`,
``ArenaCallback`` and the evaluate metric.

The rooms, each importing only the ones below it: :mod:`metric_arena.stats` (numbers),
:mod:`metric_arena.llm` (backends, cache, retries, limits, Batch API), :mod:`metric_arena.prompts`
(the paper's templates), :mod:`metric_arena.judge`, :mod:`metric_arena.generate` and
:mod:`metric_arena.report`; above them :mod:`metric_arena.train` (reward and trainer callback) and
:mod:`metric_arena.space` (the evaluate module as a folder and a Hub Space). Importing this package
loads no ``datasets``, ``torch`` or plotting library (``ArenaCallback`` loads transformers on first use).
"""

from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.exports import export_names
from metric_arena import stats  # noqa: F401 - metric_arena.stats, the statistics room
from metric_arena.generate import generate_answers
from metric_arena.judge import (  # noqa: F401 - ajudge_pairs: async
    DEFAULT_JUDGE,
    JudgeConfig,
    JudgeInputs,
    References,
    ajudge_pairs,
    judge_pairs,
)
from metric_arena.llm import (  # noqa: F401 - AuthenticationFailed, ModelNotFound: BackendError's kinds, here too
    AuthenticationFailed,
    BackendError,
    ModelNotFound,
    RateLimiter,
    RetryPolicy,
    RunConfig,
)
from metric_arena.report import build_leaderboard, push_run, write_report
from metric_arena.train import reward_function

#: Folder of the ``rag_qa_arena`` evaluate module: ``evaluate.load(metric_arena.METRIC_PATH)``.
METRIC_PATH = str(Path(__file__).resolve().parent / "rag_qa_arena")

__all__ = [
    "DEFAULT_JUDGE",
    "METRIC_PATH",
    "ArenaCallback",
    "BackendError",
    "JudgeConfig",
    "RagQaArenaError",
    "RateLimiter",
    "RetryPolicy",
    "RunConfig",
    "build_leaderboard",
    "generate_answers",
    "judge_pairs",
    "push_run",
    "reward_function",
    "write_report",
]
# Also here, not listed: JudgeInputs and References (judge_pairs' input record and a benchmark's references,
# from metric_arena.judge), ajudge_pairs (metric_arena.judge), AuthenticationFailed and ModelNotFound (kinds of
# BackendError, from metric_arena.llm) and the stats room (metric_arena.stats).

export_names(globals())


def __getattr__(name: str):
    # ArenaCallback subclasses transformers.TrainerCallback: imported when first asked for.
    if name == "ArenaCallback":
        from metric_arena import train

        callback = train.ArenaCallback
        callback.__module__ = __name__  # metric_arena.ArenaCallback, as export_names gives the others
        return callback
    raise AttributeError(f"module 'metric_arena' has no attribute {name!r}")
