"""Command groups beyond the twelve modules of :mod:`rag_qa_arena`: each module here exposes
``register(subparsers)``, as the ``_cmd_<name>`` modules do, and :mod:`rag_qa_arena.cli` registers it."""
