"""What a judge run reads: prediction files (JSON Lines, Parquet or a saved Dataset, by qid) joined to a
benchmark's references (question, reference answer and domain by qid), given as input: the judge loads
no benchmark itself (the entry points pass :func:`lfrqa_references` for LFRQA)."""

from __future__ import annotations

import functools
import inspect
import os
import sqlite3
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from lfrqa.checks import caller_level
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_records, saved_dataset
from metric_arena.records import REFERENCE, check_prediction

__all__ = ["LFRQA_QID_HINT", "MAX_EXPORT_SYSTEMS", "MAX_TOURNAMENT_SYSTEMS", "JudgeInputs", "References",
           "SpilledAnswers", "as_judge_inputs", "check_system_count", "judge_inputs", "lfrqa_references",
           "lfrqa_rows", "old_input_form", "prepare_judge_inputs", "read_predictions", "read_references",
           "spill_predictions"]

#: The most systems one tournament takes. Its complete schedule grows as n(n-1)/2 pairs: 64 systems are
#: 2,016 pairs, 1.4 million pair judgments on the default 700-question sample, and a dry run that counts
#: every prompt's tokens takes ~25 minutes on 2 cores, in flat memory (benchmarks/tournament_scale.py).
#: More are refused before any prediction file is read: judge each against LFRQA with `judge`, or split them.
MAX_TOURNAMENT_SYSTEMS = 64
#: The most systems of a request export (:func:`tournament_requests`, written in flat memory): 32,640 pairs.
MAX_EXPORT_SYSTEMS = 256


def check_system_count(n: int, *, most: int = MAX_TOURNAMENT_SYSTEMS) -> None:
    """Refuse a tournament of more than ``most`` systems (:data:`MAX_TOURNAMENT_SYSTEMS`; an export:
    :data:`MAX_EXPORT_SYSTEMS`), in one line naming both."""
    if n > most:
        which = "MAX_TOURNAMENT_SYSTEMS" if most == MAX_TOURNAMENT_SYSTEMS else "MAX_EXPORT_SYSTEMS"
        raise RagQaArenaError(
            f"A tournament takes at most {most} systems ({which}), got {n:,} prediction "
            f"files: its pairs grow as n(n-1)/2 ({n * (n - 1) // 2:,} here). Judge each system against LFRQA with "
            "`rag-qa-arena judge`, or split them into tournaments of fewer systems")


def read_predictions(path: str | os.PathLike) -> dict[str, dict]:
    """``{qid: {"answer", ["question"], ["domain"]}}`` from a prediction file, validated: JSON Lines,
    Parquet, or a folder written by ``datasets.Dataset.save_to_disk`` (rows with ``qid`` and ``answer``)."""
    path = Path(path)
    if not path.is_file() and not saved_dataset(path):
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"Prediction file {path} {what}: give a JSONL file with one "
                                '{"qid": ..., "answer": ...} per line (`rag-qa-arena generate --out` writes one), '
                                "a Parquet file or a folder saved by datasets' save_to_disk with those columns")
    rows: dict[str, dict] = {}
    for where, row in iter_records(path, hint='Each line must be one {"qid": ..., "answer": ...} object'):
        checked = check_prediction(row, where)
        qid, failed = checked["qid"], checked["failed"]
        if qid in rows:
            raise RagQaArenaError(f"{where}: qid {qid!r} appears twice; keep one answer per qid")
        entry = {"answer": "", "failed": True} if failed else {"answer": checked["answer"]}
        for field in ("question", "domain"):
            if field in checked:
                entry[field] = checked[field]
        rows[qid] = entry
    if not rows:
        raise RagQaArenaError(f"Prediction file {path} holds no predictions")
    return rows


@dataclass(frozen=True, kw_only=True)
class References:
    """A benchmark's references, by qid: ``rows[qid]`` holds ``question``, ``answer`` (the reference
    answer) and ``domain``. ``name`` is the side's name in the verdicts (``system_b``); ``hint``
    ends the error for a qid the references lack (where to find the benchmark's qids).

    >>> toy = References(name="TOY", rows={"t1": {"question": "2+2?", "answer": "4", "domain": "math"}})
    >>> toy.pick(["t1"])["t1"]["answer"]
    '4'
    """

    name: str
    rows: Mapping[str, Mapping[str, str]]
    hint: str = ""

    def pick(self, qids: Sequence[str]) -> dict[str, Mapping[str, str]]:
        """The rows of ``qids``; a qid the references lack is refused, naming it and the hint."""
        missing = [q for q in qids if q not in self.rows]
        if missing:
            shown = ", ".join(repr(q) for q in missing[:5])
            raise RagQaArenaError(f"{len(missing)} qid(s) are not in {self.name}'s test set, e.g. {shown}. "
                                  f"{self.hint or f'Use the qids of the {self.name} references'}")
        return {q: self.rows[q] for q in qids}


def read_references(path: str | os.PathLike, *, name: str | None = None) -> References:
    """A benchmark's references from a file (JSON Lines, Parquet or a saved Dataset) of rows with ``qid``,
    ``question``, ``answer`` (the reference answer) and optionally ``domain``; ``name`` (default: the file
    name without extension) names the side in the verdicts."""
    path = Path(path)
    if not path.is_file() and not saved_dataset(path):
        raise FileNotFoundError(f"References file {path} does not exist: give a JSONL file with one "
                                '{"qid": ..., "question": ..., "answer": ..., "domain": ...} per line')
    rows: dict[str, dict[str, str]] = {}
    for where, row in iter_records(path, hint='Each line must be one {"qid", "question", "answer"} object'):
        for field in ("qid", "question", "answer"):
            if not isinstance(row.get(field), str) or (field == "qid" and not row[field]):
                raise RagQaArenaError(f"{where}: {field!r} must be a string (rows hold qid, question, answer and "
                                      "optionally domain)")
        if row["qid"] in rows:
            raise RagQaArenaError(f"{where}: qid {row['qid']!r} appears twice; keep one reference per qid")
        rows[row["qid"]] = {"question": row["question"], "answer": row["answer"],
                            "domain": str(row.get("domain") or "unknown")}
    if not rows:
        raise RagQaArenaError(f"References file {path} holds no rows")
    return References(name=name or path.stem, rows=rows, hint=f"Use the qids of {path}")


#: Where LFRQA's qids are, for the error on a qid LFRQA lacks.
LFRQA_QID_HINT = "Use LFRQA's qid column (lfrqa.load('all')['qid']); BioASQ needs your own BioASQ files (see lfrqa docs)"


def lfrqa_references(data_dir: str | os.PathLike | None = None) -> References:
    """LFRQA's test set as :class:`References` (every available domain), for the entry points that judge
    against LFRQA (the CLI, the tournament, calibrate): the judge itself reads only what it is given."""
    import lfrqa

    return References(name=REFERENCE, rows=lfrqa.reference_rows(data_dir=data_dir), hint=LFRQA_QID_HINT)


def lfrqa_rows(qids: list[str], data_dir: str | os.PathLike | None = None) -> dict[str, dict]:
    """LFRQA ``question``, ``answer`` and ``domain`` for the given qids (all available domains).

    Deprecated: use ``lfrqa_references(data_dir).pick(qids)``."""
    warnings.warn("lfrqa_rows(qids, data_dir) is deprecated: use lfrqa_references(data_dir).pick(qids)",
                  DeprecationWarning, stacklevel=2)
    return {q: dict(row) for q, row in lfrqa_references(data_dir).pick(qids).items()}


@dataclass(frozen=True, kw_only=True)
class JudgeInputs:
    """What a judge run judges, one entry per pair: the evaluated ``predictions``, the ``references``
    they are judged against, the ``questions``, and optionally ``ids`` (e.g. LFRQA's qid; default
    "0", "1", …), ``domains`` and ``generation_failed`` (True: the answer failed to generate, the pair
    is failed without being judged). ``system``/``opponent`` name the two sides in the verdicts
    (``system``: the run folder's name, else "system"). ``sample``: judge a seeded, domain-stratified
    sub-sample of that many pairs; ``target_width``: stop once the win+tie rate's 95% interval is that
    narrow (e.g. 0.04; a dry run or a batch counts every planned pair).

    Passed whole to :func:`~metric_arena.judge_pairs`, :func:`~metric_arena.judge.judge_dry_run`,
    :func:`~metric_arena.judge.judge_batch_requests` and :func:`~metric_arena.judge.submit_judge_batch`.
    :func:`prepare_judge_inputs` builds one from prediction files and a benchmark's :class:`References`;
    :meth:`from_references` from answers by qid.

    >>> JudgeInputs(predictions=["Paris."], references=["Paris is the capital."], questions=["Capital?"]).qids
    ['0']
    """

    predictions: Sequence[str]
    references: Sequence[str]
    questions: Sequence[str]
    ids: Sequence[str] | None = None
    domains: Sequence[str] | None = None
    generation_failed: Sequence[bool] | None = None
    system: str | None = None
    opponent: str = REFERENCE
    sample: int | None = None
    target_width: float | None = None

    @classmethod
    def from_references(cls, answers: Mapping[str, str], references: References, **options) -> JudgeInputs:
        """``answers`` (qid -> the system's answer) against ``references`` (question, answer and domain by
        qid, refused when one lacks a qid); ``options`` are the other fields (``system``, ``sample``…)."""
        qids = list(answers)
        rows = references.pick(qids)
        return cls(predictions=[answers[q] for q in qids], references=[rows[q]["answer"] for q in qids],
                   questions=[rows[q]["question"] for q in qids], ids=qids,
                   domains=[rows[q]["domain"] for q in qids], **{"opponent": references.name, **options})

    @property
    def qids(self) -> list[str]:
        """The pairs' ids (``ids``, or "0", "1", … when none are given)."""
        return list(self.ids) if self.ids is not None else [str(i) for i in range(len(self.predictions))]

    @property
    def answers(self) -> list[str]:
        """The evaluated answers (``predictions``; the name of earlier releases)."""
        return list(self.predictions)

    @property
    def failed(self) -> list[bool]:
        """``generation_failed`` with one bool per pair."""
        return list(self.generation_failed) if self.generation_failed is not None else [False] * len(self.predictions)

    def without_failed(self) -> JudgeInputs:
        """The same inputs less the failed pairs (what a dry run counts)."""
        keep = [i for i, f in enumerate(self.failed) if not f]
        pick = lambda xs: None if xs is None else [xs[i] for i in keep]  # noqa: E731
        return replace(self, predictions=pick(self.predictions), references=pick(self.references),
                       questions=pick(self.questions), ids=pick(self.qids), domains=pick(self.domains),
                       generation_failed=[False] * len(keep))


def prepare_judge_inputs(
    predictions: str | os.PathLike,
    references: References | Callable[[], References] | None = None,
    *,
    versus: str | os.PathLike | None = None,
    versus_name: str | None = None,
    data_dir: str | os.PathLike | None = None,
) -> JudgeInputs:
    """The pairs to judge: the ``predictions`` file against ``references`` (a benchmark's :class:`References`,
    or a function returning them, called only when needed), or against the ``versus`` file on their
    shared qids.

    Questions and domains come from the references by qid, or from the prediction lines themselves when
    a ``versus`` run's lines all carry a ``question`` (the references are then not read).
    Without ``references`` (deprecated) LFRQA is read, from ``data_dir`` if given.
    """
    if references is None:
        references = partial(_deprecated_lfrqa, data_dir)
    mine = read_predictions(predictions)
    qids = list(mine)
    other = None
    if versus is not None:
        other = read_predictions(versus)
        qids = [q for q in qids if q in other]
        if not qids:
            raise RagQaArenaError(f"{predictions} and {versus} share no qid: nothing to judge")
        opponent = versus_name or Path(versus).stem
        if opponent == REFERENCE:
            raise RagQaArenaError(f"The --versus system would be named 'LFRQA', the name of LFRQA's reference answers: "
                                  f"pass --versus-name with another name (the file is {versus})")
    if other is not None and all("question" in mine[q] for q in qids):
        questions = [mine[q]["question"] for q in qids]
        domains = [mine[q].get("domain") for q in qids]
    else:
        refs = references() if callable(references) else references
        info = refs.pick(qids)
        questions = [info[q]["question"] for q in qids]
        domains = [info[q]["domain"] for q in qids]
        if other is None:
            opponent = refs.name
    answers_b = [other[q]["answer"] for q in qids] if other is not None else [info[q]["answer"] for q in qids]
    failed = [bool(mine[q].get("failed")) or bool(other is not None and other[q].get("failed")) for q in qids]
    return JudgeInputs(predictions=[mine[q]["answer"] for q in qids], references=answers_b, questions=questions,
                       ids=qids, domains=None if any(d is None for d in domains) else domains,
                       generation_failed=failed, opponent=opponent)


def _deprecated_lfrqa(data_dir) -> References:
    warnings.warn("prepare_judge_inputs without references= is deprecated: pass references=lfrqa_references(data_dir) "
                  "(or another benchmark's References)", DeprecationWarning, stacklevel=4)
    return lfrqa_references(data_dir)


def as_judge_inputs(match: JudgeInputs | Mapping) -> JudgeInputs:
    """``match`` as :class:`JudgeInputs` (a mapping holds its fields, e.g. ``{"predictions": [...], ...}``)."""
    return match if isinstance(match, JudgeInputs) else JudgeInputs(**{k: v for k, v in match.items() if v is not None})


#: The keywords each judge entry point took before :class:`JudgeInputs` (one release more, deprecated).
_INPUT_FIELDS = ("references", "questions", "ids", "domains", "generation_failed", "system", "opponent", "sample",
                 "target_width")


def old_input_form(where: str):
    """Let the judge entry point ``where`` (whose first parameter is a :class:`JudgeInputs`) also be called
    in its form of earlier releases, ``where(predictions, references, questions, ..., ids=..., sample=...)``,
    for one release more, with a ``DeprecationWarning`` (:func:`judge_inputs`); its signature stays the new one."""

    def convert(inputs, args: tuple, kwargs: dict) -> tuple:
        legacy_kw = {name: kwargs.pop(name) for name in list(kwargs) if name in _INPUT_FIELDS}
        if isinstance(inputs, JudgeInputs):
            return judge_inputs(where, inputs, (), legacy_kw), args
        return judge_inputs(where, inputs, args[:2], legacy_kw), args[2:]

    def decorate(function):
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def call_async(inputs, *args, **kwargs):
                inputs, args = convert(inputs, args, kwargs)
                return await function(inputs, *args, **kwargs)

            return call_async

        @functools.wraps(function)
        def call(inputs, *args, **kwargs):
            inputs, args = convert(inputs, args, kwargs)
            return function(inputs, *args, **kwargs)

        return call

    return decorate


def judge_inputs(where: str, inputs, legacy: tuple, legacy_kw: dict) -> JudgeInputs:
    """``inputs`` as :class:`JudgeInputs`; the form of earlier releases (``predictions, references,
    questions`` and keywords such as ``ids=``) is accepted with a ``DeprecationWarning``."""
    if isinstance(inputs, JudgeInputs):
        if legacy or legacy_kw:
            given = ", ".join(legacy_kw)
            raise TypeError(f"{where}(JudgeInputs(...)) takes no {given}: set them in the JudgeInputs")
        return inputs
    unknown = sorted(set(legacy_kw) - set(_INPUT_FIELDS))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if len(legacy) > 2:
        raise TypeError(f"{where}() takes at most 3 positional arguments in its old form (predictions, references, "
                        f"questions); pass the rest as keywords, or one JudgeInputs")
    fields = dict(zip(("references", "questions"), legacy))
    for name, value in legacy_kw.items():
        if name in fields:
            raise TypeError(f"{where}() got multiple values for argument {name!r}")
        fields[name] = value
    for name in ("references", "questions"):
        if name not in fields:
            raise TypeError(f"{where}() missing required argument: {name!r} (or pass one JudgeInputs)")
    warnings.warn(f"{where}(predictions, references, questions, ids=..., ...) is deprecated: pass one "
                  f"JudgeInputs(predictions=..., references=..., questions=..., ids=...)", DeprecationWarning,
                  stacklevel=caller_level(__file__))  # the user's call, past this and other deprecation wrappers
    if fields.get("opponent") is None:
        fields.pop("opponent", None)
    return JudgeInputs(predictions=inputs, **fields)


class SpilledAnswers(Mapping):
    """One system's answers by qid, kept in SQLite on disk (:func:`spill_predictions`): read one at a time, in the
    file's order, as ``{"answer"}`` or ``{"answer": "", "failed": True}``."""

    def __init__(self, db: sqlite3.Connection, system: int) -> None:
        self._db, self._system = db, system

    def __getitem__(self, qid: str) -> dict:
        row = self._db.execute("SELECT answer, failed FROM answers WHERE system = ? AND qid = ?",
                               (self._system, qid)).fetchone()
        if row is None:
            raise KeyError(qid)
        return {"answer": "", "failed": True} if row[1] else {"answer": row[0]}

    def __iter__(self) -> Iterator[str]:
        cursor = self._db.execute("SELECT qid FROM answers WHERE system = ? ORDER BY rowid", (self._system,))
        return (qid for (qid,) in cursor.fetchall())

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers WHERE system = ?", (self._system,)).fetchone()[0]


def spill_predictions(named: Mapping[str, str | os.PathLike], folder: str | os.PathLike
                      ) -> tuple[dict[str, SpilledAnswers], sqlite3.Connection]:
    """Every system's prediction file read (:func:`read_predictions`, one at a time) into one SQLite file under
    ``folder``; the systems' answers as :class:`SpilledAnswers` and the connection (closed by the caller): memory
    holds one file's answers at a time, however many systems."""
    db = sqlite3.connect(Path(folder) / "answers.sqlite")
    db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE TABLE answers (system INTEGER, "
                     "qid TEXT, answer TEXT, failed INTEGER); CREATE UNIQUE INDEX by_qid ON answers (system, qid);")
    systems = {}
    for k, (name, path) in enumerate(named.items()):
        rows = read_predictions(path)
        db.executemany("INSERT INTO answers VALUES (?, ?, ?, ?)",
                       ((k, qid, row["answer"], bool(row.get("failed"))) for qid, row in rows.items()))
        db.commit()
        del rows
        systems[name] = SpilledAnswers(db, k)
    return systems, db
