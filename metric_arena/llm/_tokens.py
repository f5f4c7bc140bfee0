"""Dry runs: how many requests, tokens and dollars a judge run will take, before anything is sent.

Input tokens are counted offline for the judge model: ``tiktoken``'s model-to-encoding map names
the encoding (``o200k_base`` for models it does not know), and ``bpe_openai.get_encoding`` gives
that encoding from the BPE files shipped in the ``bpe-openai`` wheel (the same token ids as
tiktoken's, with no download and nothing written to tiktoken's cache). Chat formatting adds 3
tokens per message and 3 for the reply's priming (OpenAI's counting rule).

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

import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from lfrqa.checks import check_int
from lfrqa.errors import MissingDependency
from metric_arena.llm._specs import parse_spec
from metric_arena.llm._types import OPENAI, Backend, ChatRequest

__all__ = [
    "BATCH_DISCOUNT",
    "CACHED_INPUT_PRICES_2024",
    "PRICES_2024",
    "CostEstimate",
    "InputBudget",
    "TokenCounter",
    "cacheable_tokens",
    "encoding_name",
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

_DEFAULT_ENCODING = "o200k_base"
_lock = threading.Lock()
_encodings: dict = {}
# The model whose encoding (o200k_base, also the one of models tiktoken does not know) every Session loads
# before its first request: what the verdicts' style counts use.
_PRELOADED_MODEL = "gpt-4o"


def encodings_loaded() -> bool:
    """Whether the encoding every Session loads before its first request is loaded in this process."""
    return _DEFAULT_ENCODING in _encodings


def load_encodings() -> None:
    """Load the encoding every Session needs before its first request (once per process; slow the first
    time): ``o200k_base``, with tiktoken's model map that names it."""
    get_encoding(_PRELOADED_MODEL)


def encoding_name(model: str) -> tuple[str, bool]:
    """``(encoding name, exact)`` of an OpenAI model from tiktoken's model-to-encoding map;
    ``("o200k_base", False)`` for a model tiktoken does not know (the count is an approximation).

    >>> encoding_name("gpt-4-0125-preview"), encoding_name("my-local-model")
    (('cl100k_base', True), ('o200k_base', False))
    """
    try:
        import tiktoken
    except ImportError as error:
        raise MissingDependency(f"counting tokens needs tiktoken's model map: pip install tiktoken ({error})") from error
    try:
        return tiktoken.encoding_name_for_model(model), True
    except KeyError:
        return _DEFAULT_ENCODING, False


def get_encoding(model: str):
    """The BPE encoding of an OpenAI model (``o200k_base`` for unknown models), offline.

    Returns ``(encoding, exact)`` where ``exact`` is False when the model is not an OpenAI model
    tiktoken knows (the count is then an approximation). The encoding is ``bpe_openai``'s, whose
    ``encode`` gives tiktoken's token ids, and takes text of any length (in pieces over 250,000 characters).

    >>> encoding, _ = get_encoding("gpt-4o")
    >>> len(encoding.encode("word " * 300_000)) == 300_000 + 1
    True
    """
    name, exact = encoding_name(model)
    with _lock:
        if name not in _encodings:
            try:
                import bpe_openai
            except ImportError as error:
                raise MissingDependency(f"counting tokens needs bpe-openai: pip install bpe-openai ({error})") from error
            _encodings[name] = _Encoding(bpe_openai.get_encoding(name))
        return _encodings[name], exact


#: Texts longer than this are encoded in pieces cut at whitespace (bpe_openai refuses a text of
#: 1,000,000 characters or more: "Input too long to encode safely").
_ENCODE_PIECE = 250_000


class _Encoding:
    """A BPE encoding whose ``encode`` takes text of any length: a text over 250,000 characters is encoded
    in pieces cut just before a whitespace character (the ids may differ from the whole text's by a token
    per cut at most; a piece with no whitespace in its last 10% is cut anywhere)."""

    def __init__(self, encoding):
        self._encoding = encoding
        self.name = getattr(encoding, "name", "")
        # the Rust tokenizer's own count (no list of ids made: 37 -> 27 us a 650-character text), where this
        # bpe-openai has it; else the length of encode_ordinary's ids
        backend = getattr(encoding, "_backend", None)
        self._count = getattr(backend, "count", None)

    def encode(self, text: str, **options) -> list[int]:
        if len(text) <= _ENCODE_PIECE:
            return self._encoding.encode(text, **options)
        ids: list[int] = []
        start = 0
        while start < len(text):
            end = min(start + _ENCODE_PIECE, len(text))
            if end < len(text):
                floor = end - _ENCODE_PIECE // 10
                cut = max(text.rfind(" ", floor, end), text.rfind("\n", floor, end))
                end = cut if cut > start else end
            ids.extend(self._encoding.encode(text[start:end], **options))
            start = end
        return ids

    def count(self, text: str) -> int:
        """``len(encode(text, disallowed_special=()))``: the tokens of ``text``, special-token text counted as
        text: the Rust tokenizer's count where bpe-openai has one, else ``encode_ordinary``'s ids (without
        ``encode``'s per-call record and metrics)."""
        if len(text) > _ENCODE_PIECE:
            return len(self.encode(text, disallowed_special=()))
        if self._count is not None and text:
            try:
                return self._count(text)
            except UnicodeEncodeError:  # a lone surrogate: encode_ordinary replaces it first
                pass
        return len(self._encoding.encode_ordinary(text))


class TokenCounter:
    """Counts chat tokens, remembering the counts of repeated texts (the fixed prompt prefix)."""

    def __init__(self, encoding):
        self.encoding = encoding
        self.memo: dict[str, int] = {}

    def text(self, text: str) -> int:
        count = self.memo.get(text)
        if count is None:
            count = self.encoding.count(text)
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
    price = PRICES_2024.get(model) if backend == OPENAI else None
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
        **_prompt_caching(model if backend == OPENAI else None, cost, prefix, to_send),
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

    Tokens are counted with the encoding of ``model`` (:func:`get_encoding`: OpenAI's chat counting
    rule; ``o200k_base``, an approximation, for models tiktoken's map does not know).

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
