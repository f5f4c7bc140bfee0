"""The arena inside training loops: the judge as an RL reward, and win rates logged while training.

- :func:`reward_function` returns an :class:`ArenaReward`, a callable in the shape TRL's
  ``GRPOTrainer(reward_funcs=[...])`` expects: ``fn(prompts, completions, **dataset_columns)
  -> list[float | None]`` (win 1.0, tie 0.5, loss 0.0 by default; None for a failed judgment).
- :class:`ArenaCallback` is a ``transformers.TrainerCallback``: every N steps it answers a fixed,
  seeded, domain-stratified LFRQA sample (:func:`arena_sample`) with the model being trained, judges
  the answers and logs win and win+tie rates with 95% intervals into the trainer's logs.
- :func:`citation_reward`, opt-in: a second reward term for completions with ``[k]`` markers, their
  reference-citation F1 (or recall, precision) against LFRQA's cited documents; no request is sent.

Both judge with :func:`metric_arena.judge_pairs` (the paper's prompt and order rule, the cache,
concurrency, rate limits, retries), and neither ever takes training down: a judge that is down,
refuses the key or dies mid-call costs a bounded wait and scores None (reward) or a warning
(callback). Importing this package loads neither torch nor transformers:
``ArenaCallback`` imports transformers when first asked for.
"""

from lfrqa.exports import export_names
from metric_arena.train._citations import CitationReward, citation_reward
from metric_arena.train._judge import TRAINING_RETRY
from metric_arena.train._reward import (
    DEFAULT_SCORES,
    REWARD_DEADLINE,
    ArenaReward,
    RewardColumns,
    completion_text,
    reward_function,
)
from metric_arena.train._sample import ArenaQuestions, ArenaSchedule, arena_sample, gold_passages

__all__ = [
    "DEFAULT_SCORES",
    "REWARD_DEADLINE",
    "TRAINING_RETRY",
    "ArenaCallback",
    "ArenaQuestions",
    "ArenaSchedule",
    "RewardColumns",
    "ArenaReward",
    "CitationReward",
    "arena_sample",
    "citation_reward",
    "completion_text",
    "gold_passages",
    "reward_function",
]

export_names(globals())

_HINT = 'ArenaCallback needs transformers (and torch): pip install "rag-qa-arena[hf]"'


def __getattr__(name: str):
    # ArenaCallback subclasses transformers.TrainerCallback: defined when first asked for.
    if name == "ArenaCallback":
        try:
            from metric_arena.train._callback import ArenaCallback
        except ImportError as error:
            if (getattr(error, "name", None) or "").split(".")[0] not in ("transformers", "torch"):
                raise
            from lfrqa.errors import MissingDependency

            raise MissingDependency(f"{_HINT} ({error})") from error
        ArenaCallback.__module__ = __name__  # its public path, as export_names gives the others
        return ArenaCallback
    raise AttributeError(f"module 'metric_arena.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
