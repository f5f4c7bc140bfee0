"""A judged run as Hub eval results (`push RUN --eval-results ORG/MODEL --dataset ORG/LFRQA`): the
`.eval_results/*.yaml` files read back with huggingface_hub's own parser, pinned to what they
measured (dataset revision, who measured, judge and parse, coverage), the pull request asked of a
recording stand-in for HfApi (no network), the secret scan, and Hub look-ups that fail offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import lfrqa
from builders import eval_yaml
from metric_arena.report import load_run
from rag_qa_arena.cli import main
from tests.test_report import DOMAINS, make_run

pytestmark = pytest.mark.plain

FAKE_HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
REVISION = "5503434ddd753f426f4b38109466949a1217c2bb"
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


@pytest.fixture(scope="module")
def questions(lfrqa_data_dir) -> dict[str, list[str]]:
    return {d: list(lfrqa.load(d, data_dir=lfrqa_data_dir)["qid"]) for d in DOMAINS}


def lfrqa_run(root: Path, system: str, questions: dict[str, list[str]], counts: dict[str, int] | None = None,
              **kwargs) -> Path:
    """A run folder (as `make_run` writes it) whose verdicts carry real LFRQA qids: the first
    ``counts[d]`` questions of each domain d (default: every question of every domain)."""
    keys = [(qid, d) for d in DOMAINS for qid in questions[d][: (counts or {}).get(d, 0 if counts else None)]]
    run = make_run(root, system, n=len(keys), **kwargs)
    rows = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    for row, (qid, domain) in zip(rows, keys):
        row["qid"], row["domain"] = qid, domain
    (run / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def _rate(run: Path, domain: str | None) -> float:
    verdicts = [v for v in load_run(run).verdicts if domain is None or v["domain"] == domain]
    judged = [v for v in verdicts if v["outcome"] is not None]
    return round(100 * sum(v["outcome"] == "win" for v in judged) / len(judged), 2)


def _entries(path: Path):
    from huggingface_hub import parse_eval_result_entries

    return parse_eval_result_entries(yaml.safe_load(path.read_text(encoding="utf-8")))


def _dry(run, out, benchmark_file, *extra):
    return main(["push", str(run), "--repo", "org/verdicts", "--eval-results", "org/model", "--dataset", "org/lfrqa",
                 "--eval-yaml", str(benchmark_file), "--dry-run", str(out), *extra])


def test_a_complete_run_gives_every_task_pinned_to_revision_source_and_judge(tmp_path, benchmark_file, questions,
                                                                              capsys):
    run = lfrqa_run(tmp_path, "gpt-4o", questions, p_win=0.4, p_tie=0.2, p_failed=0.05)
    assert _dry(run, tmp_path / "out", benchmark_file, "--dataset-revision", REVISION, "--source-org", "my-lab") == 0
    assert "eval results for org/model" in capsys.readouterr().err
    assert (tmp_path / "out" / "data" / "verdicts.parquet").is_file()  # the verdicts, as before
    [written] = (tmp_path / "out" / "model" / ".eval_results").iterdir()
    assert written.name == "rag-qa-arena-gpt-4o-gpt-4o-strict.yaml"
    entries = _entries(written)
    assert [e.task_id for e in entries] == [*DOMAINS, "all"]
    for entry in entries:
        assert entry.dataset_id == "org/lfrqa" and entry.dataset_revision == REVISION
        assert entry.value == _rate(run, None if entry.task_id == "all" else entry.task_id)
        assert entry.source_url == "https://huggingface.co/datasets/org/verdicts"
        assert entry.source_org == "my-lab" and entry.source_user is None
        assert entry.notes == "judge=gpt-4o parse=strict"  # complete: no coverage said
        assert entry.date


def test_two_judges_give_two_files_each_read_back(tmp_path, benchmark_file, questions):
    science = {"science": len(questions["science"])}
    files = []
    for judge in ("openai:gpt-4o-mini", "openai:gpt-4o"):
        run = lfrqa_run(tmp_path / judge.replace(":", "-"), "my-rag", questions, science, p_win=0.5, judge=judge)
        out = tmp_path / f"out-{judge.replace(':', '-')}"
        assert _dry(run, out, benchmark_file, "--dataset-revision", REVISION, "--source-org", "lab") == 0
        files += sorted((out / "model" / ".eval_results").iterdir())
    assert [f.name for f in files] == ["rag-qa-arena-my-rag-gpt-4o-mini-strict.yaml", "rag-qa-arena-my-rag-gpt-4o-strict.yaml"]
    notes = []
    for path in files:  # huggingface_hub's parser reads back every file written
        [entry] = _entries(path)
        assert entry.task_id == "science" and entry.dataset_revision == REVISION and entry.source_org == "lab"
        notes.append(entry.notes)
    assert notes == ["judge=gpt-4o-mini parse=strict", "judge=gpt-4o parse=strict"]


def test_a_partial_run_is_refused_unless_allowed_and_then_says_its_coverage(tmp_path, benchmark_file, questions,
                                                                           capsys):
    run = lfrqa_run(tmp_path, "sixty", questions, {"fiqa": 60}, p_win=0.5)
    assert _dry(run, tmp_path / "out", benchmark_file, "--dataset-revision", REVISION) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "covers none of org/lfrqa's tasks completely (fiqa 60/3570 questions)" in err
    assert "--allow-partial" in err
    assert _dry(run, tmp_path / "out2", benchmark_file, "--dataset-revision", REVISION, "--allow-partial") == 0
    [written] = (tmp_path / "out2" / "model" / ".eval_results").iterdir()
    [entry] = _entries(written)  # no `all`: the run does not cover every domain
    assert entry.task_id == "fiqa" and entry.notes == "judge=gpt-4o parse=strict 60/3570 questions"
    assert entry.value == _rate(run, "fiqa")


def test_a_run_covering_one_domain_writes_it_and_leaves_the_partial_one_out(tmp_path, benchmark_file, questions):
    run = lfrqa_run(tmp_path, "sci", questions, {"science": len(questions["science"]), "fiqa": 10}, p_win=0.5)
    assert _dry(run, tmp_path / "out", benchmark_file, "--no-revision", "--eval-name", "arena science") == 0
    [entry] = _entries(tmp_path / "out" / "model" / ".eval_results" / "arena-science.yaml")
    assert entry.task_id == "science" and entry.value == _rate(run, "science")
    assert entry.dataset_revision is None  # --no-revision: pinned nowhere, on purpose


def test_the_dataset_revision_is_needed_and_must_be_a_commit(tmp_path, benchmark_file, questions, capsys):
    run = lfrqa_run(tmp_path, "sci", questions, {"science": len(questions["science"])}, p_win=0.5)
    assert _dry(run, tmp_path / "o1", benchmark_file) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "The revision of org/lfrqa the run used is unknown" in err
    assert "--dataset-revision COMMIT" in err and "--no-revision" in err
    assert _dry(run, tmp_path / "o2", benchmark_file, "--dataset-revision", "main") == 2
    assert "Bad dataset revision 'main'" in capsys.readouterr().err
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "dataset_revision": REVISION}))
    assert _dry(run, tmp_path / "o3", benchmark_file) == 0  # the run's own record pins it
    [written] = (tmp_path / "o3" / "model" / ".eval_results").iterdir()
    assert _entries(written)[0].dataset_revision == REVISION


class _RecordingHfApi:
    instances: list = []

    def __init__(self, *args, **kwargs):
        self.calls = []
        _RecordingHfApi.instances.append(self)

    def whoami(self, token=None):
        self.calls.append(("whoami", token))
        return {"type": "user", "name": "alice"}

    def hf_hub_download(self, repo_id, filename, **kwargs):
        self.calls.append(("download", repo_id, filename, kwargs["repo_type"], kwargs.get("revision")))
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
                                                                           capsys, questions):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", _RecordingHfApi)
    _RecordingHfApi.instances.clear()
    _RecordingHfApi.benchmark_file = str(benchmark_file)
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    run = lfrqa_run(tmp_path, "gpt-4o", questions, p_win=0.4)
    assert main(["push", str(run), "--repo", "org/verdicts", "--eval-results", "org/model", "--dataset",
                 "org/lfrqa", "--token-from-env", "--dataset-revision", REVISION]) == 0
    out = capsys.readouterr().out
    assert "org/model/discussions/1" in out and FAKE_HF not in out
    calls = [c for api in _RecordingHfApi.instances for c in api.calls]
    assert calls[0] == ("whoami", FAKE_HF)  # the token is checked before anything is prepared
    assert ("download", "org/lfrqa", "eval.yaml", "dataset", REVISION) in calls  # eval.yaml at the pinned commit
    commits = [c for c in calls if c[0] == "create_commit"]
    assert [c[1] for c in commits] == ["org/verdicts", "org/model"]  # verdicts first: the source exists
    model_commit = commits[1]
    assert model_commit[3]["create_pr"] is True and model_commit[3]["repo_type"] == "model"
    assert not [c for c in calls if c[0] == "create_repo" and c[1] == "org/model"]  # never creates a model
    [operation] = model_commit[2]
    assert operation.path_in_repo == ".eval_results/rag-qa-arena-gpt-4o-gpt-4o-strict.yaml"
    from huggingface_hub import parse_eval_result_entries

    entries = parse_eval_result_entries(yaml.safe_load(operation.path_or_fileobj.decode()))
    assert {e.task_id for e in entries} == {*DOMAINS, "all"}
    assert {(e.source_user, e.source_org, e.dataset_revision) for e in entries} == {("alice", None, REVISION)}


def test_eval_results_are_secret_scanned_and_flags_go_together(tmp_path, benchmark_file, capsys, questions):
    from builders import SecretFoundError
    from metric_arena.report import ResultPin, build_eval_result_files, read_benchmark

    run = lfrqa_run(tmp_path, "sys", questions, {"fiqa": 12}, p_win=0.5, judge="openai:judge-model-7")
    benchmark = read_benchmark("org/lfrqa", eval_yaml=benchmark_file)
    with pytest.raises(SecretFoundError, match=r"\.eval_results/rag-qa-arena-sys-judge-model-7-strict\.yaml line \d+"):
        build_eval_result_files(run, dataset_id="org/lfrqa", benchmark=benchmark, source_repo="org/v",
                                pin=ResultPin(require_revision=False, allow_partial=True),
                                extra_secrets=["judge-model-7"])  # a value that must not be uploaded
    assert main(["push", str(run), "--repo", "org/v", "--eval-results", "org/m", "--dry-run", str(tmp_path / "o")]) == 2
    assert "need both --eval-results ORG/MODEL and --dataset" in capsys.readouterr().err
    (tmp_path / "bad.yaml").write_text("name: x\n")
    assert main(["push", str(make_run(tmp_path, "ok", p_win=0.5, n=6)), "--repo", "org/v", "--eval-results", "org/m",
                 "--dataset", "org/lfrqa", "--eval-yaml", str(tmp_path / "bad.yaml"), "--dry-run",
                 str(tmp_path / "o2")]) == 2
    assert "eval.yaml lists no tasks" in capsys.readouterr().err


def test_hub_refusals_of_the_pull_request_are_one_line_errors(tmp_path, benchmark_file, monkeypatch, capsys,
                                                              questions):
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
    run = lfrqa_run(tmp_path, "sys", questions, {"fiqa": 12}, p_win=0.5)
    assert main(["push", str(run), "--repo", "org/v", "--eval-results", "org/model", "--dataset", "org/lfrqa",
                 "--no-revision", "--allow-partial", "--source-org", "lab"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused the upload to org/model (HTTP 403)" in err and FAKE_HF not in err


@pytest.mark.parametrize("offline", [True, False])
def test_a_dry_run_that_must_fetch_eval_yaml_names_repo_file_revision_and_the_offline_way(tmp_path, capsys, offline):
    from tests.test_hub_push import _hub

    run = make_run(tmp_path, "sys", p_win=0.5, n=6)
    argv = ["push", str(run), "--repo", "org/v", "--eval-results", "org/m", "--dataset", "org/lfrqa", "--dry-run",
            str(tmp_path / "o"), "--no-revision"]
    with _hub(offline=offline, endpoint="http://127.0.0.1:9"):  # offline, or nothing listens there
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "could not fetch eval.yaml from the Hub dataset repo org/lfrqa at revision main" in err
        assert "offline, give the file with --eval-yaml FILE" in err
        assert ("HF_HUB_OFFLINE is set" in err) == offline
        assert main([*argv[:-1], "--dataset-revision", REVISION]) == 2
        assert f"org/lfrqa at revision {REVISION}" in capsys.readouterr().err
