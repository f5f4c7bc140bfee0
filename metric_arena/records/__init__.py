"""The rows the package writes and reads, in one place: each record's fields, its check and its Arrow schema.

==================  ===========================================  ===========================
record              one line of                                  check
==================  ===========================================  ===========================
:class:`Verdict`    a run folder's ``verdicts.jsonl`` (judge)    :func:`check_verdict`
:class:`Judgment`   a verdict's ``judgments`` (one judge call)   :func:`check_judgment`
:class:`Prediction` a ``generate`` answer file                   :func:`check_prediction`
:class:`Retrieved`  a ``retrieve`` output file                   :func:`check_retrieved`
:class:`Citations`  a ``cite`` run folder's ``citations.jsonl``  :func:`check_citations`
==================  ===========================================  ===========================

A check takes one row and ``where`` (``"runs/x/verdicts.jsonl:12"``, ``"retrieved[3]"``) and
raises a one-line :class:`~lfrqa.errors.RagQaArenaError` naming the place, the field and the fix;
it returns the row in its checked form (``qid`` as a string). Rows written by other tools are
read too: a check asks only for the fields its readers need (a prediction file needs ``qid``
and ``answer``), the other fields are checked when they are there.

The Arrow schemas (:func:`verdict_schema`, :func:`prediction_schema`, :func:`retrieved_schema`,
:func:`judgment_type`) import ``pyarrow`` when called; :func:`verdicts_table` is the table the run
push writes to Parquet.

>>> check_verdict({"qid": 7, "system_a": "A", "system_b": "LFRQA", "outcome": "win"}, "verdicts.jsonl:1")["qid"]
'7'
>>> check_verdict({"qid": "7", "system_a": "A", "system_b": "LFRQA", "outcome": "won"}, "verdicts.jsonl:1")
Traceback (most recent call last):
...
lfrqa.RagQaArenaError: verdicts.jsonl:1: unknown outcome 'won'. Allowed: win, tie, loss, or null for a failed pair
"""


from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import lone_surrogate
from metric_arena.records._citations import CitedSentence, Citations, ScoredSentence, check_citations
from metric_arena.records._output import RUN_OUTPUT_KEYWORDS, RunOutput, run_output
from metric_arena.stats import OUTCOMES
from metric_arena.records._arrow import (
    injection_type,
    judgment_type,
    prediction_schema,
    retrieved_schema,
    style_type,
    verdict_schema,
    verdicts_table,
)

__all__ = [
    "MAX_TEXT_CHARS",
    "OUTCOMES",
    "DEFAULT_SAMPLE", "LEADERBOARD_FILE", "REFERENCE", "REPLACING_FILE", "REPORT_FILE", "RUN_FILES", "SUMMARY_FILE",
    "TOURNAMENT_FILE", "VERDICTS_FILE", "RUN_OUTPUT_KEYWORDS",
    "AnswerStyle",
    "CitedSentence",
    "Citations",
    "ScoredSentence",
    "InjectionSigns",
    "Judgment",
    "Outcome",
    "Prediction",
    "Retrieved",
    "RetrievedPassage",
    "RunOutput",
    "Verdict",
    "check_citations",
    "check_judgment",
    "check_prediction",
    "check_retrieved",
    "check_verdict",
    "injection_counts",
    "injection_type",
    "judgment_type",
    "prediction_schema",
    "retrieved_schema",
    "run_output",
    "style_type",
    "text_too_long",
    "verdict_schema",
    "verdicts_table",
]

Outcome = Literal["win", "tie", "loss"]
#: The longest answer (and question) a judge run takes, in characters: about 50,000 tokens, so that a
#: judge prompt holding two of them still fits a 128k-token context. A longer one is refused before
#: anything is sent, naming its qid and this limit (the paper's answers are a few hundred words).
MAX_TEXT_CHARS = 200_000


def text_too_long(field: str, text, place: str) -> str | None:
    """The one-line refusal of a ``field`` longer than :data:`MAX_TEXT_CHARS` at ``place``, else None."""
    if not isinstance(text, str) or len(text) <= MAX_TEXT_CHARS:
        return None
    return (f"{place}: {field} has {len(text):,} characters, over the limit of {MAX_TEXT_CHARS:,} a judged text may "
            "have (MAX_TEXT_CHARS): shorten it, or leave the pair out")


#: A pair's outcome from ``system_a``'s side (``OUTCOMES``, defined in metric_arena.stats); a failed pair has none.
#: The reference system's name in verdicts, run folders and reports (LFRQA's answers; the one definition).
REFERENCE = "LFRQA"
#: The run folder's files: verdicts as pairs finish, the summary at the end, the verdicts of a replacing run
#: while it lasts; a tournament's design and results; a report's leaderboard and everything it shows.
VERDICTS_FILE, SUMMARY_FILE, REPLACING_FILE = "verdicts.jsonl", "summary.json", ".verdicts.replacing.jsonl"
RUN_FILES = (VERDICTS_FILE, SUMMARY_FILE, REPLACING_FILE)
TOURNAMENT_FILE = "tournament.json"
LEADERBOARD_FILE, REPORT_FILE = "leaderboard.json", "report.json"
#: The default number of shared questions per pair of a tournament (the paper's column B).
DEFAULT_SAMPLE = 700


# Each record with fields written only when they apply is two classes: the fields every row has (a
# private base) and the public record adding the others with ``total=False`` (NotRequired, without
# needing typing_extensions on Python 3.10).
class _JudgmentFields(TypedDict):
    judge: str  # the judge's spec, e.g. "openai:gpt-4o"
    a_position: int  # 1 when system_a's answer was shown first, else 2
    rating: int | None  # the judge's 0/1/2; None when no rating could be read
    outcome: Outcome | None  # from system_a's side
    raw: str  # the judge's reply ("" when there was none)
    attempts: int
    cached: bool


class Judgment(_JudgmentFields, total=False):
    """One judge call on one order of a pair (an element of :attr:`Verdict.judgments`)."""

    error: str  # why there is no rating
    oversized: int  # the reply's full length in characters when raw holds its first part
    system_folded: bool  # True: the chat template took no system turn, so it was folded into the user's
    imported: dict  # {"file", "model"}: the answer came from `judge --import-results` (that file; the model it named)


class AnswerStyle(TypedDict):
    """Length and style counts of one judged answer (:func:`metric_arena.style.answer_style`)."""

    words: int  # whitespace words, as the paper counts
    tokens: int  # o200k_base tokens
    headers: int  # markdown header lines
    list_items: int  # markdown list items
    bold: int  # bold spans
    citations: int  # citation markers such as [1]


class InjectionSigns(TypedDict):
    """What one judged answer held that speaks to the judge (:func:`metric_arena.delimiters.injection_signs`):
    written only for an answer where something was found."""

    defused_tags: int  # the prompt's own tags (or look-alikes) defused in the answer
    addresses_judge: list[str]  # the plain-language rules it matched (delimiters.JUDGE_ADDRESS_RULES)


class _VerdictFields(TypedDict):
    qid: str
    domain: str | None
    system_a: str
    system_b: str
    outcome: Outcome | None  # the vote of the judges; None for a failed pair
    failed: bool
    flipped: bool | None  # order "both": whether swapping the answers changed the outcome
    no_answer_a: bool  # system_a's answer says it has no answer
    judgments: list[Judgment]


class Verdict(_VerdictFields, total=False):
    """One judged pair: a line of ``verdicts.jsonl``."""

    error: str  # why the pair was not judged (e.g. its answer failed to generate)
    neutralized: bool  # the question or an answer held the prompt's own tags (defused)
    outcome_strict: Outcome | None  # parse "reference": the outcome read the strict way
    failed_as_tie: bool  # parse "reference": no judge answered; a tie in every rate, as the reference counts it
    no_answer_a_reference: bool  # system_a's answer holds the reference scripts' no-answer phrase
    style_a: AnswerStyle  # system_a's answer as the judge saw it: words, tokens, markdown and citation counts
    style_b: AnswerStyle  # the same for system_b's answer
    injection_a: InjectionSigns  # system_a's answer spoke to the judge (only when it did)
    injection_b: InjectionSigns  # the same for system_b's answer


class _PredictionFields(TypedDict):
    qid: str
    domain: str | None
    question: str
    answer: str | None  # raw cleaned the reference's way; None when failed
    raw: str | None
    model: str  # the generating model's spec
    prompt: str  # the generation prompt version ("v1", "v2")
    passages: list[str]  # pids of the passages in the prompt, in rank order
    finish_reason: str | None
    failed: bool


class Prediction(_PredictionFields, total=False):
    """One answer: a line of a ``generate`` answer file (what the judge reads as predictions)."""

    error: str  # why there is no answer
    oversized: int  # the reply's full length in characters when raw holds its first part
    neutralized: bool  # the question or a passage held the prompt's own tags (defused)
    sentences: list[CitedSentence]  # citations given per sentence: read instead of the answer's [k] markers


class _RetrievedPassageFields(TypedDict):
    pid: str  # "<doc_id>-<k>"
    text: str
    rank: int | None  # from 1; None when the source gives no rank (file order then)


class RetrievedPassage(_RetrievedPassageFields, total=False):
    """One passage of a :class:`Retrieved` row."""

    doc_id: str  # retrieve writes doc_id and score; other sources may leave them out
    score: float


class Retrieved(TypedDict):
    """One question's top passages: a line of a ``retrieve`` output file (what generation reads)."""

    qid: str
    domain: str | None
    question: str
    passages: list[RetrievedPassage]  # in rank order


def _qid(qid, where: str) -> str:
    """A row's ``qid`` as a non-empty string (a JSON integer is taken as its digits)."""
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == "":
        raise RagQaArenaError(f"{where}: qid {qid!r} must be a non-empty string")
    return str(qid).strip()


def _require(row, fields: Sequence[str], where: str, hint: str) -> None:
    if not isinstance(row, Mapping):
        raise RagQaArenaError(f"{where}: expected a JSON object with {', '.join(fields)}, got {type(row).__name__}")
    missing = [k for k in fields if k not in row]
    if missing:
        raise RagQaArenaError(f"{where}: missing field{'s' if len(missing) > 1 else ''} "
                              f"{', '.join(map(repr, missing))} ({hint})")


def _optional(row: Mapping, field: str, kinds: tuple[type, ...], what: str, where: str) -> None:
    value = row.get(field)
    if value is not None and (not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool))):
        raise RagQaArenaError(f"{where}: {field} must be {what}, got {value!r:.80}")


def check_judgment(row, where: str) -> Judgment:
    """One element of a verdict's ``judgments``: an object with its ``judge`` (a spec string), whose
    ``outcome``, when there, is win, tie, loss or null (``rating`` and ``a_position`` integers)."""
    _require(row, ("judge",), where, "each judgment names its judge, as `rag-qa-arena judge` writes it")
    if row.get("outcome") not in (*OUTCOMES, None):
        raise RagQaArenaError(f"{where}: unknown outcome {row['outcome']!r}. Allowed: win, tie, loss, or null")
    if not isinstance(row["judge"], str):
        raise RagQaArenaError(f"{where}: judge must be the judge's spec (a string), got {row['judge']!r:.80}")
    _optional(row, "rating", (int,), "the judge's rating 0, 1 or 2", where)
    _optional(row, "a_position", (int,), "1 or 2", where)
    return row  # type: ignore[return-value]


def check_verdict(row, where: str) -> Verdict:
    """One line of ``verdicts.jsonl``: ``qid``, ``system_a``, ``system_b`` and ``outcome`` (win, tie,
    loss, or null for a failed pair) are needed; ``judgments``, when there, is a list of
    :func:`check_judgment` objects. ``qid`` becomes a string (in ``row`` itself)."""
    _require(row, ("qid", "system_a", "system_b", "outcome"), where,
             "is this a verdicts.jsonl written by `rag-qa-arena judge`?")
    if row["outcome"] not in (*OUTCOMES, None):
        raise RagQaArenaError(f"{where}: unknown outcome {row['outcome']!r}. Allowed: win, tie, loss, or null for a "
                              "failed pair")
    for side in ("system_a", "system_b"):
        if not isinstance(row[side], str):
            raise RagQaArenaError(f"{where}: {side} must be a system's name (a string), got {row[side]!r:.80}")
    judgments = row.get("judgments")
    if judgments is not None:
        if not isinstance(judgments, list):
            raise RagQaArenaError(f"{where}: judgments must be a list of objects, got {type(judgments).__name__}")
        for k, judgment in enumerate(judgments):
            check_judgment(judgment, f"{where} judgments[{k}]")
    row["qid"] = str(row["qid"])
    return row  # type: ignore[return-value]


def check_prediction(row, where: str, *, generated: bool = False) -> Prediction:
    """One prediction row: ``qid`` and ``answer`` (a string; null only when ``failed`` is true); a
    ``question`` or ``domain`` that is not a string is left out. ``generated``: the row must be a
    ``generate`` answer line (``model`` and ``prompt`` too). Returns a checked copy: ``qid`` a
    string, ``failed`` true or false (a missing one, or null, is false)."""
    needed = ("qid", "answer", "model", "prompt") if generated else ("qid", "answer")
    _require(row, needed, where, "each row needs " + ", ".join(needed))
    qid = _qid(row["qid"], where)
    failed = row.get("failed")
    if failed is None:  # no key, or null in a Parquet/Dataset column where other rows have one
        failed = False
    if not isinstance(failed, bool):
        raise RagQaArenaError(f"{where} (qid {qid}): failed must be true or false, got {failed!r}")
    if not failed and not isinstance(row["answer"], str):
        raise RagQaArenaError(f"{where} (qid {qid}): answer must be a string, got "
                              f"{type(row['answer']).__name__} ({row['answer']!r}); write \"\" for an empty answer")
    for field in ("answer", "question"):
        refusal = None if failed and field == "answer" else text_too_long(field, row.get(field), f"{where} (qid {qid})")
        if refusal:
            raise RagQaArenaError(refusal)
    if generated:
        for field in ("model", "prompt"):
            if not isinstance(row[field], str):
                raise RagQaArenaError(f"{where} (qid {qid}): {field} must be a string, got {row[field]!r:.80}")
    checked = {k: v for k, v in row.items() if k not in ("question", "domain") or isinstance(v, str)}
    return {**checked, "qid": qid, "failed": failed}  # type: ignore[typeddict-item]


def check_retrieved(row, where: str) -> Retrieved:
    """One row of retrieved passages: ``qid``, ``question`` (a string) and ``passages``, a list of
    objects with ``pid`` and a string ``text`` (``rank``, when there, an integer). Returns the checked
    row: ``qid`` and each ``pid`` as strings, ``domain`` (None when absent), and the passages
    ``{"pid", "text", "rank"}`` in rank order when every passage has a rank (else in the row's order)."""
    _require(row, ("qid", "question", "passages"), where, "each row needs qid, question and passages")
    qid = _qid(row["qid"], where)
    place = f"{where} (qid {qid})"
    question = row["question"]
    if not isinstance(question, str):
        raise RagQaArenaError(f"{place}: question must be a string, got {type(question).__name__} ({question!r})")
    domain = row.get("domain")
    if domain is not None and not isinstance(domain, str):
        raise RagQaArenaError(f"{place}: domain must be a string, got {domain!r}")
    passages = row["passages"]
    if not isinstance(passages, list):
        raise RagQaArenaError(f"{place}: passages must be a list of {{'pid', 'text', 'rank'}} objects, "
                              f"got {type(passages).__name__}")
    clean: list[RetrievedPassage] = [_passage(passage, f"{place}: passages[{k}]") for k, passage in enumerate(passages)]
    if all(p["rank"] is not None for p in clean):
        clean.sort(key=lambda p: p["rank"])  # stable: ties keep file order
    field = lone_surrogate({"question": question, "passages": clean})
    if field is not None:
        raise RagQaArenaError(f"{place}: {field} holds a lone surrogate (such as '\\ud800'), which is not text and "
                              "cannot be sent: fix or remove it")
    return {"qid": qid, "domain": domain, "question": question, "passages": clean}


def _passage(passage, where: str) -> RetrievedPassage:
    if not isinstance(passage, Mapping) or not isinstance(passage.get("text"), str):
        raise RagQaArenaError(f"{where} must be an object with a string 'text', got {passage!r:.80}")
    pid = passage.get("pid")
    if pid is None or isinstance(pid, bool) or not isinstance(pid, (str, int)):
        raise RagQaArenaError(f"{where} has pid {pid!r}; give each passage its id")
    rank = passage.get("rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
        raise RagQaArenaError(f"{where} has rank {rank!r}; ranks are integers from 1")
    return {"pid": str(pid), "text": passage["text"], "rank": rank}


def injection_counts(verdicts, systems=None) -> dict:
    """Per system, what its answers held that speaks to the judge, from the verdicts' ``injection_a`` /
    ``injection_b`` (each answer once: a system's answer to a qid judged in several verdicts counts once):
    ``answers`` (distinct judged answers), ``answers_with_defused_tags``, ``defused_tags`` (tags defused in
    them), ``answers_addressing_judge`` and ``rules`` (answers per plain-language rule matched).
    ``systems``: names to report even with no verdict (their counts 0); the others in order of appearance."""
    seen: dict[str, dict[str, dict]] = {name: {} for name in systems or ()}
    for verdict in verdicts:
        if not verdict.get("judgments"):
            continue  # never judged: the judge saw no answer
        for side, signs_key in (("system_a", "injection_a"), ("system_b", "injection_b")):
            signs = verdict.get(signs_key)
            signs = signs if isinstance(signs, Mapping) else {}  # a foreign verdict file: what is not ours counts 0
            tags = signs.get("defused_tags")
            tags = tags if isinstance(tags, int) and not isinstance(tags, bool) and tags > 0 else 0
            rules = signs.get("addresses_judge")
            rules = {r for r in rules if isinstance(r, str)} if isinstance(rules, list) else set()
            answers = seen.setdefault(verdict[side], {})
            old = answers.get(verdict["qid"], {"defused_tags": 0, "addresses_judge": []})
            answers[verdict["qid"]] = {"defused_tags": max(old["defused_tags"], tags),
                                       "addresses_judge": sorted(set(old["addresses_judge"]) | rules)}
    counts = {}
    for name, answers in seen.items():
        rules: dict[str, int] = {}
        for signs in answers.values():
            for rule in signs["addresses_judge"]:
                rules[rule] = rules.get(rule, 0) + 1
        counts[name] = {
            "answers": len(answers),
            "answers_with_defused_tags": sum(1 for s in answers.values() if s["defused_tags"]),
            "defused_tags": sum(s["defused_tags"] for s in answers.values()),
            "answers_addressing_judge": sum(1 for s in answers.values() if s["addresses_judge"]),
            "rules": dict(sorted(rules.items())),
        }
    return counts
