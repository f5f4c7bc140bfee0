"""Talking to LLMs: backends, requests and replies, the cache, retries, rate limits, token counts
and OpenAI's Batch API. Nothing here knows about judging or the benchmark's prompts.

>>> from metric_arena.llm import ChatRequest, make_backend
>>> backend = make_backend("openai:gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")
>>> backend.identity()
{'backend': 'openai', 'model': 'gpt-4o-mini', 'url': 'http://127.0.0.1:8000/v1'}
"""

from metric_arena.llm._batch_api import (
    TERMINAL_STATUSES,
    BatchNotReady,
    batch_client,
    batch_status,
    collect,
    custom_ids,
    submit_batches,
    wait_for_batches,
)
from metric_arena.llm._batch_files import (
    MANIFEST,
    MAX_BYTES,
    MAX_REQUESTS,
    chat_body,
    parse_output_lines,
    read_manifest,
    write_batch_files,
)
from metric_arena.llm._cache import (
    CACHE_ENV,
    CachedCompletion,
    CompletionCache,
    cache_key,
    default_cache_dir,
)
from metric_arena.llm._openai import redact
from metric_arena.llm._ratelimit import RateLimiter, estimate_tokens
from metric_arena.llm._runner import (
    FatalBackendError,
    RequestResult,
    RetryPolicy,
    Runner,
    max_reply_chars,
)
from metric_arena.llm._tasks import Progress, gather_or_cancel, run_sync, run_until_stopped
from metric_arena.llm._specs import (
    BACKENDS,
    backend_identity,
    make_backend,
    make_backends,
    model_backend,
    parse_spec,
)
from metric_arena.llm._tokens import (
    BATCH_DISCOUNT,
    CACHED_INPUT_PRICES_2024,
    PRICES_2024,
    CostEstimate,
    InputBudget,
    TokenCounter,
    estimate_cost,
    get_encoding,
    make_budgets,
)
from metric_arena.llm._types import (
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    ServerUnreachable,
    TransientBackendError,
)

__all__ = [
    "BACKENDS",
    "BATCH_DISCOUNT",
    "CACHED_INPUT_PRICES_2024",
    "CACHE_ENV",
    "MANIFEST",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "PRICES_2024",
    "TERMINAL_STATUSES",
    "AuthenticationFailed",
    "Backend",
    "BackendError",
    "BadReply",
    "BatchNotReady",
    "CachedCompletion",
    "ChatRequest",
    "Completion",
    "CompletionCache",
    "CostEstimate",
    "FatalBackendError",
    "InputBudget",
    "ModelNotFound",
    "Progress",
    "RateLimiter",
    "RequestResult",
    "RetryPolicy",
    "Runner",
    "ServerUnreachable",
    "TokenCounter",
    "TransientBackendError",
    "backend_identity",
    "batch_client",
    "batch_status",
    "cache_key",
    "chat_body",
    "collect",
    "custom_ids",
    "default_cache_dir",
    "estimate_cost",
    "estimate_tokens",
    "gather_or_cancel",
    "get_encoding",
    "make_backend",
    "make_backends",
    "make_budgets",
    "model_backend",
    "max_reply_chars",
    "parse_output_lines",
    "parse_spec",
    "read_manifest",
    "redact",
    "run_sync",
    "run_until_stopped",
    "submit_batches",
    "wait_for_batches",
    "write_batch_files",
]
