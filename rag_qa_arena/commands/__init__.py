"""Command groups beyond the first twelve modules of ``rag_qa_arena/`` (each exposes ``register(subparsers)``)."""
