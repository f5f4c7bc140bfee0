"""Dry runs of the judge: requests, tokens and dollars per judge, before anything is sent.

Input tokens are counted with tiktoken (:func:`metric_arena.llm.get_encoding`, offline). Output
tokens are estimated from the expected reply: the mean length of the paper's own example replies
(a short ``<thinking>`` and the rating); the ``max_tokens`` bound is shown apart. Prices are
OpenAI's list prices of 2024 (:data:`metric_arena.llm.PRICES_2024`); other models: cost unknown.
Where the model's cached-input price is known (:data:`metric_arena.llm.CACHED_INPUT_PRICES_2024`),
the cost with OpenAI's automatic prompt caching of the fixed prefix (system prompt and the three
examples) is shown too, and with ``batch`` where OpenAI documents caching with the Batch API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from metric_arena.judge._config import JudgeSpec, judge_config
from metric_arena.judge._inputs import JudgeInputs, old_input_form
from metric_arena.judge._plan import DEFAULT_JUDGE, planned_requests
from metric_arena.llm import (
    PRICES_2024,
    CompletionCache,
    CostEstimate,
    RunConfig,
    backend_identity,
    cache_key,
    estimate_cost,
    get_encoding,
    parse_spec,
)
from metric_arena.llm.batch import BATCH_DISCOUNT
from metric_arena.prompts import judge_examples

__all__ = ["expected_judge_reply_tokens", "format_estimate", "judge_dry_run"]


def expected_judge_reply_tokens(model: str, data_dir: str | os.PathLike | None = None) -> float:
    """Mean tokens of the paper's example judge replies (``<thinking>…</thinking><rating>n</rating>``)."""
    encoding, _ = get_encoding(model)
    examples = judge_examples(data_dir)
    replies = [f"<thinking>{e['thinking']}</thinking><rating>{e['label']}</rating>" for e in examples]
    return sum(len(encoding.encode(r, disallowed_special=())) for r in replies) / len(replies)


def format_estimate(estimates: Sequence[CostEstimate], *, batch: bool = False) -> str:
    """Human-readable lines, ending with the machine-readable ``estimated_cost_usd: <number>``
    (``nan`` when a judge's price is unknown). ``batch``: at the Batch API's price (half). Where the
    model's cached-input price is known, a line with OpenAI's automatic prompt caching follows (and
    ``estimated_cost_usd_prompt_caching: <number>`` before the last line)."""
    factor = BATCH_DISCOUNT if batch else 1.0
    lines = []
    total = 0.0
    cached_total = 0.0
    any_caching = False
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
            continue
        total += est.cost_usd * factor
        lines.append(f"  cost:                  ${est.cost_usd * factor:,.2f} expected, at most "
                     f"${est.cost_usd_max * factor:,.2f} "
                     f"(${est.input_price_per_m * factor:g}/${est.output_price_per_m * factor:g} per M tokens "
                     f"in/out, OpenAI {'Batch API' if batch else 'list'} prices of 2024; retries not included)")
        caching, line = _caching_line(est, batch)
        if line:
            lines.append(line)
        any_caching = any_caching or caching is not None
        cached_total += est.cost_usd * factor if caching is None else caching
    if any_caching:
        lines.append(f"estimated_cost_usd_prompt_caching: {'nan' if unknown else f'{cached_total:.4f}'}")
    lines.append(f"estimated_cost_usd: {'nan' if unknown else f'{total:.4f}'}")
    return "\n".join(lines)


def _caching_line(est: CostEstimate, batch: bool) -> tuple[float | None, str | None]:
    """(cost with prompt caching or None where it has no price, the line saying so) for one priced judge."""
    if est.n_requests <= est.n_cached:  # nothing to send: no prefix to cache, nothing to say of its size
        return None, "  with prompt caching:   nothing to send: every request is answered from the judge cache"
    if est.cached_input_price_per_m is None:
        return None, f"  with prompt caching:   no cached-input price for {est.model!r} (OpenAI has no prompt caching for it)"
    share = (f"{est.cached_prefix_tokens:,} of the {est.prefix_tokens:,}-token fixed prefix of each request "
             f"at ${est.cached_input_price_per_m:g} per M (OpenAI's automatic prompt caching; best case: every "
             "request after the first hits the cache)")
    if not est.cached_prefix_tokens:
        return None, (f"  with prompt caching:   no saving: the fixed prefix ({est.prefix_tokens:,} tokens) is "
                      "under the 1,024 tokens OpenAI caches")
    if not batch:
        return est.cost_usd_prompt_caching, f"  with prompt caching:   ${est.cost_usd_prompt_caching:,.2f} expected: {share}"
    if est.cost_usd_batch_prompt_caching is None:
        return None, (f"  with prompt caching:   not documented by OpenAI together with the Batch API for "
                      f"{est.model!r}: the Batch API price above applies (online with caching: "
                      f"${est.cost_usd_prompt_caching:,.2f})")
    return est.cost_usd_batch_prompt_caching, (
        f"  with prompt caching:   ${est.cost_usd_batch_prompt_caching:,.2f} expected with the Batch API: "
        f"{share.replace(f'${est.cached_input_price_per_m:g}', f'${est.batch_cached_input_price_per_m:g}')}")


@old_input_form("judge_dry_run")
def judge_dry_run(
    inputs: JudgeInputs,
    *,
    judge: JudgeSpec = DEFAULT_JUDGE,
    run: RunConfig | None = None,
    data_dir: str | os.PathLike | None = None,
) -> list[CostEstimate]:
    """What :func:`~metric_arena.judge_pairs` would send, per judge, without sending anything.

    ``inputs``: the pairs (a :class:`~metric_arena.judge.JudgeInputs`; the old form ``predictions,
    references, questions, ids=..., sample=...`` is deprecated). Requests already answered in the cache
    (``run``'s) are counted apart and cost nothing. ``inputs.sample`` counts the same stratified
    sub-sample the judge would draw (``domains``, the judge's ``seed``).
    """
    config, run = judge_config(judge), run if run is not None else RunConfig()
    requests = planned_requests(inputs, order=config.order, seed=config.seed, data_dir=data_dir)
    cache = CompletionCache(run.cache_dir) if run.use_cache else None
    estimates = []
    try:
        for spec in config.specs:
            backend, model = parse_spec(spec)
            identity = backend_identity(spec, base_url=run.base_url, options=config.options,
                                        endpoint_name=run.endpoint_name)
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
