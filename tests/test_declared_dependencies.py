"""Every third-party package the code imports is declared in pyproject.toml (core or an extra)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("lfrqa", "builders", "retrieval", "metric_arena", "rag_qa_arena")
#: Imported only where an option asks for it, with a MissingDependency naming the pip install line.
ON_REQUEST = {"Stemmer": "PyStemmer (bm25 stemmer=...)"}


def declared() -> set[str]:
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"]) + [s for extra in project["optional-dependencies"].values() for s in extra]
    return {normalize(re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0]) for spec in specs}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported() -> dict[str, str]:
    """Top-level module -> first file importing it, for every import in the package sources."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared():
    distributions = packages_distributions()
    ours = set(PACKAGES)
    missing = []
    allowed = declared()
    for module, where in sorted(imported().items()):
        if module in ours or module in sys.stdlib_module_names or module in ON_REQUEST or module == "__future__":
            continue
        names = {normalize(d) for d in distributions.get(module, [module])}
        if not names & allowed:
            missing.append(f"{module} ({where}; distribution {', '.join(sorted(names))})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)
