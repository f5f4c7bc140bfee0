"""The ``rag-qa-arena`` command line: a thin layer over lfrqa, builders, retrieval and metric_arena."""
