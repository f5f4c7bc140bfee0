"""BioASQ: LFRQA's seventh domain, built from the user's own BioASQ golden files.

BioASQ's license does not allow redistribution, so the benchmark does not publish this domain.
Put the golden files of the BioASQ task B (JSON, ``{"questions": [{"id", "body",
"ideal_answer", "documents", ...}]}``) in ``<data_dir>/bioasq/``. RobustQA, and so the paper,
kept a subset of BioASQ's test queries: list their ids, one per line, in
``<data_dir>/bioasq/qids.txt`` to keep exactly those (all questions are used otherwise). The
answer is the question's first "ideal" answer; the gold documents are the PubMed ids of its
``documents`` URLs. For ``split="dev"`` use ``<data_dir>/bioasq/dev/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from lfrqa.errors import RagQaArenaError

_PUBMED_ID = re.compile(r"(\d+)/?$")

HOW_TO = (
    "The bioasq domain is built from your own BioASQ golden files (BioASQ's license forbids "
    "redistribution). Register at bioasq.org, download the task B golden files (JSON), put them in "
    "<data_dir>/bioasq/ (or <data_dir>/bioasq/dev/ for split='dev'), optionally list RobustQA's "
    "test qids in <data_dir>/bioasq/qids.txt, and pass data_dir=... or set $LFRQA_DATA_DIR."
)


def bioasq_folder(data_dir: Path | None, split: str) -> Path:
    if data_dir is None:
        raise FileNotFoundError(f"No data folder is set. {HOW_TO}")
    folder = data_dir / "bioasq" / ("dev" if split == "dev" else "")
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"No BioASQ golden files (*.json) in {folder}. {HOW_TO}")
    return folder


def bioasq_files(data_dir: Path | None, split: str) -> list[Path]:
    return sorted(bioasq_folder(data_dir, split).glob("*.json"))


def iter_bioasq_records(files: list[Path], qids_file: Path | None = None) -> Iterator[tuple[str, int, dict]]:
    """Raw records in the published LFRQA format, from BioASQ golden files."""
    keep = None
    if qids_file is not None and qids_file.is_file():
        keep = {line.strip() for line in qids_file.read_text(encoding="utf-8").splitlines() if line.strip()}
    seen: set[str] = set()
    for path in files:
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RagQaArenaError(f"{path} is not a BioASQ golden file (UTF-8 JSON): {error}") from error
        questions = payload.get("questions") if isinstance(payload, dict) else None
        if not isinstance(questions, list):
            raise RagQaArenaError(f"{path} has no 'questions' list; expected BioASQ's golden-file format. {HOW_TO}")
        for number, question in enumerate(questions, 1):
            qid = str(question.get("id", "")).strip()
            if not qid or qid in seen or (keep is not None and qid not in keep):
                continue
            seen.add(qid)
            ideal = question.get("ideal_answer")
            answer = ideal[0] if isinstance(ideal, list) and ideal else ideal
            docs = [m.group(1) for url in question.get("documents", []) if (m := _PUBMED_ID.search(str(url)))]
            yield str(path), number, {
                "qid": qid,
                "question": question.get("body"),
                "answer": answer,
                "faithful_answer_w_citation": answer,
                "gold_doc_ids": docs,
            }
