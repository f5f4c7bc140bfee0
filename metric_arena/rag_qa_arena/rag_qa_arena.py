# Copyright 2024 The rag-qa-arena authors. Licensed under the Apache License, Version 2.0.
"""RAG-QA Arena: pairwise LLM judging of long-form answers against LFRQA (an ``evaluate`` module).

A thin wrapper over :func:`metric_arena.judge_pairs`; everything is implemented there.
"""

import datasets
import evaluate

from metric_arena import DEFAULT_JUDGE, judge_pairs

_CITATION = """\
@article{han2024ragqaarena,
  title   = {RAG-QA Arena: Evaluating Domain Robustness for Long-form Retrieval Augmented Question Answering},
  author  = {Han, Rujun and Zhang, Yuhao and Qi, Peng and Xu, Yumo and Wang, Jenyuan and Liu, Lan and
             Wang, William Yang and Min, Bonan and Castelli, Vittorio},
  journal = {arXiv preprint arXiv:2407.13998},
  year    = {2024}
}
"""

_DESCRIPTION = """\
RAG-QA Arena compares a system's long-form answer with the LFRQA reference answer using an LLM
judge, exactly as the paper does: the paper's judge instructions, its three in-context examples,
its pairwise template, the reference implementation's answer cleanup and order rule, greedy
decoding with at most 256 tokens. The judge's rating is read strictly from its <rating> tag
(0 = tie, 1/2 = the answer shown first/second is better); an invalid reply is asked once more and
otherwise counts as a failed pair (never as a tie). It reports win, tie, loss and win+tie rates of
the predictions with 95% bootstrap intervals, per domain too. Judgments are cached in SQLite so a
re-run or a crashed run never pays twice.
"""

_KWARGS_DESCRIPTION = """
Judge each prediction against its reference answer for the same question.

Args:
    predictions (`list` of `str`): the evaluated system's answers (an empty answer is legal).
    references (`list` of `str`): the LFRQA (or other reference) answers, one per prediction.
    questions (`list` of `str`): the questions, one per prediction.
    ids (`list` of `str`, optional): stable ids (e.g. LFRQA qids); default "0", "1", ...
    domains (`list` of `str`, optional): a domain per pair; adds a `per_domain` breakdown.
    judge (`str` or `list` of `str`): "<backend>:<model>"; backends "openai" (any
        OpenAI-compatible server) and "hf" (a local transformers chat model). Several specs vote
        (majority; no majority is a tie; failed judges don't vote). Default "openai:gpt-4-0125-preview".
    base_url (`str`, optional): OpenAI-compatible server URL; default $OPENAI_BASE_URL or OpenAI.
    api_key (`str`, optional): default $OPENAI_API_KEY. Never stored anywhere.
    order (`str`): "paper" (the reference's rule: an even number of space-separated words in the
        question puts the prediction first), "random" (seeded per id), or "both" (judge both
        orders; a disagreement is a tie and a position flip).
    seed (`int`): seed of the "random" order and of the bootstrap. Default 0.
    max_concurrency (`int`): requests in flight at once. Default 16.
    cache_dir (`str`, optional): judgment cache folder; default $RAG_QA_ARENA_CACHE or
        ~/.cache/rag_qa_arena.
    out (`str`, optional): a run folder to write verdicts.jsonl and summary.json into.
    max_input_tokens (`int`, optional): refuse (fail, never truncate) pairs whose judge prompt is
        longer than this many tokens, e.g. the judge's context window minus 256.
    data_dir (`str`, optional): a folder with the pinned benchmark files (the judge prompt templates),
        for offline use; default `$LFRQA_DATA_DIR`, else the checksummed download.
    system, opponent (`str`, optional): names recorded in the verdicts (default: the run
        folder's name or "system", and "LFRQA").

Returns:
    n: pairs given (failed ones included); n_failed: pairs without a valid verdict;
    win_rate, tie_rate, loss_rate, win_tie_rate: shares of the n - n_failed judged pairs, seen
        from the predictions' side; win_rate_ci, win_tie_rate_ci: 95% bootstrap intervals;
    no_answer_rate: share of predictions that decline to answer (after cleanup they start with
        "I couldn't find an answer" and have at most 30 words);
    per_domain: the same fields per domain (when `domains` is given);
    position_flip_rate: share of judged pairs whose verdict changed with the order ("both");
    per_judge: each judge's own rates (several judges);
    errors, n_sent, n_cached: error counts by kind, requests sent, requests answered by the cache;
    verdicts: one dict per pair: qid, outcome ("win"/"tie"/"loss" for the prediction, None if
        failed), failed, flipped, no_answer_a, and judgments (judge, a_position: 1 if the
        prediction was shown as Answer 1, rating, outcome, raw judge text, attempts, cached).

Examples:
    >>> import evaluate
    >>> import metric_arena
    >>> arena = evaluate.load(metric_arena.METRIC_PATH)
    >>> results = arena.compute(
    ...     predictions=["Paris is the capital of France.", "I couldn't find an answer."],
    ...     references=["The capital of France is Paris.", "Water boils at 100 degrees Celsius at sea level."],
    ...     questions=["What is the capital of France?", "At what temperature does water boil?"],
    ...     ids=["q1", "q2"],
    ...     domains=["geography", "science"],
    ...     judge="openai:gpt-4o-mini",   # key and server from $OPENAI_API_KEY / $OPENAI_BASE_URL
    ... )
    >>> results["n"], results["n_failed"], results["no_answer_rate"]
    (2, 0, 0.5)
    >>> sorted(results["per_domain"])
    ['geography', 'science']
    >>> [v["judgments"][0]["a_position"] for v in results["verdicts"]]   # 6 words: prediction first
    [1, 1]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RagQaArena(evaluate.Metric):
    """Pairwise LLM judge of RAG-QA Arena (LFRQA)."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": datasets.Value("string"),
                    "questions": datasets.Value("string"),
                }
            ),
            codebase_urls=["https://github.com/awslabs/rag-qa-arena"],
            reference_urls=["https://arxiv.org/abs/2407.13998"],
        )

    def _compute(
        self,
        predictions,
        references,
        questions,
        ids=None,
        domains=None,
        judge=DEFAULT_JUDGE,
        base_url=None,
        api_key=None,
        order="paper",
        seed=0,
        max_concurrency=16,
        cache_dir=None,
        out=None,
        system=None,
        opponent="LFRQA",
        progress=None,
        max_input_tokens=None,
        data_dir=None,
    ):
        if ids is not None:
            ids = [str(i) if isinstance(i, int) and not isinstance(i, bool) else i for i in ids]
        return judge_pairs(
            list(predictions),
            list(references),
            list(questions),
            ids=ids,
            domains=domains,
            judge=judge,
            base_url=base_url,
            api_key=api_key,
            order=order,
            seed=seed,
            max_concurrency=max_concurrency,
            cache_dir=cache_dir,
            out=out,
            progress=progress,
            system=system,
            opponent=opponent,
            max_input_tokens=max_input_tokens,
            data_dir=data_dir,
        )
