"""The RAG-QA Arena judge: pairwise LLM judging against LFRQA, as an ``evaluate`` metric too.

>>> import evaluate, metric_arena
>>> arena = evaluate.load(metric_arena.METRIC_PATH)  # doctest: +SKIP
>>> res = arena.compute(predictions=[...], references=[...], questions=[...],
...                     judge="openai:gpt-4-0125-preview")  # doctest: +SKIP
>>> res = metric_arena.judge_pairs(predictions, references, questions, judge="openai:gpt-4o")  # doctest: +SKIP
"""

from pathlib import Path

from metric_arena._backends import Backend, ChatRequest, Completion, make_backend
from metric_arena._cache import CompletionCache
from metric_arena._judge import DEFAULT_JUDGE, ORDERS, ajudge_pairs, judge_pairs, parse_rating
from metric_arena._prompts import clean_response, generation_messages, is_no_answer, judge_messages
from metric_arena._stats import summarize

#: Folder of the ``rag_qa_arena`` evaluate module: ``evaluate.load(metric_arena.METRIC_PATH)``.
METRIC_PATH = str(Path(__file__).resolve().parent / "rag_qa_arena")

__all__ = [
    "DEFAULT_JUDGE",
    "METRIC_PATH",
    "ORDERS",
    "Backend",
    "ChatRequest",
    "Completion",
    "CompletionCache",
    "ajudge_pairs",
    "clean_response",
    "generation_messages",
    "is_no_answer",
    "judge_messages",
    "judge_pairs",
    "make_backend",
    "parse_rating",
    "summarize",
]
