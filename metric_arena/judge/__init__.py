"""The RAG-QA Arena pairwise judge: a system's answers against LFRQA's (or another system's).

Each pair is judged as the paper does (see :mod:`metric_arena.prompts` for the request): both
answers are cleaned with the reference implementation's cleanup, put in the order the policy
says, and sent to every judge. Verdicts are seen from the evaluated system's side (``system_a``).

Order policies
    ``"paper"``: the reference's rule: when the question has an even number of space-separated
    words (``len(q.split(' ')) % 2 == 0``) the prediction is Answer 1, otherwise the reference is.
    ``"random"``: per id, ``random.Random(f"{seed}:{qid}").random() < 0.5`` puts the prediction
    first; the position is recorded in each judgment (``a_position``).
    ``"both"``: both orders are judged; a judge whose two verdicts differ counts as a tie for that
    pair and as a position flip (``position_flip_rate``). A judge that fails on either order is
    failed for the pair.

Parsing (strict)
    The rating is read only from ``<rating>…</rating>`` tags. Every such tag must hold exactly
    one of 0, 1, 2 (whitespace around it allowed) and all tags of a reply must agree (a repeated
    identical tag is accepted; two different ratings, a "3", an empty tag or no tag at all make
    the reply invalid). Digits elsewhere in the text are never read. An invalid reply is asked
    once more (a fresh request, not answered from the cache); if that fails too, the judgment is
    failed: it counts in ``n_failed`` and in no rate — never as a tie. A reply cut at
    ``max_tokens`` (``finish_reason: "length"``, counted as ``truncated``) is read the same way:
    with a valid rating it counts; without one it is re-asked once, then the judgment fails.

Parsing as the reference (``parse="reference"``, ``--parse reference``)
    Replies are read as the pinned scripts read them (see :mod:`metric_arena.judge._parse`): never
    re-asked, a reply without a ``<rating>`` tag is a tie unless it holds a 1 or 2, and otherwise the
    highest of 0/1/2 inside the first ``<rating>…digit…</rating>`` span wins. Each verdict also
    records ``outcome_strict`` (the same replies read strictly) and the summary ``parse`` and
    ``n_differ_from_strict``. A request that got no reply is failed under both parses.

Several judges
    Each judge votes with its outcome (win/tie/loss); failed judges do not vote. The outcome with
    the most votes wins; a tie between top counts is a tie (as the paper's majority vote, where
    three different votes make a tie). All judges failed: the pair is failed. Under
    ``parse="reference"`` the authors' vote instead (:func:`~metric_arena.stats.reference_vote`): a
    failed judge votes a tie, votes that all differ are a tie, otherwise the most frequent vote wins,
    the first seen on a tie of counts (1, 1, 2, 2 is a 1). Each judge's
    judgments are kept in the verdict, and ``per_judge`` holds each judge's own summary.

Fewer pairs
    ``sample=N`` judges a seeded sub-sample of N pairs stratified by domain
    (:func:`~metric_arena.stats.stratified_sample`, seeded with ``seed``). ``target_width=W``
    judges the pairs in a seeded stratified order and starts no new pair once the 95% (Wilson)
    interval of the win+tie rate is at most W wide (after at least 50 pairs); pairs in flight
    then finish and are counted. The summary records ``stopped_early``, ``interval_width`` and
    ``n_planned``; verdicts cover the judged pairs only.

Verdicts follow the run-folder contract (``qid``, ``domain``, ``system_a``, ``system_b``,
``outcome``, ``failed``, ``flipped``, ``no_answer_a``, ``judgments``); a failed judgment also
carries ``error``, the last failure's description, and a judgment whose reply was longer than
what is kept (8,192 characters for the judge's 256 tokens) is cut there, its ``raw`` holding the
kept part and ``oversized`` the reply's full length in characters.

Hostile text
    Question, answers and reference are data: prompt delimiters inside them are defused before
    they are inserted (:func:`metric_arena.prompts.neutralize_delimiters`), and the verdict then
    carries ``"neutralized": true`` (the key is absent otherwise).

Pairs that are not sent
    ``generation_failed[i]`` true (the prediction file marked the answer ``failed``): the pair is
    failed at once, with no judgment and ``error``. With ``max_input_tokens``, a request whose
    prompt is longer (tiktoken count; approximate for non-OpenAI models) is refused rather than
    truncated: that judgment fails with the reason in ``error`` and counts as ``over_budget``.
    Without a budget, a server that rejects an over-long prompt (HTTP 400) fails that judgment
    the same way (not retried, counted as ``"400"``).
"""

from lfrqa.exports import export_names
from metric_arena.judge._batch import (
    BatchUpload,
    CacheOnlyBackend,
    collect_judge_batch,
    judge_batch_requests,
    judge_batch_status,
    submit_judge_batch,
)
from metric_arena.judge._config import JudgeConfig, JudgeSpec, MetricOptions, TournamentSchedule, judge_config
from metric_arena.judge._cost import (
    format_estimate,
    judge_dry_run,
)
from metric_arena.judge._inputs import (
    LFRQA_QID_HINT,
    MAX_EXPORT_SYSTEMS,
    MAX_TOURNAMENT_SYSTEMS,
    JudgeInputs,
    References,
    lfrqa_references,
    lfrqa_rows,
    prepare_judge_inputs,
    read_predictions,
    read_references,
)
from metric_arena.judge._parse import (
    PARSES,
    REASKS,
    Ask,
    judge_one,
    judgment_record,
    outcome_of,
    parse_rating,
    plain_ask,
    reask_count,
    reference_rating,
    valid_reply,
)
from metric_arena.judge._plan import (
    DEFAULT_JUDGE,
    ORDERS,
    answer_positions,
    check_system_names,
    judge_request,
)
from metric_arena.judge._exchange import (
    EXPORT_CHUNK,
    EXPORT_FILE,
    MAX_RESULT_LINE_BYTES,
    ExpectedAnswers,
    export_file,
    export_judge_requests,
    export_manifests,
    exported_request_ids,
    import_judge_results,
    judge_request_ids,
)
from metric_arena.judge._run import ajudge_pairs, judge_pairs
from metric_arena.judge._tournament import (
    Tournament,
    atournament,
    load_tournament,
    tournament,
    tournament_dry_run,
    tournament_requests,
)
from metric_arena.records import RunOutput

__all__ = [
    "DEFAULT_JUDGE",
    "EXPORT_CHUNK",
    "EXPORT_FILE",
    "MAX_RESULT_LINE_BYTES",
    "ORDERS",
    "PARSES",
    "REASKS",
    "Ask",
    "BatchUpload",
    "CacheOnlyBackend",
    "ExpectedAnswers",
    "JudgeConfig",
    "JudgeInputs",
    "LFRQA_QID_HINT",
    "References",
    "RunOutput",
    "JudgeSpec",
    "MAX_EXPORT_SYSTEMS",
    "MAX_TOURNAMENT_SYSTEMS",
    "Tournament",
    "MetricOptions",
    "TournamentSchedule",
    "ajudge_pairs",
    "atournament",
    "answer_positions",
    "check_system_names",
    "collect_judge_batch",
    "export_file",
    "export_judge_requests",
    "export_manifests",
    "exported_request_ids",
    "format_estimate",
    "import_judge_results",
    "judge_batch_requests",
    "judge_batch_status",
    "judge_config",
    "judge_dry_run",
    "judge_one",
    "judge_pairs",
    "judge_request",
    "judge_request_ids",
    "lfrqa_references",
    "judgment_record",
    "lfrqa_rows",
    "load_tournament",
    "outcome_of",
    "parse_rating",
    "plain_ask",
    "prepare_judge_inputs",
    "read_predictions",
    "read_references",
    "reask_count",
    "reference_rating",
    "submit_judge_batch",
    "tournament",
    "tournament_dry_run",
    "tournament_requests",
    "valid_reply",
]

export_names(globals())
