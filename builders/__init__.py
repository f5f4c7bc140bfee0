"""Raw sources -> dataset artifacts: RobustQA documents and 100-word passages, Hub-ready export and push."""

from builders._documents import CORPUS_DOMAINS, iter_documents, locate_source
from builders._export import export_dataset, render_card
from builders._passages import iter_passages, split_passages
from builders._push import push_dataset, upload_operations

__all__ = [
    "CORPUS_DOMAINS",
    "export_dataset",
    "iter_documents",
    "iter_passages",
    "locate_source",
    "push_dataset",
    "render_card",
    "split_passages",
    "upload_operations",
]
