"""A judged run as Hub eval results (`push RUN --eval-results ORG/MODEL --dataset ORG/LFRQA`): the
`.eval_results/*.yaml` file read back with huggingface_hub's own parser, the pull request asked of a
recording stand-in for HfApi (no network), and the secret scan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from builders import eval_yaml
from metric_arena.report import load_run
from rag_qa_arena.cli import main
from tests.test_report import DOMAINS, make_run

pytestmark = pytest.mark.plain

FAKE_HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
CONFIGS = {**{d: {"test": [f"data/{d}/test.parquet"]} for d in DOMAINS},
           "all": {"test": [f"data/{d}/test.parquet" for d in DOMAINS]}}


@pytest.fixture(autouse=True)
def _no_real_secrets(monkeypatch):
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def benchmark_file(tmp_path) -> Path:
    path = tmp_path / "eval.yaml"
    path.write_text(eval_yaml(CONFIGS), encoding="utf-8")
    return path


def _rate(run: Path, domain: str | None) -> float:
    verdicts = [v for v in load_run(run).verdicts if domain is None or v["domain"] == domain]
    judged = [v for v in verdicts if v["outcome"] is not None]
    return round(100 * sum(v["outcome"] == "win" for v in judged) / len(judged), 2)


def _entries(path: Path):
    from huggingface_hub import parse_eval_result_entries

    return parse_eval_result_entries(yaml.safe_load(path.read_text(encoding="utf-8")))


def test_dry_run_writes_eval_results_for_every_task_the_run_covers(tmp_path, benchmark_file, capsys):
    run = make_run(tmp_path, "gpt-4o", p_win=0.4, p_tie=0.2, n=120, p_failed=0.05)
    assert main(["push", str(run), "--repo", "org/verdicts", "--eval-results", "org/model", "--dataset", "org/lfrqa",
                 "--eval-yaml", str(benchmark_file), "--dry-run", str(tmp_path / "out")]) == 0
    assert "eval results for org/model" in capsys.readouterr().err
    assert (tmp_path / "out" / "data" / "verdicts.parquet").is_file()  # the verdicts, as before
    entries = _entries(tmp_path / "out" / "model" / ".eval_results" / "rag-qa-arena-gpt-4o.yaml")
    assert [e.task_id for e in entries] == [*DOMAINS, "all"]
    for entry in entries:
        assert entry.dataset_id == "org/lfrqa"
        assert entry.value == _rate(run, None if entry.task_id == "all" else entry.task_id)
        assert entry.source_url == "https://huggingface.co/datasets/org/verdicts"
        assert "judge: openai:gpt-4o" in entry.notes and "parse: strict" in entry.notes and "failed" in entry.notes
        assert entry.date


def test_a_run_on_some_domains_reports_those_and_not_all(tmp_path, benchmark_file):
    run = make_run(tmp_path, "sci", p_win=0.5, n=40, domains=("science",))
    assert main(["push", str(run), "--repo", "org/v", "--eval-results", "org/m", "--dataset", "org/lfrqa",
                 "--eval-yaml", str(benchmark_file), "--eval-name", "arena science", "--dry-run",
                 str(tmp_path / "out")]) == 0
    [entry] = _entries(tmp_path / "out" / "model" / ".eval_results" / "arena-science.yaml")
    assert entry.task_id == "science" and entry.value == _rate(run, "science")


class _RecordingHfApi:
    instances: list = []

    def __init__(self, *args, **kwargs):
        self.calls = []
        _RecordingHfApi.instances.append(self)

    def whoami(self, token=None):
        self.calls.append(("whoami", token))

    def hf_hub_download(self, repo_id, filename, **kwargs):
        self.calls.append(("download", repo_id, filename, kwargs["repo_type"]))
        return _RecordingHfApi.benchmark_file

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def create_commit(self, repo_id, operations, **kwargs):
        self.calls.append(("create_commit", repo_id, list(operations), kwargs))

        class Info:
            commit_url = f"https://huggingface.co/{repo_id}/commit/abc"
            pr_url = f"https://huggingface.co/{repo_id}/discussions/1" if kwargs.get("create_pr") else None

        return Info()


def test_push_opens_a_pull_request_on_the_model_with_the_datasets_task_ids(tmp_path, benchmark_file, monkeypatch,
                                                                           capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", _RecordingHfApi)
    _RecordingHfApi.instances.clear()
    _RecordingHfApi.benchmark_file = str(benchmark_file)
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    run = make_run(tmp_path, "gpt-4o", p_win=0.4, n=60)
    assert main(["push", str(run), "--repo", "org/verdicts", "--eval-results", "org/model", "--dataset",
                 "org/lfrqa", "--token-from-env"]) == 0
    out = capsys.readouterr().out
    assert "org/model/discussions/1" in out and FAKE_HF not in out
    calls = [c for api in _RecordingHfApi.instances for c in api.calls]
    assert calls[0] == ("whoami", FAKE_HF)  # the token is checked before anything is prepared
    assert ("download", "org/lfrqa", "eval.yaml", "dataset") in calls
    commits = [c for c in calls if c[0] == "create_commit"]
    assert [c[1] for c in commits] == ["org/verdicts", "org/model"]  # verdicts first: the source exists
    model_commit = commits[1]
    assert model_commit[3]["create_pr"] is True and model_commit[3]["repo_type"] == "model"
    assert not [c for c in calls if c[0] == "create_repo" and c[1] == "org/model"]  # never creates a model
    [operation] = model_commit[2]
    assert operation.path_in_repo == ".eval_results/rag-qa-arena-gpt-4o.yaml"
    import yaml as _yaml
    from huggingface_hub import parse_eval_result_entries

    entries = parse_eval_result_entries(_yaml.safe_load(operation.path_or_fileobj.decode()))
    assert {e.task_id for e in entries} == {*DOMAINS, "all"}


def test_eval_results_are_secret_scanned_and_flags_go_together(tmp_path, benchmark_file, capsys):
    from builders import SecretFoundError
    from metric_arena.report import build_eval_result_files, read_benchmark

    run = make_run(tmp_path, "sys", p_win=0.5, n=12, judge="openai:judge-model-7")
    benchmark = read_benchmark("org/lfrqa", eval_yaml=benchmark_file)
    with pytest.raises(SecretFoundError, match=r"\.eval_results/rag-qa-arena-sys\.yaml line \d+"):
        build_eval_result_files(run, dataset_id="org/lfrqa", benchmark=benchmark, source_repo="org/v",
                                extra_secrets=["judge-model-7"])  # a value that must not be uploaded
    assert main(["push", str(run), "--repo", "org/v", "--eval-results", "org/m", "--dry-run", str(tmp_path / "o")]) == 2
    assert "need both --eval-results ORG/MODEL and --dataset" in capsys.readouterr().err
    (tmp_path / "bad.yaml").write_text("name: x\n")
    assert main(["push", str(make_run(tmp_path, "ok", p_win=0.5, n=6)), "--repo", "org/v", "--eval-results", "org/m",
                 "--dataset", "org/lfrqa", "--eval-yaml", str(tmp_path / "bad.yaml"), "--dry-run",
                 str(tmp_path / "o2")]) == 2
    assert "eval.yaml lists no tasks" in capsys.readouterr().err


def test_hub_refusals_of_the_pull_request_are_one_line_errors(tmp_path, benchmark_file, monkeypatch, capsys):
    try:
        import httpx2 as httpx  # huggingface_hub 2.x speaks httpx2
    except ImportError:  # huggingface_hub 1.x: httpx
        import httpx
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError

    class RefusingPR(_RecordingHfApi):
        def create_commit(self, repo_id, operations, **kwargs):
            if kwargs.get("create_pr"):
                response = httpx.Response(403, request=httpx.Request("POST", f"https://hub/{repo_id}"))
                raise HfHubHTTPError("403 Forbidden: no write access", response=response)
            return super().create_commit(repo_id, operations, **kwargs)

    monkeypatch.setattr(huggingface_hub, "HfApi", RefusingPR)
    RefusingPR.benchmark_file = str(benchmark_file)
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    run = make_run(tmp_path, "sys", p_win=0.5, n=12)
    assert main(["push", str(run), "--repo", "org/v", "--eval-results", "org/model", "--dataset", "org/lfrqa"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused the upload to org/model (HTTP 403)" in err and FAKE_HF not in err
