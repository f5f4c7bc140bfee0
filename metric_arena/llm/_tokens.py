"""Dry runs: how many requests, tokens and dollars a judge run will take, before anything is sent.

Input tokens are counted with ``tiktoken`` for the judge model, offline: tiktoken downloads its
BPE files on first use, so when they are not in its cache yet this module seeds tiktoken's own
cache folder (``$TIKTOKEN_CACHE_DIR``, else ``<tmp>/data-gym-cache``) from the copies shipped in
the ``bpe-openai`` wheel, after checking that their sha256 is the one tiktoken expects. Chat
formatting adds 3 tokens per message and 3 for the reply's priming (OpenAI's counting rule).

Output tokens are estimated from the expected reply: the mean length of the paper's own example
replies (a short ``<thinking>`` and the rating); the ``max_tokens`` bound is shown apart.

Prices are OpenAI's list prices of 2024 in USD per million tokens; other models: cost unknown.
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

from lfrqa.errors import MissingDependency, RagQaArenaError
from metric_arena.llm._specs import parse_spec
from metric_arena.llm._types import Backend, ChatRequest

__all__ = [
    "BATCH_DISCOUNT",
    "PRICES_2024",
    "CostEstimate",
    "InputBudget",
    "TokenCounter",
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
    )


class InputBudget:
    """Refuses requests whose prompt exceeds ``max_input_tokens`` tokens (refuse, never truncate).

    Tokens are counted with tiktoken for ``model`` (OpenAI's chat counting rule; ``o200k_base``,
    an approximation, for models tiktoken does not know).

    >>> budget = InputBudget(10, "gpt-4o")
    >>> budget.refusal(ChatRequest([{"role": "user", "content": "word " * 50}]))[:38]
    'prompt has 58 tokens, over the max_inp'
    """

    def __init__(self, max_input_tokens: int, model: str):
        if isinstance(max_input_tokens, bool) or not isinstance(max_input_tokens, int) or max_input_tokens < 1:
            raise RagQaArenaError(f"max_input_tokens must be a positive integer, got {max_input_tokens!r}")
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
