"""One home for every constant: names and defaults are written once in the package source; a literal that
reappears elsewhere fails here (docstrings, comments and error messages' prose do not count: only string
and number constants in code)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lfrqa", "builders", "retrieval", "metric_arena", "rag_qa_arena")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


@functools.lru_cache(maxsize=1)
def _constants() -> list[tuple[object, str, bool]]:
    """Every string or number constant in the package's code: (value, "path:line", inside an allowed call)."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docs = _docstrings(tree)
            parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and type(node.value) in (str, int, float) and id(node) not in docs:
                    parent = parents.get(id(node))
                    call = parent.func if isinstance(parent, ast.Call) else None
                    name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
                    out.append((node.value, f"{path.relative_to(ROOT)}:{node.lineno}", name))
    return out


def literal_homes(values: set, *, calls: set[str] = frozenset()) -> dict[str, list[str]]:
    """Where each value of ``values`` is written as a constant in code: value -> ["path:line", ...]."""
    found: dict[str, list[str]] = {}
    for value, where, call in _constants():
        if value in values and type(value) in {type(v) for v in values} and call not in calls:
            found.setdefault(str(value), []).append(where)
    return found


def _only_in(values: set, home: str, **options) -> None:
    misplaced = {v: [w for w in where if not w.startswith(home + ":")] for v, where in literal_homes(values, **options).items()}
    misplaced = {v: w for v, w in misplaced.items() if w}
    assert not misplaced, f"written outside {home}: {misplaced}"


def test_backend_names_are_written_in_the_registry_only():
    # importlib.import_module("vllm") names the vllm package, not the backend
    _only_in({"openai", "hf", "vllm"}, "metric_arena/llm/_types.py", calls={"import_module", "find_spec"})
