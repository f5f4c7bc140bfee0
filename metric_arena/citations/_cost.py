"""``cite --dry-run``: what the LLM entailment path would send and cost, before anything is sent."""

from __future__ import annotations

import os

from lfrqa.errors import RagQaArenaError
from metric_arena.citations._entail import ENTAILMENT_MAX_TOKENS, check_entailment_spec, entailment_request
from metric_arena.citations._parse import Passages, cited_sentences, resolved
from metric_arena.citations._run import CiteConfig, read_cite_inputs
from metric_arena.llm import CompletionCache, RunConfig, backend_identity, cache_key, estimate_cost

__all__ = ["cite_dry_run"]


def _requests(inputs, config: CiteConfig) -> tuple[list, list]:
    """The requests every answer needs (each cited sentence against its passages joined) and those it may need
    (each passage alone, and the others without it, for a sentence citing several)."""
    needed, possible = [], []
    for row in inputs.predictions:
        if row["failed"]:
            continue
        passages = Passages.of(row, inputs.retrieved.get(row["qid"]), config.n_passages)
        for s in resolved(cited_sentences(row), passages):
            if not s["markers"] or s["invalid"]:
                continue
            needed.append(entailment_request("\n".join(passages.texts[p] for p in s["pids"]), s["text"]))
            if len(s["pids"]) > 1:
                for pid in s["pids"]:
                    possible.append(entailment_request(passages.texts[pid], s["text"]))
                    rest = "\n".join(passages.texts[p] for p in s["pids"] if p != pid)
                    possible.append(entailment_request(rest, s["text"]))
    return needed, possible


def cite_dry_run(predictions: str | os.PathLike, retrieved: str | os.PathLike, *, config: CiteConfig,
                 run: RunConfig | None = None) -> dict:
    """``{"needed": CostEstimate, "at_most": CostEstimate}`` of the ``llm:`` entailment path: the requests every
    cited sentence needs, and all it may need (ALCE's precision asks again for sentences citing several
    passages); requests in ``run``'s cache cost nothing. Sends nothing; reads no LFRQA file."""
    if config.entailment is None or check_entailment_spec(config.entailment)[0] != "llm":
        raise RagQaArenaError("--dry-run prices the LLM entailment path: give --entailment llm:BACKEND:MODEL "
                              "(nli: and the reference scores send nothing)")
    model = check_entailment_spec(config.entailment)[1]
    run = run if run is not None else RunConfig()
    inputs = read_cite_inputs(predictions, retrieved, config, lfrqa=False)
    needed, possible = _requests(inputs, config)
    identity = backend_identity(model, base_url=run.base_url, options=config.options, endpoint_name=run.endpoint_name)

    def estimate(requests):
        cached = None
        if run.use_cache and identity is not None and requests:
            with CompletionCache(run.cache_dir) as cache:
                keys = [cache_key(identity, r, 0) for r in requests]
                found = cache.get_many(keys)
            cached = [k in found and found[k].valid for k in keys]
        return estimate_cost(requests, model, expected_output_tokens=2, cached=cached)

    return {"needed": estimate(needed), "at_most": estimate(needed + possible), "max_tokens": ENTAILMENT_MAX_TOKENS}
