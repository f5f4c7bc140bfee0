"""What a judge run reads: prediction files (JSON Lines, Parquet or a saved Dataset, by qid) joined to LFRQA's questions and answers."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.files import iter_records, saved_dataset
from metric_arena.records import check_prediction

__all__ = ["MAX_EXPORT_SYSTEMS", "MAX_TOURNAMENT_SYSTEMS", "JudgeInputs", "SpilledAnswers", "check_system_count",
           "lfrqa_rows", "prepare_judge_inputs", "read_predictions", "spill_predictions"]

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


def lfrqa_rows(qids: list[str], data_dir: str | os.PathLike | None = None) -> dict[str, dict]:
    """LFRQA ``question``, ``answer`` and ``domain`` for the given qids (all available domains)."""
    import lfrqa

    dataset = lfrqa.load("all", data_dir=data_dir)
    wanted = set(qids)
    found = {}
    for qid, question, answer, domain in zip(dataset["qid"], dataset["question"], dataset["answer"], dataset["domain"]):
        if qid in wanted:
            found[qid] = {"question": question, "answer": answer, "domain": domain}
    missing = [q for q in qids if q not in found]
    if missing:
        shown = ", ".join(repr(q) for q in missing[:5])
        raise RagQaArenaError(
            f"{len(missing)} qid(s) are not in LFRQA's test set, e.g. {shown}. Use LFRQA's qid column "
            "(lfrqa.load('all')['qid']); BioASQ needs your own BioASQ files (see lfrqa docs)"
        )
    return found


@dataclass(frozen=True)
class JudgeInputs:
    """The pairs of a judge run, by qid: the system's answers, the references, questions, domains."""

    qids: list[str]
    answers: list[str]
    references: list[str]
    questions: list[str]
    domains: list[str] | None
    failed: list[bool]  # a side's line is marked "failed" (generation gave no answer): never judged
    opponent: str = "LFRQA"

    def without_failed(self) -> JudgeInputs:
        """The same inputs less the failed pairs (what a dry run counts)."""
        keep = [i for i, f in enumerate(self.failed) if not f]
        pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
        return replace(self, qids=pick(self.qids), answers=pick(self.answers), references=pick(self.references),
                       questions=pick(self.questions), domains=None if self.domains is None else pick(self.domains),
                       failed=[False] * len(keep))


def prepare_judge_inputs(
    predictions: str | os.PathLike,
    *,
    versus: str | os.PathLike | None = None,
    versus_name: str | None = None,
    data_dir: str | os.PathLike | None = None,
) -> JudgeInputs:
    """The pairs to judge: ``predictions`` against LFRQA, or against the ``versus`` file on their shared qids.

    Questions and domains come from LFRQA by qid, or from the prediction lines themselves when a
    ``versus`` run's lines all carry a ``question``.
    """
    mine = read_predictions(predictions)
    qids = list(mine)
    opponent, other = "LFRQA", None
    if versus is not None:
        other = read_predictions(versus)
        qids = [q for q in qids if q in other]
        if not qids:
            raise RagQaArenaError(f"{predictions} and {versus} share no qid: nothing to judge")
        opponent = versus_name or Path(versus).stem
        if opponent == "LFRQA":
            raise RagQaArenaError(f"The --versus system would be named 'LFRQA', the name of LFRQA's reference answers: "
                                  f"pass --versus-name with another name (the file is {versus})")
    if other is not None and all("question" in mine[q] for q in qids):
        questions = [mine[q]["question"] for q in qids]
        domains = [mine[q].get("domain") for q in qids]
    else:
        info = lfrqa_rows(qids, data_dir)
        questions = [info[q]["question"] for q in qids]
        domains = [info[q]["domain"] for q in qids]
    references = [other[q]["answer"] for q in qids] if other is not None else [info[q]["answer"] for q in qids]
    failed = [bool(mine[q].get("failed")) or bool(other is not None and other[q].get("failed")) for q in qids]
    return JudgeInputs(qids=qids, answers=[mine[q]["answer"] for q in qids], references=references,
                       questions=questions, domains=None if any(d is None for d in domains) else domains,
                       failed=failed, opponent=opponent)


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
