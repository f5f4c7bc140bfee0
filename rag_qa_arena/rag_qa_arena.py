"""``evaluate.load("rag_qa_arena")`` run at the root of a checkout looks for ``rag_qa_arena/rag_qa_arena.py``
(evaluate reads a bare name as a local folder first), and this CLI package has that name: this file
makes that call load the packaged module (:data:`metric_arena.METRIC_PATH`) instead of failing.
It defines nothing; the CLI never imports it. Elsewhere, a bare name means the Hub's
``evaluate-metric/<name>``: use ``metric_arena.METRIC_PATH``, a folder written by
``rag-qa-arena metric export``, or a Space pushed by ``rag-qa-arena metric push``.
"""

from metric_arena.rag_qa_arena.rag_qa_arena import RagQaArena  # From: rag-qa-arena

__all__ = ["RagQaArena"]
