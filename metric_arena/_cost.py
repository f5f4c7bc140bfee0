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
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from metric_arena._backends import ChatRequest, parse_spec

__all__ = [
    "PRICES_2024",
    "CostEstimate",
    "count_chat_tokens",
    "estimate_cost",
    "format_estimate",
    "get_encoding",
    "judge_dry_run",
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
        raise ImportError(f'counting tokens needs tiktoken: pip install tiktoken bpe-openai ({error})') from error
    try:
        name, exact = tiktoken.encoding_name_for_model(model), True
    except KeyError:
        name, exact = _DEFAULT_ENCODING, False
    with _lock:
        if name not in _encodings:
            _seed_tiktoken_cache(name)
            _encodings[name] = tiktoken.get_encoding(name)
        return _encodings[name], exact


class _Counter:
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


def count_chat_tokens(messages: Sequence[dict], model: str = "gpt-4o") -> int:
    """Prompt tokens of a chat request for ``model`` (OpenAI's counting rule)."""
    encoding, _ = get_encoding(model)
    return _Counter(encoding).chat(messages)


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
    counter = _Counter(encoding)
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


def expected_judge_reply_tokens(model: str, data_dir: str | os.PathLike | None = None) -> float:
    """Mean tokens of the paper's example judge replies (``<thinking>…</thinking><rating>n</rating>``)."""
    from metric_arena._prompts import JUDGE_EXAMPLES_FILE, _text

    encoding, _ = get_encoding(model)
    examples = json.loads(_text(JUDGE_EXAMPLES_FILE, None if data_dir is None else str(data_dir)))
    replies = [f"<thinking>{e['thinking']}</thinking><rating>{e['label']}</rating>" for e in examples]
    return sum(len(encoding.encode(r, disallowed_special=())) for r in replies) / len(replies)


#: Words of the reply each generation prompt asks for: v2 asks for at most 50-60 words; v1 asks for
#: a <thinking> block under 50 words, then an answer with no stated limit, taken as LFRQA's mean
#: answer length (79.5 words over the 14,020 test answers).
_GENERATION_REPLY_WORDS = {"v1": (50, 80), "v2": (0, 60)}
_TOKENS_PER_WORD = 4 / 3  # OpenAI's rule of thumb for English: 100 tokens ~ 75 words


def expected_generation_reply_tokens(model: str, prompt: str) -> float:
    """Expected tokens of one generated answer for the paper's prompt ``v1`` or ``v2`` (see above)."""
    thinking_words, answer_words = _GENERATION_REPLY_WORDS[prompt]
    tokens = (thinking_words + answer_words) * _TOKENS_PER_WORD
    if thinking_words:
        encoding, _ = get_encoding(model)
        tokens += len(encoding.encode("<thinking></thinking>\n", disallowed_special=()))
    return tokens


def format_estimate(estimates: Sequence[CostEstimate], *, batch: bool = False) -> str:
    """Human-readable lines, ending with the machine-readable ``estimated_cost_usd: <number>``
    (``nan`` when a judge's price is unknown). ``batch``: at the Batch API's price (half)."""
    factor = BATCH_DISCOUNT if batch else 1.0
    lines = []
    total = 0.0
    unknown = False
    for est in estimates:
        lines.append(f"judge {est.judge}")
        lines.append(f"  requests:              {est.n_requests:,} ({est.n_cached:,} already cached, "
                     f"{est.n_requests - est.n_cached:,} to send)")
        note = "" if est.exact_tokenizer else " (approximate: o200k_base tokenizer, not the model's own)"
        lines.append(f"  input tokens:          {est.input_tokens:,}{note}")
        lines.append(f"  output tokens:         ~{est.output_tokens_estimate:,} expected "
                     f"(at most {est.output_tokens_max:,} with max_tokens)")
        if est.cost_usd is None:
            unknown = True
            lines.append(f"  cost:                  unknown for model {est.model!r} "
                         f"(prices known for: {', '.join(PRICES_2024)})")
        else:
            total += est.cost_usd * factor
            lines.append(f"  cost:                  ${est.cost_usd * factor:,.2f} expected, at most "
                         f"${est.cost_usd_max * factor:,.2f} "
                         f"(${est.input_price_per_m * factor:g}/${est.output_price_per_m * factor:g} per M tokens "
                         f"in/out, OpenAI {'Batch API' if batch else 'list'} prices of 2024; retries not included)")
    lines.append(f"estimated_cost_usd: {'nan' if unknown else f'{total:.4f}'}")
    return "\n".join(lines)


def judge_dry_run(
    predictions: Sequence[str],
    references: Sequence[str],
    questions: Sequence[str],
    *,
    ids: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    judge="openai:gpt-4-0125-preview",
    base_url: str | None = None,
    order: str = "paper",
    seed: int = 0,
    sample: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    data_dir: str | os.PathLike | None = None,
) -> list[CostEstimate]:
    """What :func:`~metric_arena.judge_pairs` would send, per judge, without sending anything.

    Requests already answered in the cache are counted apart and cost nothing. ``sample`` counts
    the same stratified sub-sample the judge would draw (``domains``, ``seed``).
    """
    from metric_arena._cache import CompletionCache, cache_key
    from metric_arena._judge import _planned_requests

    requests = _planned_requests(predictions, references, questions, ids=ids, domains=domains, order=order, seed=seed,
                                 sample=sample, data_dir=data_dir)
    specs = [judge] if isinstance(judge, str) else list(judge)
    cache = CompletionCache(cache_dir) if use_cache else None
    estimates = []
    try:
        for spec in specs:
            backend, model = parse_spec(spec)
            identity = _identity_for(spec, base_url)
            if cache is not None and identity is not None:
                keys = [cache_key(identity, r, 0) for r in requests]
                found = cache.get_many(keys)
                cached = [k in found and found[k].valid for k in keys]
            else:
                cached = None
            estimates.append(
                estimate_cost(
                    requests,
                    spec,
                    expected_output_tokens=expected_judge_reply_tokens(model, data_dir),
                    cached=cached,
                )
            )
    finally:
        if cache is not None:
            cache.close()
    return estimates


def _identity_for(spec: str, base_url: str | None = None) -> dict | None:
    """The cache identity a spec's backend would have, without loading a model or a client."""
    from urllib.parse import urlsplit

    backend, model = parse_spec(spec)
    if backend == "openai":
        from metric_arena._backends.openai import OPENAI_BASE_URL

        url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        return {"backend": "openai", "model": model, "host": urlsplit(url).hostname}
    if backend == "hf":
        return {"backend": "hf", "model": model}
    return None
