"""Retrieval over the RobustQA corpora: ColBERTv2 (``colbert-ai``) and BM25 (``bm25s``) behind one interface.

>>> from retrieval import BM25Retriever, evaluate
>>> retriever = BM25Retriever(show_progress=False)
>>> retriever.index([{"pid": "3-0", "text": "capital gains tax on shares"}, {"pid": "9-0", "text": "cats"}])
>>> results = retriever.search({"q1": "tax on shares"}, k=1)
>>> evaluate(results, {"q1": ["3"]}, ks=(1,))["hit@1"]
1.0
"""

from lfrqa.exports import export_names
from retrieval._base import Retriever
from retrieval._bm25 import BM25Retriever
from retrieval._colbert import ColBERTIndexing, ColBERTRetriever, PlaidSearch
from retrieval._manifest import MANIFEST_LIMIT
from retrieval._metrics import evaluate
from retrieval._pipeline import RETRIEVERS, IndexOptions, RetrieveRun, retrieve
from retrieval._share import IndexCorpus, export_index, load_index, push_index

__all__ = [
    "MANIFEST_LIMIT", "RETRIEVERS", "BM25Retriever", "ColBERTIndexing", "ColBERTRetriever", "IndexCorpus", "IndexOptions", "PlaidSearch",
    "RetrieveRun", "Retriever", "evaluate",
    "export_index", "load_index",
    "push_index", "retrieve",
]

export_names(globals())
