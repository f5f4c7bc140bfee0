"""BioASQ's PubMed abstracts -> documents (user-supplied: BioASQ's license forbids redistribution).

RobustQA took the documents of its BioASQ domain from BioASQ's ``allMeSH_2021`` release, one
document per PubMed article (``doc_id`` = PMID, the title, the abstract as text), and wrote them
to a ``documents.jsonl``. Put that file, or any JSON Lines file of the same articles, at
``<data_dir>/bioasq/documents.jsonl``, one object per line with

* ``doc_id`` (or ``pmid``): the PubMed id, as in BioASQ's golden files' document URLs;
* ``title``: optional;
* ``text`` (or ``abstractText``): the abstract.

Other keys (RobustQA's ``metadata``, MeSH fields) are ignored. Register at bioasq.org to get the
release. Doc ids are not checked for repeats here (the corpus has millions); retrievers refuse
repeated passage ids when they index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import iter_jsonl

BIOASQ_DOCUMENTS = "bioasq/documents.jsonl"

HOW_TO = (
    "BioASQ's documents cannot be downloaded for you (BioASQ's license forbids redistribution): register at "
    "bioasq.org, get the allMeSH_2021 release, and write its articles as JSON Lines "
    '({"doc_id": PMID, "title": ..., "text": abstract} per line, RobustQA\'s documents.jsonl) to '
    f"<data_dir>/{BIOASQ_DOCUMENTS}; then pass data_dir=... or set $LFRQA_DATA_DIR."
)


def iter_bioasq_documents(path: str | Path) -> Iterator[dict[str, str]]:
    """Documents from a JSON Lines file of PubMed articles (see the module docstring)."""
    path = Path(path)
    for number, record in iter_jsonl(path, hint=HOW_TO):
        doc_id = record.get("doc_id", record.get("pmid"))
        text = record.get("text", record.get("abstractText"))
        if doc_id is None or str(doc_id).strip() == "" or text is None:
            raise RagQaArenaError(
                f"{path} line {number}: expected an object with 'doc_id' (or 'pmid') and 'text' "
                f"(or 'abstractText'). {HOW_TO}"
            )
        yield {"doc_id": str(doc_id).strip(), "title": record.get("title") or "", "text": str(text)}
