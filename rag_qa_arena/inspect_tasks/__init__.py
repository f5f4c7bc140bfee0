"""RAG-QA Arena as an Inspect AI task: ``inspect eval rag_qa_arena/lfrqa``.

Registered through the ``inspect_ai`` entry point (``rag_qa_arena = "rag_qa_arena.inspect_tasks"``
in pyproject.toml), so an installed package makes the task known to ``inspect`` by name::

    inspect eval rag_qa_arena/lfrqa --model openai/gpt-4o-mini --model-role grader=openai/gpt-4o \\
        -T domain=science -T retrieved=science.retrieved.jsonl -T prompt=v2

An integration skin like the CLI: it uses only public names of :mod:`lfrqa` and :mod:`metric_arena`
(the dataset loader, the paper's generation and judge requests, the order rule, the parser).
Needs ``pip install "rag-qa-arena[inspect]"``.
"""

try:
    import inspect_ai  # noqa: F401
except ImportError as error:
    raise ImportError('The RAG-QA Arena Inspect task needs Inspect AI: pip install "rag-qa-arena[inspect]"') from error

from rag_qa_arena.inspect_tasks._citations import citation_means, citation_scorer
from rag_qa_arena.inspect_tasks._guard import NoRatingError, RatingGuard, TaskArgumentError
from rag_qa_arena.inspect_tasks._scorer import arena_judge, judged, per_domain, win_rate, win_tie_rate
from rag_qa_arena.inspect_tasks._task import TASK_ARGUMENTS, lfrqa, lfrqa_dataset, paper_answer

__all__ = ["TASK_ARGUMENTS", "NoRatingError", "RatingGuard", "TaskArgumentError", "arena_judge", "citation_means",
           "citation_scorer", "judged", "lfrqa",
           "lfrqa_dataset", "paper_answer", "per_domain", "win_rate", "win_tie_rate"]
