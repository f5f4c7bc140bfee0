"""The package's structure holds: light imports, a small public API, explicit keyword arguments."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

HEAVY = ("datasets", "pyarrow", "pandas", "torch", "transformers", "matplotlib")


@pytest.mark.parametrize("code", [
    "import metric_arena",
    "import lfrqa, builders, retrieval",
    "from rag_qa_arena.cli import build_parser; build_parser()",
])
def test_start_up_loads_no_heavy_library(code):
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "", f"{code!r} loads {out.strip()}"


def test_public_api_is_small_and_explicit():
    import metric_arena

    assert len(metric_arena.__all__) <= 15
    for name in metric_arena.__all__:
        assert hasattr(metric_arena, name), name
    from metric_arena.space import export_metric, push_metric

    for function in (metric_arena.judge_pairs, metric_arena.ajudge_pairs, metric_arena.generate_answers,
                     metric_arena.build_leaderboard, metric_arena.write_report, metric_arena.push_run,
                     metric_arena.reward_function, export_metric, push_metric):
        kinds = {p.kind for p in inspect.signature(function).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, f"{function.__name__} hides options in **kwargs"
        assert function.__doc__


ROOMS = ("metric_arena", "metric_arena.llm", "metric_arena.judge", "metric_arena.generate", "metric_arena.report",
         "metric_arena.stats", "metric_arena.train")


def test_the_sub_rooms_list_what_others_call_and_nothing_is_listed_twice_at_the_top():
    import metric_arena
    import metric_arena.llm

    assert len(metric_arena.llm.__all__) <= 25, sorted(metric_arena.llm.__all__)
    assert {"JudgeConfig", "RunConfig"} <= set(metric_arena.__all__)
    for name in ("AuthenticationFailed", "ModelNotFound"):  # BackendError's kinds: attributes, not listed
        assert hasattr(metric_arena, name) and name not in metric_arena.__all__
    for name in ("run_sync", "Runner", "make_backends", "BadReply", "estimate_tokens", "write_batch_files"):
        assert name not in metric_arena.llm.__all__, name  # used by tests or one room only: private, or in llm.batch
    from metric_arena.llm import batch

    assert {"BatchNotReady", "submit_batches", "collect", "write_batch_files"} <= set(batch.__all__)


def test_no_public_name_prints_a_private_module_path():
    """``metric_arena.RetryPolicy`` prints as ``metric_arena.RetryPolicy``, not ``metric_arena.llm._runner``."""
    import importlib

    private = []
    for room in (*ROOMS, "metric_arena.llm.batch"):
        module = importlib.import_module(room)
        for name in module.__all__:
            try:
                target = getattr(module, name)
            except ImportError:  # ArenaCallback without transformers
                continue
            if not (inspect.isclass(target) or inspect.isfunction(target) or callable(target)
                    and hasattr(target, "__code__")):
                continue  # constants, type aliases, modules
            home = getattr(target, "__module__", None) or ""
            if any(part.startswith("_") for part in home.split(".")):
                private.append(f"{room}.{name} -> {home}")
    assert private == []
    import metric_arena

    assert metric_arena.RetryPolicy.__module__ == "metric_arena"
    assert metric_arena.JudgeConfig.__module__ == "metric_arena" and metric_arena.RunConfig.__module__ == "metric_arena"


def test_user_errors_share_one_base_class():
    import builders
    import lfrqa
    import metric_arena
    from metric_arena.llm.batch import BatchNotReady  # noqa: F401 - a state, not a user error

    for error in (lfrqa.ChecksumError, lfrqa.InvalidRecord, builders.SecretFoundError):
        assert issubclass(error, metric_arena.RagQaArenaError) and issubclass(error, ValueError)


def test_cli_prints_one_line_for_mistakes_and_the_traceback_with_debug(tmp_path):
    cmd = [sys.executable, "-m", "rag_qa_arena", "judge", "--predictions", str(tmp_path / "missing.jsonl"),
           "--out", str(tmp_path / "run")]
    mistake = subprocess.run(cmd, capture_output=True, text=True)
    assert mistake.returncode == 2 and mistake.stderr.count("\n") == 1 and "does not exist" in mistake.stderr
    debug = subprocess.run([cmd[0], "-m", "rag_qa_arena", "--debug", *cmd[3:]], capture_output=True, text=True)
    assert debug.returncode != 0 and "Traceback" in debug.stderr
    version = subprocess.run([sys.executable, "-m", "rag_qa_arena", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("rag-qa-arena ")


def test_no_public_function_of_the_rooms_hides_options_in_kwargs():
    import importlib

    hidden = []
    for room in ("metric_arena", "metric_arena.llm", "metric_arena.judge", "metric_arena.generate",
                 "metric_arena.report", "metric_arena.stats", "metric_arena.calibrate", "lfrqa", "builders",
                 "retrieval"):
        module = importlib.import_module(room)
        for name in module.__all__:
            target = getattr(module, name)
            if inspect.isclass(target) and (issubclass(target, BaseException) or "__init__" not in vars(target)):
                continue  # exceptions and classes without a constructor of their own
            function = target.__init__ if inspect.isclass(target) else target
            if not callable(function) or inspect.ismodule(target):
                continue
            try:
                parameters = inspect.signature(function).parameters.values()
            except (TypeError, ValueError):
                continue
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
                hidden.append(f"{room}.{name}")
    assert hidden == []


def test_the_cli_contract_forbids_every_private_module():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [contract] = [c for c in config if c.get("source_modules") == ["rag_qa_arena"]]
    private = {".".join(path.relative_to(root).with_suffix("").parts)
               for package in ("lfrqa", "builders", "retrieval", "metric_arena")
               for path in (root / package).rglob("_*.py") if path.name != "__init__.py"}
    assert private <= set(contract["forbidden_modules"]), sorted(private - set(contract["forbidden_modules"]))


def test_the_kernel_contract_forbids_every_other_module_of_lfrqa():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [contract] = [c for c in config if c.get("source_modules") == ["lfrqa.kernel"]]
    modules = {f"lfrqa.{path.stem if path.name != '__init__.py' else path.parent.name}"
               for path in [*(root / "lfrqa").glob("*.py"), *(root / "lfrqa").glob("*/__init__.py")]
               if path.name != "__init__.py" or path.parent != root / "lfrqa"}
    assert "lfrqa.files" in modules and "lfrqa.checks" in modules
    allowed = {"lfrqa.kernel", "lfrqa.errors"}
    missing = modules - allowed - set(contract["forbidden_modules"])
    assert not missing, sorted(missing)


def test_the_tree_imports_the_kernel_by_its_name():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    old = {str(path.relative_to(root)) for folder in ("lfrqa", "builders", "retrieval", "metric_arena", "rag_qa_arena",
                                                      "tests", "benchmarks")
           for path in (root / folder).rglob("*.py")
           if path.parent.name != "files" and ("from lfrqa.files" in (text := path.read_text(encoding="utf-8"))
                                                or "import lfrqa.files" in text or "from lfrqa import files" in text)}
    old.discard("tests/test_surface.py")  # the alias's own test
    old.discard("tests/test_architecture.py")
    assert not old, sorted(old)
