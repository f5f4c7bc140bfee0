"""The judge a training loop calls again and again: built once, the same settings every call.

Every call is a :func:`~metric_arena.judge.judge_pairs` run (the paper's prompt and order rule, the
cache, concurrency, rate limits and retries), each in its own event loop and its own
:class:`~metric_arena.llm.Session`. A judge that runs on this machine (hf, vllm) is built here once
and handed to every call, so its model stays loaded; an openai judge's HTTP client belongs to one
loop, so each call's session makes and closes its own.
"""

from __future__ import annotations

import os
from dataclasses import replace

from lfrqa.errors import RagQaArenaError
from metric_arena.judge import JudgeInputs, JudgeSpec, RunOutput, judge_config, judge_pairs
from metric_arena.llm import OPENAI, Backend, RetryPolicy, RunConfig, Session, make_backend, parse_spec, synchronous
from metric_arena.prompts import judge_messages
from metric_arena.stats import Intervals

__all__ = ["TRAINING_RETRY", "ArenaJudge", "training_run"]

#: Retries of a judge called inside a training loop, unless its RunConfig gives its own: a few quick
#: retries (a failed judgment costs one reward, a long wait costs every GPU of the run).
TRAINING_RETRY = RetryPolicy(max_retries=2, initial=1.0, max_wait=5.0)


def training_run(run: RunConfig | None, deadline: float) -> RunConfig:
    """``run`` as a training loop uses it: its ``retry`` and ``deadline`` when it sets them, else
    :data:`TRAINING_RETRY` and ``deadline`` seconds per call (a judge that is down or dies mid-call
    costs a bounded wait, never the training run)."""
    run = run if run is not None else RunConfig()
    if not isinstance(run, RunConfig):
        return run  # refused with its fix by judge_pairs
    return replace(run, retry=run.retry if run.retry is not None else TRAINING_RETRY,
                   deadline=run.deadline if run.deadline is not None else deadline)


async def _release(backends: list[Backend]) -> None:
    for backend in backends:
        await backend.aclose()


_release_all = synchronous(_release, name="release", doc="Close every backend in the list.")


def _preload(specs: list[str], data_dir) -> None:
    """What the first call would load, loaded now (clients, token encodings, the judge's prompt files), so
    that it costs what later calls do; a prompt file that cannot be read now is reported by that call."""
    Session.preload(specs)
    try:
        judge_messages("", "", "", data_dir=data_dir)
    except RagQaArenaError:
        pass


class ArenaJudge:
    """The judge settings of a reward or a callback, and one method to judge a list of pairs."""

    def __init__(self, *, judge: JudgeSpec, run: RunConfig | None, data_dir: str | os.PathLike | None,
                 deadline: float) -> None:
        config = judge_config(judge)
        self.run = training_run(run, deadline)
        self._local: list[Backend] = []
        judges: list[str | Backend] = []
        for item in config.judges:
            if isinstance(item, str) and parse_spec(item)[0] != OPENAI:
                item = make_backend(item, options=config.options)  # loaded once, kept across calls
                self._local.append(item)
            judges.append(item)
        self.config = replace(config, judges=tuple(judges))
        self.data_dir = data_dir
        _preload(self.config.specs, data_dir)

    @property
    def specs(self) -> list[str]:
        return self.config.specs

    def __call__(self, predictions: list[str], references: list[str], questions: list[str], *, ids: list[str],
                 domains: list[str] | None = None, generation_failed: list[bool] | None = None,
                 system: str = "system", n_boot: int = 1000) -> dict:
        """:func:`~metric_arena.judge.judge_pairs` on these pairs with the judge's settings."""
        inputs = JudgeInputs(predictions=predictions, references=references, questions=questions, ids=ids,
                             domains=domains, generation_failed=generation_failed, system=system)
        return judge_pairs(inputs, judge=self.config, run=self.run, data_dir=self.data_dir,
                           output=RunOutput(progress=False), intervals=Intervals(n_boot=n_boot))

    def close(self) -> None:
        """Free what the judges hold (a local judge model)."""
        _release_all(self._local)
