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
from metric_arena._generate import generate_answers, read_retrieved
from metric_arena._judge import DEFAULT_JUDGE, ORDERS, ajudge_pairs, judge_pairs, parse_rating
from metric_arena._prompts import clean_response, generation_messages, is_no_answer, judge_messages
from metric_arena._agreement import agreement, load_human_labels
from metric_arena._hub import push_run
from metric_arena._leaderboard import build_leaderboard, load_run, write_report
from metric_arena._paired import paired_comparison
from metric_arena._ratelimit import RateLimiter
from metric_arena._ratings import BattleCounts, bootstrap_bradley_terry, fit_bradley_terry
from metric_arena._sampling import IntervalStopper, stratified_sample
from metric_arena._stats import summarize

#: Folder of the ``rag_qa_arena`` evaluate module: ``evaluate.load(metric_arena.METRIC_PATH)``.
METRIC_PATH = str(Path(__file__).resolve().parent / "rag_qa_arena")

__all__ = [
    "DEFAULT_JUDGE",
    "METRIC_PATH",
    "ORDERS",
    "Backend",
    "BattleCounts",
    "ChatRequest",
    "Completion",
    "CompletionCache",
    "IntervalStopper",
    "RateLimiter",
    "agreement",
    "ajudge_pairs",
    "bootstrap_bradley_terry",
    "build_leaderboard",
    "clean_response",
    "fit_bradley_terry",
    "generate_answers",
    "generation_messages",
    "is_no_answer",
    "judge_messages",
    "judge_pairs",
    "load_human_labels",
    "load_run",
    "make_backend",
    "paired_comparison",
    "parse_rating",
    "push_run",
    "read_retrieved",
    "stratified_sample",
    "summarize",
    "write_report",
]
