"""What judges and how: :class:`JudgeConfig`, the one object every judging entry point takes as ``judge=``.

>>> JudgeConfig("openai:gpt-4o", order="both", parse="reference").specs
['openai:gpt-4o']
>>> judge_config("openai:gpt-4o-mini") == JudgeConfig("openai:gpt-4o-mini")
True
>>> JudgeConfig("openai:gpt-4o", order="sideways")
Traceback (most recent call last):
...
lfrqa.RagQaArenaError: Unknown order policy 'sideways'. Available: paper, random, both
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass

from lfrqa.checks import check_int
from lfrqa.errors import InvalidInputType, RagQaArenaError
from metric_arena.judge._parse import check_parse
from metric_arena.judge._plan import DEFAULT_JUDGE, check_order
from metric_arena.llm import Backend, parse_spec
from metric_arena.records import DEFAULT_SAMPLE, REFERENCE
from metric_arena.stats import DEFAULT_ALPHA

__all__ = ["JudgeConfig", "JudgeSpec", "MetricOptions", "TournamentSchedule", "judge_config"]


@dataclass(frozen=True)
class JudgeConfig:
    """What judges and how.

    ``judges``: a ``"<backend>:<model>"`` spec, a built :class:`~metric_arena.llm.Backend`, or a
    list of them (several judges vote). ``order``: "paper" (the reference's rule), "random"
    (seeded per id with ``seed``) or "both". ``seed`` also seeds samples and bootstrap intervals.
    ``parse``: "strict" or "reference" (replies read as the paper's scripts read them).
    ``max_input_tokens``: refuse (fail, never truncate) judgments whose prompt is longer.
    ``options``: the backends' own settings, e.g. ``{"device": "cpu"}`` for hf judges.
    """

    judges: str | Backend | Sequence[str | Backend] = DEFAULT_JUDGE
    _: KW_ONLY
    order: str = "paper"
    seed: int = 0
    parse: str = "strict"
    max_input_tokens: int | None = None
    options: Mapping | None = None

    def __post_init__(self) -> None:
        items = [self.judges] if isinstance(self.judges, (str, Backend)) else self.judges
        if not isinstance(items, Sequence) or not items:
            raise InvalidInputType(f"JudgeConfig(judges={self.judges!r}): give a '<backend>:<model>' spec such as "
                                   "'openai:gpt-4o', a Backend, or a non-empty list of them")
        for item in items:
            if not isinstance(item, (str, Backend)):
                raise InvalidInputType(f"JudgeConfig: judge {item!r} is {type(item).__name__}: give a "
                                       "'<backend>:<model>' spec or a Backend")
            if isinstance(item, str):
                parse_spec(item)
        object.__setattr__(self, "judges", tuple(items))
        check_order(self.order)
        check_parse(self.parse)
        check_int("JudgeConfig(seed)", self.seed, minimum=0, hint="--seed; numpy seeds the order and the intervals")
        if self.seed >= 2**32:
            raise RagQaArenaError(f"JudgeConfig(seed) (--seed) must be below 2**32, got {self.seed}")
        if self.max_input_tokens is not None:
            check_int("JudgeConfig(max_input_tokens)", self.max_input_tokens, minimum=1)
        if self.options is not None:
            if not isinstance(self.options, Mapping):
                raise InvalidInputType(f"JudgeConfig(options={self.options!r}): give a dict of backend settings")
            object.__setattr__(self, "options", dict(self.options))
        specs = self.specs
        twice = sorted({s for s in specs if specs.count(s) > 1})
        if twice:
            raise RagQaArenaError(f"{twice[0]!r} is given twice: list each judge once")

    @property
    def specs(self) -> list[str]:
        """The judges' ``"<backend>:<model>"`` specs, in order."""
        return [item.spec if isinstance(item, Backend) else f"{parse_spec(item)[0]}:{parse_spec(item)[1]}"
                for item in self.judges]

    def __hash__(self) -> int:
        return hash((self.judges, self.order, self.seed, self.parse, self.max_input_tokens))


#: What ``judge=`` accepts everywhere: a spec, a backend, a list of them, or a whole configuration.
JudgeSpec = str | Backend | Sequence[str | Backend] | JudgeConfig


def judge_config(judge: JudgeSpec) -> JudgeConfig:
    """``judge`` as a :class:`JudgeConfig` (a spec, a backend or a list get the default settings)."""
    return judge if isinstance(judge, JudgeConfig) else JudgeConfig(judge)


@dataclass(frozen=True, kw_only=True)
class TournamentSchedule:
    """Which pairs a tournament judges and on how many questions (see :func:`tournament`): ``sample``, the
    shared questions per pair (or a list of nested sizes); ``adaptive``, judge in rounds of ``round_size``
    questions until neighbours separate (family-wise level ``alpha``) or ``max_judgments`` are spent."""

    sample: int | Sequence[int] = DEFAULT_SAMPLE
    adaptive: bool = False
    alpha: float = DEFAULT_ALPHA
    max_judgments: int | None = None
    round_size: int = 100


@dataclass(frozen=True, kw_only=True)
class MetricOptions:
    """The evaluate metric's options beside its inputs, ``judge`` and ``run``: the names in the verdicts
    (``system``, ``opponent``), a run folder to write (``out``), ``progress``, the pinned files' folder
    (``data_dir``) and a retrieve output whose passages the answers' citation markers name (``citations``:
    adds citation scores, :mod:`metric_arena.citations`).

    >>> MetricOptions(system="my-rag").opponent
    'LFRQA'
    """

    system: str | None = None
    opponent: str = REFERENCE
    out: str | os.PathLike | None = None
    progress: bool | None = None
    data_dir: str | os.PathLike | None = None
    citations: str | os.PathLike | None = None
