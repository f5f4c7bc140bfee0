"""Talking to LLMs: backends, requests and replies, how a run's requests run (:class:`RunConfig`,
:class:`Session`), the cache, retries, rate limits and token counts; OpenAI's Batch API in
:mod:`metric_arena.llm.batch`. Nothing here knows about judging or the benchmark's prompts.

>>> from metric_arena.llm import ChatRequest, make_backend
>>> backend = make_backend("openai:gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")
>>> backend.identity()
{'backend': 'openai', 'model': 'gpt-4o-mini', 'url': 'http://127.0.0.1:8000/v1'}
"""

from lfrqa.exports import export_names
from metric_arena.llm._cache import CompletionCache, cache_key
from metric_arena.llm._openai import redact
from metric_arena.llm._ratelimit import RateLimiter
from metric_arena.llm._runner import DEFAULT_MAX_CONCURRENCY, RequestResult, RetryPolicy
from metric_arena.llm._session import RunConfig, Session
from metric_arena.llm._specs import BACKENDS, HF, OPENAI, VLLM, backend_identity, make_backend, model_backend, parse_spec
from metric_arena.llm._tasks import Progress, synchronous
from metric_arena.llm._tokens import (
    PRICES_2024,
    CostEstimate,
    InputBudget,
    estimate_cost,
    get_encoding,
)
from metric_arena.llm._types import (
    AuthenticationFailed,
    Backend,
    BackendError,
    ChatRequest,
    Completion,
    ModelNotFound,
    ServerUnreachable,
)

__all__ = [
    "PRICES_2024",
    "AuthenticationFailed",
    "Backend",
    "BackendError",
    "ChatRequest",
    "Completion",
    "CompletionCache",
    "CostEstimate",
    "InputBudget",
    "ModelNotFound",
    "Progress",
    "RateLimiter",
    "RetryPolicy",
    "RunConfig",
    "ServerUnreachable",
    "Session",
    "backend_identity",
    "cache_key",
    "estimate_cost",
    "get_encoding",
    "make_backend",
    "model_backend",
    "parse_spec",
    "redact",
    "synchronous",
]

# Attributes, not listed (the room's list stays short): the backend registry and its names (compare a spec's
# backend with these, never a literal), the default concurrency, and what Session.ask returns (metric_arena.judge.Ask builds on it).
_ATTRIBUTES = (BACKENDS, HF, OPENAI, VLLM, RequestResult, DEFAULT_MAX_CONCURRENCY)

export_names(globals())
