"""ColBERTv2 indexing and search on a CUDA device with the tiny checkpoint of ``test_colbert``.

Marked ``gpu`` only (not ``slow``), so ``pytest -m slow`` on a CPU machine does not collect a test
that could only skip; run it with ``python -m pytest -m gpu`` on a machine with a GPU."""

from __future__ import annotations

import pytest

from tests.test_colbert import ColBERTRetriever, checkpoint, passages  # noqa: F401 - fixtures

pytestmark = pytest.mark.gpu


def test_index_and_search_on_gpu(checkpoint, passages, tmp_path):  # noqa: F811 - pytest fixture injection
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    retriever = ColBERTRetriever(checkpoint, index_dir=tmp_path / "gpu", gpus=1, show_progress=False)
    retriever.index(passages)
    results = retriever.search({f"q{i}": passages[i]["text"] for i in range(0, 300, 10)}, k=5)
    assert sum(results[f"q{i}"][0][0] == f"{i}-0" for i in range(0, 300, 10)) >= 27
