"""Answer generation with the paper's prompt: retrieved passages + question -> an answer file.
Uses :mod:`metric_arena.llm` and :mod:`metric_arena.prompts`; knows nothing of judging."""

from lfrqa.exports import export_names
from metric_arena.generate._cost import format_generation_estimate, generation_dry_run
from metric_arena.generate._inputs import (
    GENERATION_MAX_TOKENS,
    GenerationConfig,
    generation_request,
    read_retrieved,
)
from metric_arena.generate._output import summary_path
from metric_arena.generate._run import agenerate_answers, generate_answers
from metric_arena.records import RunOutput

__all__ = [
    "GENERATION_MAX_TOKENS",
    "GenerationConfig",
    "RunOutput",
    "agenerate_answers",
    "format_generation_estimate",
    "generate_answers",
    "generation_dry_run",
    "generation_request",
    "read_retrieved",
    "summary_path",
]

export_names(globals())
