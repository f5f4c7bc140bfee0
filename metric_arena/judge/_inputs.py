"""What a judge run reads: prediction files (JSON Lines, Parquet or a saved Dataset, by qid) joined to LFRQA's questions and answers."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.files import iter_records, saved_dataset
from metric_arena.records import REFERENCE, check_prediction

__all__ = ["JudgeInputs", "lfrqa_rows", "prepare_judge_inputs", "read_predictions"]


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
    opponent: str = REFERENCE

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
    opponent, other = REFERENCE, None
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
        info = lfrqa_rows(qids, data_dir)
        questions = [info[q]["question"] for q in qids]
        domains = [info[q]["domain"] for q in qids]
    references = [other[q]["answer"] for q in qids] if other is not None else [info[q]["answer"] for q in qids]
    failed = [bool(mine[q].get("failed")) or bool(other is not None and other[q].get("failed")) for q in qids]
    return JudgeInputs(qids=qids, answers=[mine[q]["answer"] for q in qids], references=references,
                       questions=questions, domains=None if any(d is None for d in domains) else domains,
                       failed=failed, opponent=opponent)
