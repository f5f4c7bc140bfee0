"""The evaluate module in eval loops (add_batch keeps ids and domains), exported as a folder that
loads from anywhere, and uploaded as a Space (the commit operations, through a recording fake Hub)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import metric_arena
from lfrqa.kernel import package_version
from metric_arena.space import METRIC_NAME, export_metric, metric_files, push_metric
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer

ROOT = Path(metric_arena.__file__).resolve().parent.parent
FAKE_HF = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"


@pytest.fixture
def env(monkeypatch, tmp_path):
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-from-env")
        monkeypatch.setenv("RAG_QA_ARENA_CACHE", str(tmp_path / "cache"))
        yield server


@pytest.fixture
def arena():
    evaluate = pytest.importorskip("evaluate")
    return evaluate.load(metric_arena.METRIC_PATH)


# --------------------------------------------------------------------------------------------
# add_batch / add / compute: all five inputs
# --------------------------------------------------------------------------------------------
def test_add_batch_keeps_ids_and_domains(env, arena):
    arena.add_batch(predictions=["P one", "P two"], references=["R one", "R two"],
                    questions=["first question", "second question here"], ids=["fiqa-1", "sci-7"],
                    domains=["fiqa", "science"])
    arena.add_batch(predictions=["P three"], references=["R three"], questions=["third question"],
                    ids=["sci-9"], domains=["science"])
    res = arena.compute(judge="openai:m")
    assert res["n"] == 3 and len(env.requests) == 3
    assert [v["qid"] for v in res["verdicts"]] == ["fiqa-1", "sci-7", "sci-9"]
    assert [v["domain"] for v in res["verdicts"]] == ["fiqa", "science", "science"]
    assert res["per_domain"]["science"]["n"] == 2 and res["per_domain"]["fiqa"]["n"] == 1
    # server rates Answer 1; "first question" (2 words) shows the prediction first -> win
    assert res["outcomes"] == {"fiqa-1": "win", "sci-7": "loss", "sci-9": "win"}


def test_batches_without_ids_or_domains_and_single_examples(env, arena):
    arena.add_batch(predictions=["a"], references=["b"], questions=["q one"])
    arena.add_batch(predictions=["c"], references=["d"], questions=["q two"])
    res = arena.compute(judge="openai:m")
    assert list(res["outcomes"]) == ["0", "1"] and not res.get("per_domain")
    arena.add(prediction="x", reference="y", questions="a question", ids=7, domains="fiqa")
    arena.add(prediction="z", reference="w", questions="another one", ids=8, domains="fiqa")
    res = arena.compute(judge="openai:m")
    assert list(res["outcomes"]) == ["7", "8"] and list(res["per_domain"]) == ["fiqa"]
    only_domains = arena.compute(predictions=["a"], references=["b"], questions=["q"], domains=["writing"],
                                 judge="openai:m")
    assert list(only_domains["per_domain"]) == ["writing"] and list(only_domains["outcomes"]) == ["0"]


def test_mixed_batches_are_refused_with_the_fix(env, arena):
    arena.add_batch(predictions=["a"], references=["b"], questions=["q"], ids=["1"])
    with pytest.raises(ValueError, match="give ids .and domains. with every batch or with none"):
        arena.add_batch(predictions=["c"], references=["d"], questions=["q2"])
    res = arena.compute(judge="openai:m")  # what was added is still judged, then the module is reset
    assert list(res["outcomes"]) == ["1"]
    with pytest.raises(ValueError, match="pass them to add_batch"):
        arena.compute(ids=["1"], judge="openai:m")
    with pytest.raises(ValueError, match="questions"):
        arena.compute(predictions=["a"], references=["b"], ids=["1"])


def test_a_refused_batch_leaves_the_module_usable(env, arena):
    with pytest.raises(ValueError, match=r"Mismatch in the number of predictions \(1\) and references \(2\)"):
        arena.compute(predictions=["a"], references=["b", "c"], questions=["q"], judge="openai:m")
    with pytest.raises(ValueError, match=r"questions\[0\] is int"):
        arena.add_batch(predictions=["a"], references=["b"], questions=[3])
    res = arena.compute(predictions=["a"], references=["b"], questions=["q"], ids=["z"], domains=["fiqa"],
                        judge="openai:m")
    assert list(res["outcomes"]) == ["z"] and list(res["per_domain"]) == ["fiqa"]


def test_feature_sets_with_and_without_ids_and_domains(arena):
    names = [sorted(features) for features in arena.features]
    base = ["predictions", "questions", "references"]
    assert names == [sorted(base + ["ids", "domains"]), sorted(base + ["ids"]), sorted(base + ["domains"]), base]
    assert all(str(f.dtype) == "string" for features in arena.features for f in features.values())


# --------------------------------------------------------------------------------------------
# metric export
# --------------------------------------------------------------------------------------------
def test_export_writes_evaluates_layout(tmp_path):
    yaml = pytest.importorskip("yaml")
    out = tmp_path / "my_arena"
    assert main(["metric", "export", str(out)]) == 0
    wheel = f"rag_qa_arena-{package_version()}-py3-none-any.whl"
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "app.py", "my_arena.py", wheel, "requirements.txt"]
    source = Path(metric_arena.METRIC_PATH) / f"{METRIC_NAME}.py"
    assert (out / "my_arena.py").read_bytes() == source.read_bytes()
    card = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["title"] == "RAG-QA Arena" and {"evaluate", "metric"} <= set(meta["tags"])
    assert meta["description"] and meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert int(str(meta["sdk_version"]).split(".")[0]) >= 5  # a gradio the Hub still builds (6.x when written)
    requirements = [line for line in (out / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert requirements == ["--find-links .", f"rag-qa-arena=={package_version()}"]
    app = (out / "app.py").read_text()
    compile(app, "app.py", "exec")
    assert "launch_gradio_widget(module)" in app and "with_name('my_arena.py')" in app
    with pytest.raises(FileExistsError, match="not an empty folder"):
        export_metric(out)
    with pytest.raises(ValueError, match="Bad module name"):
        export_metric(tmp_path / "x", name="a/b")


CLEAN_RUN = """
import json, sys
import evaluate
arena = evaluate.load(sys.argv[1])
arena.add_batch(predictions=["Paris."], references=["The capital is Paris."], questions=["capital of france"],
                ids=["q1"], domains=["geo"])
arena.add_batch(predictions=["No idea."], references=["100 C."], questions=["boiling point of water?"],
                ids=["q2"], domains=["science"])
res = arena.compute(judge="openai:gpt-4o-mini")
print(json.dumps({"module": type(arena).__module__, "n": res["n"], "outcomes": res["outcomes"],
                  "domains": sorted(res["per_domain"])}))
"""


def _run_clean(code_args: list[str], cwd: Path, server: OpenAIServer, tmp_path: Path) -> dict:
    """``python -c CLEAN_RUN ...`` in ``cwd`` with only the package on the path (as if pip-installed)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-local",
           "RAG_QA_ARENA_CACHE": str(tmp_path / "clean-cache"), "HF_MODULES_CACHE": str(tmp_path / "modules")}
    done = subprocess.run([sys.executable, "-c", CLEAN_RUN, *code_args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_exported_module_loads_and_computes_from_a_clean_folder(tmp_path, lfrqa_data_dir):
    # lfrqa_data_dir: the subprocess reads the pinned judge templates ($LFRQA_DATA_DIR); skipped without them
    export_metric(tmp_path / "export" / "rag_qa_arena")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with OpenAIServer() as server:
        by_path = _run_clean([str(tmp_path / "export" / "rag_qa_arena")], elsewhere, server, tmp_path)
        by_name = _run_clean(["rag_qa_arena"], tmp_path / "export", server, tmp_path)  # the bare name, beside it
        at_root = _run_clean(["rag_qa_arena"], ROOT, server, tmp_path)  # a checkout's root: not the CLI folder
    for res in (by_path, by_name, at_root):
        assert res["n"] == 2 and res["outcomes"] == {"q1": "loss", "q2": "win"} and res["domains"] == ["geo", "science"]
    assert by_path["module"].startswith("evaluate_modules.metrics.rag_qa_arena.")
    assert at_root["module"] == "metric_arena.rag_qa_arena.rag_qa_arena"
    assert len(server.requests) == 2  # the same pairs: the other runs were answered by the cache


# --------------------------------------------------------------------------------------------
# metric push: the Space's commit operations (no network)
# --------------------------------------------------------------------------------------------
class RecordingHub:
    """Stands in for HfApi: records what the Space push asks of the Hub."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def create_commit(self, repo_id, operations, **kwargs):
        self.calls.append(("create_commit", repo_id, list(operations), kwargs))

        class Info:
            commit_url = f"https://huggingface.co/spaces/{repo_id}/commit/abc"

        return Info()


def _content(operation) -> bytes:
    data = operation.path_or_fileobj
    return data if isinstance(data, bytes) else Path(data).read_bytes()


def test_push_commits_the_module_folder_as_a_gradio_space(monkeypatch):
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    hub = RecordingHub()
    url = push_metric("my-org/rag-qa-arena", private=True, token_from_env=True, api=hub)
    assert url == "https://huggingface.co/spaces/my-org/rag-qa-arena/commit/abc"
    (kind, repo, kwargs), (kind2, repo2, operations, commit_kwargs) = hub.calls
    assert (kind, repo, kind2, repo2) == ("create_repo", "my-org/rag-qa-arena", "create_commit", "my-org/rag-qa-arena")
    assert kwargs == {"repo_type": "space", "space_sdk": "gradio", "private": True, "exist_ok": True, "token": FAKE_HF}
    assert commit_kwargs["repo_type"] == "space" and commit_kwargs["token"] == FAKE_HF
    assert "evaluate module" in commit_kwargs["commit_message"]
    by_path = {op.path_in_repo: _content(op) for op in operations}
    # the Space ORG/NAME must hold NAME.py for evaluate.load("ORG/NAME")
    assert by_path == metric_files("rag-qa-arena")
    assert set(by_path) - {"rag-qa-arena.py", "README.md", "requirements.txt", "app.py"} == {
        f"rag_qa_arena-{package_version()}-py3-none-any.whl"}
    assert all(FAKE_HF.encode() not in data for data in by_path.values())


def test_push_refuses_secrets_and_bad_ids(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(ValueError, match="Bad repo id 'no-slash'"):
        push_metric("no-slash", api=RecordingHub())
    # a key that happens to appear in a file is refused before any Hub call (a placeholder key such as
    # "evaluate_modules", words alone, is no secret: builders.is_placeholder_key)
    monkeypatch.setenv("OPENAI_API_KEY", "evaluate_modules_7Qx2")
    monkeypatch.setattr("metric_arena.space.MODULE_DIR", _module_copy(tmp_path, extra="# evaluate_modules_7Qx2\n"))
    hub = RecordingHub()
    with pytest.raises(ValueError, match="looks like it contains credentials"):
        push_metric("org/arena", token="hf_test", api=hub)
    assert hub.calls == []


def _module_copy(tmp_path: Path, *, extra: str) -> Path:
    folder = tmp_path / "module"
    folder.mkdir()
    for path in Path(metric_arena.METRIC_PATH).iterdir():
        if path.is_file():
            (folder / path.name).write_bytes(path.read_bytes())
    with open(folder / f"{METRIC_NAME}.py", "a", encoding="utf-8") as handle:
        handle.write(extra)
    return folder


def test_upload_files_takes_a_space_sdk_only_for_spaces():
    from builders import upload_files

    with pytest.raises(ValueError, match="space_sdk goes with repo_type='space'"):
        upload_files("org/x", {"a.txt": b"a"}, repo_type="space", commit_message="m", token="t", api=RecordingHub())
    with pytest.raises(ValueError, match="space_sdk goes with"):
        upload_files("org/x", {"a.txt": b"a"}, space_sdk="gradio", commit_message="m", token="t", api=RecordingHub())
    with pytest.raises(ValueError, match="Unknown repo type 'spaces'"):
        upload_files("org/x", {"a.txt": b"a"}, repo_type="spaces", commit_message="m", token="t", api=RecordingHub())


def test_cli_metric_push_dry_run_and_offline_error(tmp_path, monkeypatch, capsys):
    assert main(["metric", "push", "org/arena-x", "--dry-run", str(tmp_path / "preview")]) == 0
    assert (tmp_path / "preview" / "arena-x.py").is_file() and "nothing uploaded" in capsys.readouterr().err
    from huggingface_hub import constants
    from huggingface_hub.utils import close_session

    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    close_session()  # huggingface_hub's sessions keep the offline switch they were made with
    try:
        assert main(["metric", "push", "org/arena-x"]) == 2
    finally:
        monkeypatch.undo()
        close_session()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot upload to org/arena-x: HF_HUB_OFFLINE is set" in err
    assert FAKE_HF not in err


def test_export_takes_a_given_wheel_or_the_users_requirements(tmp_path, capsys):
    from metric_arena.space import build_wheel

    requirements = tmp_path / "req.txt"
    requirements.write_text("rag-qa-arena @ git+https://github.com/example/rag-qa-arena@v0.1.0\n")
    assert main(["metric", "export", str(tmp_path / "a"), "--requirement", str(requirements)]) == 0
    assert (tmp_path / "a" / "requirements.txt").read_text() == requirements.read_text()
    assert not list((tmp_path / "a").glob("*.whl"))
    wheel = build_wheel()
    assert main(["metric", "export", str(tmp_path / "b"), "--wheel", str(wheel)]) == 0
    assert (tmp_path / "b" / wheel.name).read_bytes() == wheel.read_bytes()
    (tmp_path / "other-1.0-py3-none-any.whl").write_bytes(b"PK")
    assert main(["metric", "export", str(tmp_path / "c"), "--wheel", str(tmp_path / "other-1.0-py3-none-any.whl")]) == 2
    assert "is not a wheel of rag-qa-arena" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["metric", "export", str(tmp_path / "d"), "--wheel", str(wheel), "--requirement", str(requirements)])


@pytest.mark.slow
def test_exported_folder_installs_from_itself_in_a_fresh_venv(tmp_path):
    """`pip install -r DIR/requirements.txt` in a fresh venv takes the package from the folder's wheel
    (its dependencies from the package index), then evaluate.load(DIR) computes there."""
    folder = export_metric(tmp_path / "export" / "rag_qa_arena")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-r", str(folder / "requirements.txt")],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    assert f"Processing {folder}/rag_qa_arena-" in installed.stdout or "rag_qa_arena-" in installed.stdout
    where = subprocess.run([str(python), "-c", "import metric_arena, importlib.metadata as m; "
                            "print(metric_arena.__file__); print(m.distribution('rag-qa-arena').version)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert where[0].startswith(str(venv)) and where[1] == package_version()  # installed from the wheel, not the checkout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with OpenAIServer() as server:
        env.update({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-local", "HF_HUB_OFFLINE": "1",
                    "RAG_QA_ARENA_CACHE": str(tmp_path / "cache"), "HF_MODULES_CACHE": str(tmp_path / "modules")})
        done = subprocess.run([str(python), "-c", CLEAN_RUN, str(folder)], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    assert res["n"] == 2 and res["outcomes"] == {"q1": "loss", "q2": "win"}
