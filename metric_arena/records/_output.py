"""How an entry point writes its output (``out=``): :class:`RunOutput`, shared by generation and tournaments."""

from __future__ import annotations

from dataclasses import dataclass

from lfrqa.errors import InvalidInputType

__all__ = ["RUN_OUTPUT_KEYWORDS", "RunOutput", "run_output"]


@dataclass(frozen=True, kw_only=True)
class RunOutput:
    """What a run does with its output beside the path itself (``out=``): ``overwrite``, replace what
    ``out`` holds from other settings instead of refusing; ``progress``, show a progress bar (None: the
    entry point's default, for :func:`~metric_arena.generate.generate_answers` a bar when at least 20
    questions are left and stderr is a terminal, for :func:`~metric_arena.judge.tournament` none).

    >>> RunOutput(overwrite=True).progress is None
    True
    """

    overwrite: bool = False
    progress: bool | None = None

    def __post_init__(self):
        for name in ("overwrite", "progress"):
            value = getattr(self, name)
            if not isinstance(value, bool) and not (name == "progress" and value is None):
                raise InvalidInputType(f"RunOutput({name}={value!r}): give True or False"
                                       f"{' (or None: the default)' if name == 'progress' else ''}")


#: The loose keywords of earlier releases that :class:`RunOutput` groups (``output=``).
RUN_OUTPUT_KEYWORDS = ("overwrite", "progress")


def run_output(output: RunOutput | None) -> RunOutput:
    """``output`` checked (None: the defaults); anything else than a :class:`RunOutput` is refused by name."""
    if output is None:
        return RunOutput()
    if not isinstance(output, RunOutput):
        raise InvalidInputType(f"output={output!r}: give a RunOutput(overwrite=..., progress=...) "
                               "(from metric_arena.generate or metric_arena.judge)")
    return output
