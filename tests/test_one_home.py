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


def test_the_reference_name_and_the_run_folder_file_names_are_written_in_records_only():
    _only_in({"LFRQA", "verdicts.jsonl", "summary.json", ".verdicts.replacing.jsonl", "tournament.json",
              "leaderboard.json", "report.json"}, "metric_arena/records/__init__.py")


def _tuples(value: tuple) -> list[str]:
    """Where the tuple ``value`` is written as a literal tuple of constants (a ``Literal[...]`` type aside)."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            types = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)
                     and getattr(n.value, "id", getattr(n.value, "attr", "")) == "Literal"}
            for node in ast.walk(tree):
                if id(node) in types:
                    continue
                if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts) \
                        and tuple(e.value for e in node.elts) == value:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_the_outcomes_are_defined_once():
    assert [w.split(":")[0] for w in _tuples(("win", "tie", "loss"))] == ["metric_arena/stats/_settings.py"]
    from metric_arena.records import OUTCOMES
    from metric_arena.stats import OUTCOMES as STATS_OUTCOMES

    assert OUTCOMES is STATS_OUTCOMES


#: Shared defaults: a parameter or flag of these names takes its default from the one constant, never a literal.
SHARED_DEFAULTS = {"max_concurrency": 16, "alpha": 0.05, "sample": 700, "--max-concurrency": 16, "--alpha": 0.05,
                   "--sample": 700}


def test_shared_defaults_are_named_constants_not_literals():
    literal = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                pairs = []
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = node.args
                    positional = args.posonlyargs + args.args
                    pairs += list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
                    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                    pairs = [(a.arg, d) for a, d in pairs]
                elif isinstance(node, ast.ClassDef):  # dataclass fields
                    pairs = [(s.target.id, s.value) for s in node.body if isinstance(s, ast.AnnAssign)
                             and isinstance(s.target, ast.Name) and s.value is not None]
                elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                    pairs = [(node.args[0].value, k.value) for k in node.keywords if k.arg == "default"]
                for name, default in pairs:
                    if name in SHARED_DEFAULTS and isinstance(default, ast.Constant) \
                            and default.value == SHARED_DEFAULTS[name]:
                        literal.append(f"{path.relative_to(ROOT)}:{default.lineno} {name}={default.value!r}")
    assert literal == []
    from metric_arena.judge import TournamentSchedule
    from metric_arena.llm import DEFAULT_MAX_CONCURRENCY, RunConfig

    assert RunConfig().max_concurrency == DEFAULT_MAX_CONCURRENCY and TournamentSchedule().sample == 700
