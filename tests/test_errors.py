"""One exception tree: every exception class the packages define is drawn in lfrqa.errors' notes and lies
under lfrqa.errors.ArenaError, and every name stays importable where users import it today."""

from __future__ import annotations

import ast
from pathlib import Path

import lfrqa.errors
from lfrqa.errors import ArenaError, RagQaArenaError

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lfrqa", "builders", "retrieval", "metric_arena", "rag_qa_arena")


def defined_exceptions() -> dict[str, list[str]]:
    """``{class name: its bases' names}`` of the public classes whose bases look like exceptions (read from the
    source: nothing is imported, so no optional dependency is loaded)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
                    if any(b.endswith(("Error", "Exception", "Refused", "Corrupt", "Mismatch", "Busy", "Failed",
                                       "NotFound", "Unreachable", "Reply", "Ready", "Locked")) for b in bases):
                        found[node.name] = bases
    return found


def test_every_exception_class_is_drawn_and_under_the_root():
    found = defined_exceptions()
    assert len(found) >= 20, found  # the scan sees the tree (not an empty walk)
    drawing = lfrqa.errors.__doc__
    missing = sorted(name for name in found if f" {name} " not in drawing and f" {name}\n" not in drawing)
    assert missing == [], f"draw these in lfrqa/errors.py's tree: {missing}"


    def under_root(name: str, seen: frozenset = frozenset()) -> bool:
        return name == "ArenaError" or any(b in found and b not in seen and under_root(b, seen | {name})
                                           for b in found.get(name, ()))

    assert sorted(name for name in found if not under_root(name)) == []


def test_old_import_paths_still_work():
    import builders
    import lfrqa
    from metric_arena import BackendError, RagQaArenaError as top
    from metric_arena.llm import AuthenticationFailed  # noqa: F401
    from metric_arena.llm.batch import BatchNotReady
    from metric_arena.report import ComparisonRefused

    assert top is RagQaArenaError and issubclass(RagQaArenaError, ValueError)
    assert issubclass(BackendError, ArenaError) and not issubclass(BackendError, RagQaArenaError)
    assert issubclass(BatchNotReady, RuntimeError) and issubclass(ComparisonRefused, RagQaArenaError)
    assert lfrqa.ChecksumError and builders.SecretFoundError
