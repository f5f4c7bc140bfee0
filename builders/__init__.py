"""Raw sources -> dataset artifacts: Hub-ready export and push of LFRQA (corpora: see lfrqa.load_corpus)."""

from builders._export import export_dataset, render_card
from builders._push import push_dataset, upload_operations

__all__ = ["export_dataset", "push_dataset", "render_card", "upload_operations"]
