"""LFRQA as the Hub defines a benchmark: eval.yaml checked against the Hub's specification (and,
for the inspect-ai framework, against Inspect's own task model), and a push the Hub refuses for
eval.yaml still pushing the data (a recording stand-in for HfApi; no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import builders
from builders import check_eval_yaml, eval_yaml, export_dataset
from lfrqa.errors import RagQaArenaError
from rag_qa_arena.cli import main

pytestmark = pytest.mark.plain

FAKE_HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
#: What hub-docs docs/hub/eval-results.md ("Registering a Benchmark") asks of eval.yaml.
SPEC_TOP = ("name", "description", "evaluation_framework", "tasks")
SPEC_TASK = ("id", "config", "split")
#: Task fields of inspect_ai's hf/ loader (its HFTask model), beyond the spec's three.
INSPECT_TASK_FIELDS = ("field_spec", "solvers", "scorers", "shuffle_choices", "epochs", "epoch_reducer")


@pytest.fixture(autouse=True)
def _no_real_secrets(monkeypatch):
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def exported(lfrqa_data_dir, tmp_path_factory):
    return export_dataset(tmp_path_factory.mktemp("bench") / "lfrqa", data_dir=lfrqa_data_dir, corpora=False)


def _spec_problems(document) -> list[str]:
    """The spec's required fields, checked here on their own (not with the package's checker)."""
    problems = [f"no {key}" for key in SPEC_TOP if not document.get(key)]
    for task in document.get("tasks") or []:
        problems += [f"task without {key}" for key in SPEC_TASK if not isinstance(task.get(key), str)]
        if document.get("evaluation_framework") != "inspect-ai":
            problems += [f"task {task.get('id')} has {key}" for key in INSPECT_TASK_FIELDS if key in task]
    return problems


def test_exported_eval_yaml_is_the_minimal_form_with_the_packages_framework(exported):
    document = yaml.safe_load((exported / "eval.yaml").read_text(encoding="utf-8"))
    assert _spec_problems(document) == []
    assert document["evaluation_framework"] == builders.EVALUATION_FRAMEWORK == "rag-qa-arena"
    assert [t["id"] for t in document["tasks"]] == ["fiqa", "lifestyle", "recreation", "science", "technology",
                                                    "writing", "all"]
    assert all(set(task) == set(SPEC_TASK) for task in document["tasks"])
    assert set(document) == set(SPEC_TOP)
    if document["evaluation_framework"] == "inspect-ai":  # then Inspect's own loader must accept every task
        hf = pytest.importorskip("inspect_ai._eval.task.hf")
        for task in document["tasks"]:
            hf.HFTask.model_validate(task)
    assert check_eval_yaml(document) is document
    entry = builders.FRAMEWORK_ENTRY
    assert entry["name"] == document["evaluation_framework"] and entry["description"] and entry["url"].startswith(
        "https://")


def test_the_checker_refuses_what_the_spec_refuses_and_inspect_fields_elsewhere():
    good = yaml.safe_load(eval_yaml({"fiqa": {"test": ["f"]}, "all": {"test": ["f"]}}))
    for key in SPEC_TOP:
        bad = {k: v for k, v in good.items() if k != key}
        assert _spec_problems(bad)
        with pytest.raises(RagQaArenaError, match=f"missing {key}"):
            check_eval_yaml(bad)
    for key in SPEC_TASK:
        bad = {**good, "tasks": [{k: v for k, v in good["tasks"][0].items() if k != key}]}
        with pytest.raises(RagQaArenaError, match=f"task 1 has no {key}"):
            check_eval_yaml(bad)
    with pytest.raises(RagQaArenaError, match="task id 'fiqa' appears twice"):
        check_eval_yaml({**good, "tasks": [good["tasks"][0], good["tasks"][0]]})
    for key in INSPECT_TASK_FIELDS:
        bad = {**good, "tasks": [{**good["tasks"][0], key: []}]}
        assert _spec_problems(bad)
        with pytest.raises(RagQaArenaError, match=f"has {key}, a field only the inspect-ai framework defines"):
            check_eval_yaml(bad)
        check_eval_yaml({**bad, "evaluation_framework": "inspect-ai"})  # Inspect's own fields are fine there


def test_an_inspect_ai_eval_yaml_needs_what_inspects_task_model_needs():
    """Why the package does not claim inspect-ai: Inspect's loader refuses the spec's minimal task
    (no field_spec, solvers, scorers) and has no pairwise judge among its scorers."""
    hf = pytest.importorskip("inspect_ai._eval.task.hf")
    import pydantic

    minimal = {"id": "fiqa", "config": "fiqa", "split": "test"}
    with pytest.raises(pydantic.ValidationError):
        hf.HFTask.model_validate(minimal)
    with pytest.raises(pydantic.ValidationError):
        hf.HFTask.model_validate({**minimal, "field_spec": {"input": "question", "target": "answer"},
                                  "solvers": [{"name": "generate"}], "scorers": [{"name": "rag_qa_arena_judge"}]})


class _Hub:
    """Stands in for huggingface_hub.HfApi: refuses any commit that holds eval.yaml, as the Hub does
    for an evaluation_framework it does not list."""

    instances: list = []
    refuse_eval_yaml = True

    def __init__(self, *args, **kwargs):
        self.calls = []
        _Hub.instances.append(self)

    def whoami(self, token=None):
        self.calls.append(("whoami",))
        return {"name": "me", "type": "user"}

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id))

    def create_commit(self, repo_id, operations, **kwargs):
        paths = sorted(op.path_in_repo for op in operations)
        self.calls.append(("create_commit", repo_id, paths))
        if self.refuse_eval_yaml and "eval.yaml" in paths:
            try:
                import httpx2 as httpx  # huggingface_hub 2.x speaks httpx2
            except ImportError:  # huggingface_hub 1.x: httpx
                import httpx
            from huggingface_hub.errors import HfHubHTTPError

            response = httpx.Response(400, request=httpx.Request("POST", f"https://hub/api/datasets/{repo_id}/commit"))
            raise HfHubHTTPError("400 Bad Request: Invalid eval.yaml: evaluation_framework 'rag-qa-arena' is not a "
                                 "supported framework", response=response)

        class Info:
            commit_url = f"https://huggingface.co/datasets/{repo_id}/commit/abc"

        return Info()


@pytest.fixture
def hub(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", _Hub)
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    _Hub.instances.clear()
    return _Hub


def _commits(hub):
    return [c for api in hub.instances for c in api.calls if c[0] == "create_commit"]


def test_a_push_the_hub_refuses_for_eval_yaml_still_pushes_the_data(exported, hub, capsys):
    assert main(["data", "push", "org/lfrqa", "--from", str(exported)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "https://huggingface.co/datasets/org/lfrqa/commit/abc"
    assert err.count("\n") == 1 and "eval.yaml was left out: the Hub refused it" in err
    assert "'rag-qa-arena'" in err and "packages/tasks/src/eval.ts" in err and FAKE_HF not in err
    first, second = _commits(hub)
    assert "eval.yaml" in first[2] and "eval.yaml" not in second[2]
    assert "README.md" in second[2] and "data/fiqa/test.parquet" in second[2]


def test_no_eval_yaml_leaves_it_out_on_purpose(exported, hub, capsys, tmp_path):
    assert main(["data", "push", "org/lfrqa", "--from", str(exported), "--no-eval-yaml"]) == 0
    [commit] = _commits(hub)
    assert "eval.yaml" not in commit[2] and "README.md" in commit[2]
    assert "left out" not in capsys.readouterr().err
    assert main(["data", "push", "org/lfrqa", "--from", str(exported), "--no-eval-yaml", "--dry-run",
                 str(tmp_path / "preview")]) == 0
    assert not (tmp_path / "preview" / "eval.yaml").exists() and (tmp_path / "preview" / "README.md").is_file()
    assert (exported / "eval.yaml").is_file()  # the source folder is left as it was


def test_other_refusals_are_still_errors(exported, hub, monkeypatch, capsys):
    monkeypatch.setattr(_Hub, "refuse_eval_yaml", False)
    assert main(["data", "push", "org/lfrqa", "--from", str(exported)]) == 0  # accepted: one commit, no note
    [commit] = _commits(hub)
    assert "eval.yaml" in commit[2] and "left out" not in capsys.readouterr().err
