"""FiQA (FiQA 2018 task 2) -> documents.

Two layouts, the same documents under the same ids (LFRQA's fiqa ``gold_doc_ids`` are them):

* ``FiQA_train_doc_final.tsv`` of the FiQA 2018 task, which RobustQA read: tab-separated with a
  header row, columns ``<row>``, ``docid``, ``doc``, ``timestamp``; quoted fields may span lines.
* BEIR's copy, ``fiqa/corpus.jsonl`` inside ``fiqa.zip``: ``{"_id", "title", "text"}`` per line.
  This is what :func:`builders.load_corpus` downloads, the FiQA site offering no direct link.

RobustQA read the TSV with pandas, which turns an empty document into the text ``"nan"``; here
an empty document stays empty (and so yields no passage).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_jsonl

FIQA_TSV = "fiqa/FiQA_train_doc_final.tsv"
FIQA_BEIR = "fiqa/corpus.jsonl"
FIQA_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/fiqa.zip"
#: md5 of fiqa.zip as BEIR lists it.
FIQA_MD5 = "17918ed23cd04fb15047f73e6c3bd9d9"

csv.field_size_limit(1 << 30)


def iter_fiqa_documents(path: str | Path) -> Iterator[dict[str, str]]:
    """Documents of either FiQA layout, chosen by the file name's suffix (``.tsv`` or ``.jsonl``)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        with open(path, "rb") as handle:
            yield from iter_beir_documents(handle, source=str(path))
    else:
        yield from _iter_tsv(path)


def _iter_tsv(path: Path) -> Iterator[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quotechar='"')
        header = next(reader, None)
        if header is None or "docid" not in header or "doc" not in header:
            raise RagQaArenaError(
                f"{path}: expected FiQA_train_doc_final.tsv's header with columns 'docid' and 'doc' "
                f"(tab-separated), got {header!r}"
            )
        id_col, text_col = header.index("docid"), header.index("doc")
        seen: set[str] = set()
        for row in reader:
            if not row:
                continue
            if len(row) <= max(id_col, text_col):
                raise RagQaArenaError(f"{path} line {reader.line_num}: {len(row)} columns, expected {len(header)}")
            yield _document(path, reader.line_num, row[id_col], "", row[text_col], seen)


def iter_beir_documents(handle: BinaryIO, source: str = FIQA_BEIR) -> Iterator[dict[str, str]]:
    """Documents of BEIR's ``corpus.jsonl``, read from a binary stream."""
    seen: set[str] = set()
    for number, record in iter_jsonl(handle, name=source, hint="Expected BEIR's corpus.jsonl."):
        if "_id" not in record:
            raise RagQaArenaError(f"{source} line {number}: expected BEIR's {{'_id', 'title', 'text'}} object")
        yield _document(source, number, record["_id"], record.get("title") or "", record.get("text") or "", seen)


def _document(path, line: int, doc_id, title: str, text: str, seen: set[str]) -> dict[str, str]:
    doc_id = str(doc_id).strip()
    if not doc_id:
        raise RagQaArenaError(f"{path} line {line}: empty document id")
    if doc_id in seen:
        raise RagQaArenaError(f"{path} line {line}: document id {doc_id!r} is repeated")
    seen.add(doc_id)
    return {"doc_id": doc_id, "title": title, "text": text}
