"""Dry runs of answer generation: requests, tokens and dollars before anything is sent."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from metric_arena.generate._inputs import GenerationConfig, check_model, retrieved_rows
from metric_arena.llm import (
    CompletionCache,
    CostEstimate,
    RunConfig,
    backend_identity,
    cache_key,
    estimate_cost,
    get_encoding,
)

__all__ = ["expected_generation_reply_tokens", "format_generation_estimate", "generation_dry_run"]


#: Words of the reply each generation prompt asks for: v2 asks for at most 50-60 words; v1 asks for
#: a <thinking> block under 50 words, then an answer with no stated limit, taken as LFRQA's mean
#: answer length (79.5 words over the 14,020 test answers).
_GENERATION_REPLY_WORDS = {"v1": (50, 80), "v2": (0, 60), "cite": (0, 95)}  # cite: v1's answer + ~15 markers' words
_TOKENS_PER_WORD = 4 / 3  # OpenAI's rule of thumb for English: 100 tokens ~ 75 words


def expected_generation_reply_tokens(model: str, prompt: str) -> float:
    """Expected tokens of one generated answer for the paper's prompt ``v1`` or ``v2``, or our ``cite`` (see above)."""
    thinking_words, answer_words = _GENERATION_REPLY_WORDS[prompt]
    tokens = (thinking_words + answer_words) * _TOKENS_PER_WORD
    if thinking_words:
        encoding, _ = get_encoding(model)
        tokens += len(encoding.encode("<thinking></thinking>\n", disallowed_special=()))
    return tokens


def generation_dry_run(
    retrieved: str | os.PathLike | Iterable[Mapping],
    model: str,
    *,
    generation: GenerationConfig | None = None,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
    limit: int | None = None,
) -> CostEstimate:
    """Requests, input tokens, expected output tokens and the cost of :func:`generate_answers`; sends nothing.

    Expected output comes from the length the prompt asks for (``_GENERATION_REPLY_WORDS``);
    the ``max_tokens`` bound and the cost at that bound are reported apart. Requests already
    answered in ``run``'s cache cost nothing; ``limit``: the first N questions only. Returns a :class:`metric_arena.llm.CostEstimate`.
    """
    check_model(model)
    generation = generation if generation is not None else GenerationConfig()
    run = run if run is not None else RunConfig()
    rows = retrieved_rows(retrieved, limit=limit)
    requests = [generation.request(r, data_dir=data_dir) for r in rows]
    cached = None
    identity = backend_identity(model, base_url=run.base_url, options=generation.options,
                                endpoint_name=run.endpoint_name)
    if run.use_cache and identity is not None:
        with CompletionCache(run.cache_dir) as cache:
            keys = [cache_key(identity, r, 0) for r in requests]
            found = cache.get_many(keys)
        cached = [k in found and found[k].valid for k in keys]
    expected = min(generation.max_tokens, expected_generation_reply_tokens(model, generation.prompt))
    return estimate_cost(requests, model, expected_output_tokens=expected, cached=cached)


def format_generation_estimate(estimate) -> str:
    """Lines for ``generate --dry-run``, ending with ``estimated_cost_usd: N`` (the expected cost)."""
    lines = [
        f"model {estimate.judge}",
        f"  requests:       {estimate.n_requests:,} ({estimate.n_cached:,} already cached, "
        f"{estimate.n_requests - estimate.n_cached:,} to send)",
        f"  input tokens:   {estimate.input_tokens:,}"
        + ("" if estimate.exact_tokenizer else " (approximate: o200k_base tokenizer, not the model's own)"),
        f"  output tokens:  ~{estimate.output_tokens_estimate:,} expected "
        f"(at most {estimate.output_tokens_max:,} with max_tokens)",
    ]
    if estimate.cost_usd_max is None:
        lines.append(f"  cost:           unknown for model {estimate.model!r}")
        lines.append("estimated_cost_usd: nan")
    else:
        lines.append(f"  cost:           ~${estimate.cost_usd:,.2f} expected, at most ${estimate.cost_usd_max:,.2f} "
                     f"(${estimate.input_price_per_m:g}/${estimate.output_price_per_m:g} per M tokens in/out, "
                     "OpenAI list prices of 2024)")
        lines.append(f"estimated_cost_usd: {estimate.cost_usd:.4f}")
    return "\n".join(lines)
