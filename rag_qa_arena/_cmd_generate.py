"""``rag-qa-arena generate`` (being written)."""


def register(subparsers) -> None:
    subparsers.add_parser("generate", help="(under construction)")
