"""Dry runs: how many requests, tokens and dollars a judge run will take, before anything is sent.

Input tokens are counted with ``tiktoken`` for the judge model, offline: tiktoken downloads its
BPE files on first use, so when they are not in its cache yet this module seeds tiktoken's own
cache folder (``$TIKTOKEN_CACHE_DIR``, else ``<tmp>/data-gym-cache``) from the copies shipped in
the ``bpe-openai`` wheel, after checking that their sha256 is the one tiktoken expects. Chat
formatting adds 3 tokens per message and 3 for the reply's priming (OpenAI's counting rule).

Output tokens are estimated from the expected reply: the mean length of the paper's own example
replies (a short ``<thinking>`` and the rating); the ``max_tokens`` bound is shown apart.

Prices are OpenAI's list prices of 2024 in USD per million tokens; other models: cost unknown.

Prompt caching: OpenAI caches the longest prefix a prompt shares with recent ones, from 1,024
tokens on and in steps of 128, and bills those tokens at the cached-input price
(:data:`CACHED_INPUT_PRICES_2024`). The estimate takes the leading messages every request shares
(the judge's system prompt and three examples), rounds their tokens down to what OpenAI caches,
and assumes every request after the first hits the cache: the best case (a cache lives 5-10
minutes, and requests sent at once before the first finishes miss it).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from lfrqa.checks import check_int
from lfrqa.errors import MissingDependency
from metric_arena.llm._specs import parse_spec
from metric_arena.llm._types import Backend, ChatRequest

__all__ = [
    "BATCH_DISCOUNT",
    "CACHED_INPUT_PRICES_2024",
    "PRICES_2024",
    "CostEstimate",
    "InputBudget",
    "TokenCounter",
    "cacheable_tokens",
    "estimate_cost",
    "get_encoding",
    "make_budgets",
]

#: The Batch API's price as a share of the list price.
BATCH_DISCOUNT = 0.5
#: USD per 1M tokens (input, output), OpenAI list prices of 2024.
PRICES_2024: dict[str, tuple[float, float]] = {
    "gpt-4-0125-preview": (10.0, 30.0),
    "gpt-4-turbo": (10.0, 30.0),
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
}
#: USD per 1M cached input tokens with OpenAI's automatic prompt caching: (online, Batch API).
#: Source: OpenAI, "Prompt Caching in the API" (announced 2024-10-01) and openai.com/api/pricing
#: (checked for 2024-10): half the input price for gpt-4o and gpt-4o-mini; gpt-4-turbo and
#: gpt-4-0125-preview have no prompt caching. The Batch API entry is None where OpenAI does not
#: document caching together with the Batch API for the model (it does so only for later model
#: families): the Batch API price then applies in full.
CACHED_INPUT_PRICES_2024: dict[str, tuple[float, float | None]] = {
    "gpt-4o": (1.25, None),
    "gpt-4o-mini": (0.075, None),
}
#: OpenAI caches prompt prefixes of at least this many tokens, in steps of PROMPT_CACHE_STEP.
PROMPT_CACHE_MIN_TOKENS = 1024
PROMPT_CACHE_STEP = 128

_BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_BPE_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_DEFAULT_ENCODING = "o200k_base"
_lock = threading.Lock()
_encodings: dict = {}


def _seed_tiktoken_cache(name: str) -> None:
    """Put the BPE file of ``name`` into tiktoken's cache from the bpe-openai wheel, if missing."""
    expected = _BPE_SHA256.get(name)
    if expected is None:
        return
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir == "":
        return
    cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    target = Path(cache_dir) / hashlib.sha1(_BPE_URL.format(name=name).encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return
    try:
        from importlib.resources import files

        data = gzip.decompress((files("bpe_openai.data") / f"{name}.tiktoken.gz").read_bytes())
    except (ImportError, FileNotFoundError, ModuleNotFoundError):
        return  # tiktoken will try to download it
    if hashlib.sha256(data).hexdigest() != expected:
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        pass


def get_encoding(model: str):
    """The tiktoken encoding of an OpenAI model (``o200k_base`` for unknown models), offline.

    Returns ``(encoding, exact)`` where ``exact`` is False when the model is not an OpenAI model
    tiktoken knows (the count is then an approximation).
    """
    try:
        import tiktoken
    except ImportError as error:
        raise MissingDependency(f'counting tokens needs tiktoken: pip install tiktoken bpe-openai ({error})') from error
    try:
        name, exact = tiktoken.encoding_name_for_model(model), True
    except KeyError:
        name, exact = _DEFAULT_ENCODING, False
    with _lock:
        if name not in _encodings:
            _seed_tiktoken_cache(name)
            _encodings[name] = tiktoken.get_encoding(name)
        return _encodings[name], exact


class TokenCounter:
    """Counts chat tokens, remembering the counts of repeated texts (the fixed prompt prefix)."""

    def __init__(self, encoding):
        self.encoding = encoding
        self.memo: dict[str, int] = {}

    def text(self, text: str) -> int:
        count = self.memo.get(text)
        if count is None:
            count = len(self.encoding.encode(text, disallowed_special=()))
            if len(self.memo) < 100_000:
                self.memo[text] = count
        return count

    def chat(self, messages: Sequence[dict]) -> int:
        return sum(3 + self.text(m["role"]) + self.text(m["content"]) for m in messages) + 3


@dataclass
class CostEstimate:
    judge: str
    model: str
    n_requests: int
    n_cached: int
    input_tokens: int
    output_tokens_estimate: int
    output_tokens_max: int
    exact_tokenizer: bool
    input_price_per_m: float | None
    output_price_per_m: float | None
    cost_usd: float | None
    cost_usd_max: float | None
    #: tokens of the leading messages every request to send shares, and how many of them OpenAI caches
    prefix_tokens: int = 0
    cached_prefix_tokens: int = 0
    cached_input_price_per_m: float | None = None
    batch_cached_input_price_per_m: float | None = None
    #: expected cost with prompt caching (None: no cached price for the model, or nothing cacheable)
    cost_usd_prompt_caching: float | None = None
    #: the same at Batch API prices, where caching with the Batch API is documented
    cost_usd_batch_prompt_caching: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def estimate_cost(
    requests: Iterable[ChatRequest],
    judge: str,
    *,
    expected_output_tokens: float,
    cached: Iterable[bool] | None = None,
) -> CostEstimate:
    """Tokens and dollars of the requests not already cached (``cached``: one flag per request)."""
    backend, model = parse_spec(judge)
    encoding, exact = get_encoding(model)
    counter = TokenCounter(encoding)
    requests = list(requests)
    flags = [False] * len(requests) if cached is None else list(cached)
    n_requests = n_cached = input_tokens = max_out = 0
    for request, is_cached in zip(requests, flags):
        n_requests += 1
        if is_cached:
            n_cached += 1
            continue
        input_tokens += counter.chat(request.messages)
        max_out += int(request.max_tokens)
    to_send = n_requests - n_cached
    prefix = _shared_prefix_tokens([r for r, c in zip(requests, flags) if not c], counter)
    output_estimate = int(round(expected_output_tokens * to_send))
    price = PRICES_2024.get(model) if backend == "openai" else None
    if price is None:
        cost = cost_max = None
    else:
        cost = (input_tokens * price[0] + output_estimate * price[1]) / 1e6
        cost_max = (input_tokens * price[0] + max_out * price[1]) / 1e6
    return CostEstimate(
        judge=judge,
        model=model,
        n_requests=n_requests,
        n_cached=n_cached,
        input_tokens=input_tokens,
        output_tokens_estimate=output_estimate,
        output_tokens_max=max_out,
        exact_tokenizer=exact,
        input_price_per_m=None if price is None else price[0],
        output_price_per_m=None if price is None else price[1],
        cost_usd=cost,
        cost_usd_max=cost_max,
        **_prompt_caching(model if backend == "openai" else None, cost, prefix, to_send),
    )


def cacheable_tokens(prefix_tokens: int) -> int:
    """How many tokens of a shared prefix OpenAI's prompt caching bills at the cached price.

    >>> cacheable_tokens(1523), cacheable_tokens(1000)
    (1408, 0)
    """
    if prefix_tokens < PROMPT_CACHE_MIN_TOKENS:
        return 0
    return PROMPT_CACHE_MIN_TOKENS + (prefix_tokens - PROMPT_CACHE_MIN_TOKENS) // PROMPT_CACHE_STEP * PROMPT_CACHE_STEP


def _shared_prefix_tokens(requests: Sequence[ChatRequest], counter: TokenCounter) -> int:
    """Tokens of the leading messages all ``requests`` share (never a request's last message)."""
    if len(requests) < 2:
        return 0
    first = requests[0].messages
    shared = len(first) - 1
    for request in requests[1:]:
        messages = request.messages
        shared = min(shared, len(messages) - 1)
        k = 0
        while k < shared and messages[k] == first[k]:
            k += 1
        shared = k
        if not shared:
            return 0
    return sum(3 + counter.text(m["role"]) + counter.text(m["content"]) for m in first[:shared])


def _prompt_caching(model: str | None, cost: float | None, prefix: int, to_send: int) -> dict:
    """The prompt-caching fields of a :class:`CostEstimate` (empty when caching does not apply)."""
    prices = CACHED_INPUT_PRICES_2024.get(model) if model is not None else None
    cached = cacheable_tokens(prefix)
    fields: dict = {"prefix_tokens": prefix, "cached_prefix_tokens": cached}
    if prices is None or cost is None:
        return fields
    online, batch = prices
    hits = max(to_send - 1, 0) * cached
    list_input = PRICES_2024[model][0]
    fields.update(cached_input_price_per_m=online, batch_cached_input_price_per_m=batch,
                  cost_usd_prompt_caching=cost - hits * (list_input - online) / 1e6)
    if batch is not None:
        fields["cost_usd_batch_prompt_caching"] = cost * BATCH_DISCOUNT - hits * (list_input * BATCH_DISCOUNT - batch) / 1e6
    return fields


class InputBudget:
    """Refuses requests whose prompt exceeds ``max_input_tokens`` tokens (refuse, never truncate).

    Tokens are counted with tiktoken for ``model`` (OpenAI's chat counting rule; ``o200k_base``,
    an approximation, for models tiktoken does not know).

    >>> budget = InputBudget(10, "gpt-4o")
    >>> budget.refusal(ChatRequest([{"role": "user", "content": "word " * 50}]))[:38]
    'prompt has 58 tokens, over the max_inp'
    """

    def __init__(self, max_input_tokens: int, model: str):
        check_int("max_input_tokens", max_input_tokens, minimum=1)
        self.limit = max_input_tokens
        self.model = model
        encoding, self.exact = get_encoding(model)
        self._counter = TokenCounter(encoding)

    def count(self, request: ChatRequest) -> int:
        return self._counter.chat(request.messages)

    def refusal(self, request: ChatRequest) -> str | None:
        """None when the request fits, else why it is refused."""
        n = self.count(request)
        if n <= self.limit:
            return None
        approx = "" if self.exact else " (approximate count)"
        return (f"prompt has {n} tokens{approx}, over the max_input_tokens budget of {self.limit}: not sent. "
                "Raise --max-input-tokens up to the model's context window, or shorten the input")


def make_budgets(backends: Sequence[Backend], max_input_tokens: int | None) -> dict[str, InputBudget]:
    """One :class:`InputBudget` per backend spec, or none without a budget."""
    if max_input_tokens is None:
        return {}
    return {b.spec: InputBudget(max_input_tokens, b.model) for b in backends}
