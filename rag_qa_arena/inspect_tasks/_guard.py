"""What makes a run of the ``lfrqa`` task fail instead of reporting nothing as a success.

- :class:`RatingGuard`: a run where no sample got a rating (every judgment failed, or every sample
  errored) measured nothing. Inspect computes metrics many times during a run (for its progress
  display), so a metric cannot tell the last computation from the others; the guard uses the one
  hook Inspect calls once, after every sample and before the results, its
  :class:`inspect_ai.util.EarlyStopping` protocol. It never stops a sample: it counts the rated
  ones, and at the end raises :class:`NoRatingError` when there are none, which gives the log the
  status ``error`` with that message (``inspect eval-set`` then exits 1; ``inspect eval`` 0.3.x
  exits 0 whatever the status, so scripts read the log's status).
- :class:`TaskArgumentError`: a bad ``-T`` argument. Shown by the ``inspect`` CLI as one line, no
  traceback (it is also Inspect's own prerequisite error, where Inspect has one).
"""

from __future__ import annotations

from typing import Any

from lfrqa.errors import RagQaArenaError

try:  # Inspect prints its prerequisite errors as their message alone (no traceback)
    from inspect_ai._util.error import PrerequisiteError as _InspectPrerequisite
except ImportError:  # pragma: no cover - another Inspect version: a plain error (with a traceback)
    _InspectPrerequisite = Exception

__all__ = ["NoRatingError", "RatingGuard", "TaskArgumentError"]


class TaskArgumentError(RagQaArenaError, _InspectPrerequisite):
    """A bad task argument (``-T name=value``): the message names it and the allowed ones."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NoRatingError(RagQaArenaError):
    """No sample of the run got a rating: the run measured nothing (its log's status is ``error``)."""


class RatingGuard:
    """Counts the samples whose judgment got a rating (their score's ``outcome``) and fails the run
    at its end when none did (see the module notes). One guard per task: it starts afresh with
    each run (``start_task``)."""

    name = "rag_qa_arena rating guard (fails the run when no sample got a rating; stops no sample)"

    def __init__(self) -> None:
        self.n_scored = 0
        self.n_rated = 0

    async def start_task(self, task: Any, samples: list, epochs: int) -> str:
        self.n_scored = self.n_rated = 0
        return self.name

    async def schedule_sample(self, id: str | int, epoch: int) -> None:
        return None  # never stops a sample

    async def complete_sample(self, id: str | int, epoch: int, scores: dict) -> None:
        self.n_scored += 1
        if any((getattr(s.score, "metadata", None) or {}).get("outcome") is not None for s in scores.values()):
            self.n_rated += 1

    async def complete_task(self) -> dict:
        if not self.n_rated:
            what = (f"all {self.n_scored:,} judgments failed (no valid <rating> in the grader's replies)"
                    if self.n_scored else "no sample was scored (every sample errored)")
            raise NoRatingError(
                f"No sample got a rating: {what}, so the run measured nothing (win_rate would be NaN). Check the "
                "grader (--model-role grader=MODEL) and its replies in the log (each score's explanation), or "
                "read replies as the reference does with -T parse=reference")
        return {"n_scored": self.n_scored, "n_rated": self.n_rated}
