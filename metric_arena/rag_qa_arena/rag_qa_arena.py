# Copyright 2024 The rag-qa-arena authors. Licensed under the Apache License, Version 2.0.
"""RAG-QA Arena: pairwise LLM judging of long-form answers against LFRQA (an ``evaluate`` module).

A thin wrapper over :func:`metric_arena.judge_pairs`; everything is implemented there. The module
declares its input columns as feature sets with and without ``ids`` and ``domains``, so
``add_batch(predictions=, references=, questions=, ids=, domains=)`` accumulates all five and
``compute()`` keeps the per-domain breakdown and the ids of an eval loop that adds batches.

``rag-qa-arena metric export DIR`` copies this file into ``DIR`` (named after the folder, as
``evaluate.load(DIR)`` expects) with its card, ``requirements.txt`` and ``app.py``; ``rag-qa-arena
metric push ORG/NAME`` uploads that folder as a Hub Space so that ``evaluate.load("ORG/NAME")`` works.
"""

import datasets
import evaluate

from metric_arena import DEFAULT_JUDGE, JudgeInputs, judge_pairs  # From: rag-qa-arena
from metric_arena.judge import MetricOptions, RunOutput  # From: rag-qa-arena
from lfrqa.checks import grouped_keywords  # From: rag-qa-arena

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
    ids (`list` of `str`, optional): stable ids (e.g. LFRQA qids); default "0", "1", ... (in the
        order pairs were added). Integers are read as strings.
    domains (`list` of `str`, optional): a domain per pair; adds a `per_domain` breakdown.
    All five may be given to `compute` or accumulated with `add_batch` / `add`; give `ids` (and
    `domains`) with every batch or with none.
    judge (`str`, `list` of `str`, or `metric_arena.JudgeConfig`): what judges and how. A spec
        "<backend>:<model>" (backends "openai", any OpenAI-compatible server; "hf", a local
        transformers chat model; "vllm"), or several that vote (majority; no majority is a tie;
        failed judges don't vote). Default "openai:gpt-4-0125-preview". A `JudgeConfig` adds
        `order` ("paper": the reference's rule, an even number of space-separated words in the
        question puts the prediction first; "random": seeded per id; "both": judge both orders, a
        disagreement is a tie and a position flip), `seed` (of the random order and the
        bootstrap), `parse` ("strict" or "reference", the paper's scripts' reading),
        `max_input_tokens` (refuse, never truncate, longer judge prompts) and backend `options`.
    run (`metric_arena.RunConfig`, optional): how requests run: `base_url` (default
        $OPENAI_BASE_URL or OpenAI), `api_key` (default $OPENAI_API_KEY; never stored), `timeout`,
        `max_concurrency` (default 16), `limiter` (a `metric_arena.RateLimiter`), `retry` (a
        `metric_arena.RetryPolicy`), `cache_dir` (default $RAG_QA_ARENA_CACHE or
        ~/.cache/rag_qa_arena) and `use_cache`.
    out (`str`, optional): a run folder to write verdicts.jsonl and summary.json into.
    data_dir (`str`, optional): a folder with the pinned benchmark files (the judge prompt templates),
        for offline use; default `$LFRQA_DATA_DIR`, else the checksummed download.
    system, opponent (`str`, optional): names recorded in the verdicts (default: the run
        folder's name or "system", and "LFRQA").
    citations (`str`, optional): the retrieved file the predictions were generated from (`retrieve
        --out`); adds `citations`, the predictions' `[k]` markers scored against the documents LFRQA's
        answers cite (`ids` must be LFRQA qids): each field's mean with its interval and count, the
        notes, and each answer's scores by id (see `rag-qa-arena cite`; no entailment model).

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
    outcomes: {id: "win"/"tie"/"loss" or None (failed)}, keyed by the given ids;
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
    ...     judge=metric_arena.JudgeConfig("openai:gpt-4o-mini", parse="strict"),
    ...     run=metric_arena.RunConfig(max_concurrency=32),   # key and server from $OPENAI_API_KEY / $OPENAI_BASE_URL
    ... )
    >>> results["n"], results["n_failed"], results["no_answer_rate"]
    (2, 0, 0.5)
    >>> sorted(results["per_domain"])
    ['geography', 'science']
    >>> sorted(results["outcomes"])
    ['q1', 'q2']
    >>> [v["judgments"][0]["a_position"] for v in results["verdicts"]]   # 6 words: prediction first
    [1, 1]

    In an eval loop, batch by batch:

    >>> for start in (0, 1):
    ...     arena.add_batch(predictions=["Paris.", "100 C."][start:start + 1],
    ...                     references=["Paris is the capital.", "It boils at 100 C."][start:start + 1],
    ...                     questions=["capital of france?", "boiling point?"][start:start + 1],
    ...                     ids=["q1", "q2"][start:start + 1], domains=["geography", "science"][start:start + 1])
    >>> results = arena.compute(judge="openai:gpt-4o-mini")
    >>> sorted(results["outcomes"]), sorted(results["per_domain"])
    (['q1', 'q2'], ['geography', 'science'])
"""

_TEXT = datasets.Value("string")
_REQUIRED = ("predictions", "references", "questions")
_OPTIONAL = ("ids", "domains")
#: The accepted input columns: the three texts, with or without ids and domains (the first set,
#: all five, is the one evaluate's widget shows).
FEATURE_SETS = [
    datasets.Features({name: _TEXT for name in (*_REQUIRED, *extra)})
    for extra in (("ids", "domains"), ("ids",), ("domains",), ())
]


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RagQaArena(evaluate.Metric):
    """Pairwise LLM judge of RAG-QA Arena (LFRQA)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # evaluate copies compute() and appends the inputs' description to the copy's docstring; the copy of a
        # decorated compute() holds the decorator's: give it compute's own
        self.compute.__func__.__doc__ = (type(self).compute.__doc__ or "") + (self.info.inputs_description or "")

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=FEATURE_SETS,
            codebase_urls=["https://github.com/awslabs/rag-qa-arena"],
            reference_urls=["https://arxiv.org/abs/2407.13998"],
        )

    # -- which feature set: chosen from the inputs given, the same for every batch -------------
    # evaluate picks among several feature sets only when they share their column names; these
    # differ by column, so the set is chosen here from the optional inputs given (the batches
    # pending in evaluate's writer fix it until compute() has read them back), and each batch is
    # checked before evaluate's writer sees it.
    def _use_columns(self, given, *, single=False):
        columns = (*_REQUIRED, *(name for name in _OPTIONAL if given[name] is not None))
        pending = self.selected_feature_format if getattr(self, "writer", None) is not None else None
        if pending is not None and set(pending) != set(columns):
            had = [name for name in _OPTIONAL if name in pending] or ["neither ids nor domains"]
            now = [name for name in _OPTIONAL if name in columns] or ["neither ids nor domains"]
            raise ValueError(
                f"This batch gives {' and '.join(now)}, earlier batches gave {' and '.join(had)}: give ids (and "
                "domains) with every batch or with none"
            )
        missing = [name for name in _REQUIRED if given[name] is None]
        if missing:
            raise ValueError(f"Evaluation module inputs are missing: {missing}. All required inputs are {list(columns)}")
        _check_texts({name: given[name] for name in columns}, single=single)
        self._columns = columns

    def _feature_names(self):
        columns = getattr(self, "_columns", None)
        return list(columns) if columns is not None else list(FEATURE_SETS[0])

    def _features_for(self, names):
        for features in FEATURE_SETS:
            if set(features) == set(names):
                return features
        raise ValueError(f"No feature set has the columns {sorted(names)}")

    def _infer_feature_from_batch(self, batch):
        return self._features_for(batch)

    def _infer_feature_from_example(self, example):
        return self._features_for(example)

    # -- the public entry points, with explicit inputs ----------------------------------------
    def add_batch(self, *, predictions=None, references=None, questions=None, ids=None, domains=None):
        """Add a batch of pairs: lists of predictions, references, questions, and optionally ids, domains."""
        given = {"predictions": predictions, "references": references, "questions": questions, "ids": _ids(ids),
                 "domains": domains}
        self._use_columns(given)
        super().add_batch(**{k: v for k, v in given.items() if v is not None})

    def add(self, *, prediction=None, reference=None, questions=None, ids=None, domains=None):
        """Add one pair: a prediction, its reference, its question (``questions=``), optionally its id and domain."""
        if isinstance(ids, int) and not isinstance(ids, bool):
            ids = str(ids)
        given = {"predictions": prediction, "references": reference, "questions": questions, "ids": ids,
                 "domains": domains}
        self._use_columns(given, single=True)
        extra = {k: v for k, v in given.items() if v is not None and k not in ("predictions", "references")}
        super().add(prediction=prediction, reference=reference, **extra)

    @grouped_keywords("options", MetricOptions, ["out", "system", "opponent", "progress", "data_dir", "citations"])
    def compute(
        self,
        *,
        predictions=None,
        references=None,
        questions=None,
        ids=None,
        domains=None,
        judge=DEFAULT_JUDGE,
        run=None,
        options=None,
    ):
        """Judge the pairs given here, or those added with :meth:`add_batch` / :meth:`add`. ``options``: a
        :class:`metric_arena.judge.MetricOptions` (system and opponent names, a run folder ``out``,
        ``progress``, ``data_dir``, ``citations``); those loose keywords work for one release, with a
        ``DeprecationWarning``."""
        options = dict(judge=judge, run=run, options=options)
        try:
            if predictions is None and references is None and questions is None:
                if ids is not None or domains is not None:
                    raise ValueError("ids and domains given without predictions: pass them to add_batch with "
                                     "their predictions, or everything to compute")
                return super().compute(**options)
            given = {"predictions": predictions, "references": references, "questions": questions,
                     "ids": _ids(ids), "domains": domains}
            self._use_columns(given)
            return super().compute(**{k: v for k, v in given.items() if v is not None}, **options)
        finally:
            self._columns = None

    def _compute(
        self,
        predictions,
        references,
        questions,
        ids=None,
        domains=None,
        judge=DEFAULT_JUDGE,
        run=None,
        options=None,
    ):
        options = options if options is not None else MetricOptions()
        system, opponent, out, progress = options.system, options.opponent, options.out, options.progress
        data_dir, citations = options.data_dir, options.citations
        if citations is not None and ids is None:
            raise ValueError("citations=RETRIEVED_FILE scores the markers against LFRQA's citations: give ids "
                             "(LFRQA qids) with the predictions")
        inputs = JudgeInputs(
            predictions=list(predictions),
            references=list(references),
            questions=list(questions),
            ids=None if ids is None else list(ids),
            domains=None if domains is None else list(domains),
            system=system,
            opponent=opponent,
        )
        result = judge_pairs(inputs, judge=judge, run=run, out=out, output=RunOutput(progress=progress),
                             data_dir=data_dir)
        result["outcomes"] = {verdict["qid"]: verdict["outcome"] for verdict in result["verdicts"]}
        if citations is not None:
            result["citations"] = _citation_scores(list(predictions), list(ids), citations, data_dir)
        return result


def _citation_scores(predictions, ids, retrieved, data_dir):
    """The predictions' citation scores (:func:`metric_arena.citations.cite` into a temporary run folder)."""
    import json
    import tempfile
    from pathlib import Path

    from metric_arena.citations import cite

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "predictions.jsonl"
        path.write_text("".join(json.dumps({"qid": q, "answer": a}) + "\n" for q, a in zip(ids, predictions)),
                        encoding="utf-8")
        result = cite(path, retrieved, out=Path(folder) / "cite", data_dir=data_dir)
    return {"fields": result["fields"], "notes": result["notes"],
            "per_answer": {row["qid"]: row["scores"] for row in result["rows"]}}


def _check_texts(columns, *, single=False):
    """Every input a string (one per column with ``single``), all columns of one length, else a
    ValueError naming the column, as evaluate's own checks do."""
    if single:
        columns = {name: [value] for name, value in columns.items()}
    for name, values in columns.items():
        if isinstance(values, (str, bytes)):
            shown = repr(values) if len(repr(values)) <= 40 else repr(values)[:37] + "..."
            raise ValueError(f"Module inputs don't match the expected format: {name} is one string ({shown}), not a "
                             f"list: give one entry per pair, e.g. {name}=[{shown}] (or use add() for one pair)")
    n = len(columns["predictions"])
    for name, values in columns.items():
        if len(values) != n:
            raise ValueError(f"Mismatch in the number of predictions ({n}) and {name} ({len(values)})")
        for i, value in enumerate(values):
            if not isinstance(value, str):
                shown = repr(list(values)[:5])
                raise ValueError(
                    f"Module inputs don't match the expected format: {name}[{i}] is {type(value).__name__}, not a "
                    f"string (an empty answer is legal). Input {name}: {shown}"
                )


def _ids(ids):
    """Integer ids (e.g. from a numeric id column) read as strings; anything else as given."""
    if ids is None or isinstance(ids, (str, bytes)):
        return ids  # a bare string is refused by the checks, not split into characters
    return [str(i) if isinstance(i, int) and not isinstance(i, bool) else i for i in ids]
