"""Pushing a run folder to the Hub: the commit operations, the dataset card, the secret scan, and
the calls made to the Hub API (a recording stand-in; no network)."""

from __future__ import annotations

import contextlib
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from huggingface_hub import DatasetCard

from builders import SecretFoundError, find_secrets, upload_operations
from metric_arena.report import build_push_files, push_run
from rag_qa_arena.cli import main
from tests.test_report import make_run

pytestmark = pytest.mark.plain  # needs only `pip install .` (CI runs it there too)

FAKE_OPENAI = "sk-proj-" + "Ab3dEf6hIj9lMn2pQr5tUv8xYz" * 2
FAKE_HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


class RecordingHub:
    """Stands in for HfApi: records what push_run asks of the Hub."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/datasets/{repo_id}"

    def create_commit(self, repo_id, operations, **kwargs):
        self.calls.append(("create_commit", repo_id, list(operations), kwargs))

        class Info:
            commit_url = f"https://huggingface.co/datasets/{repo_id}/commit/abc"

        return Info()


@pytest.fixture(autouse=True)
def _no_real_secrets(monkeypatch):
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _content(operation) -> bytes:
    data = operation.path_or_fileobj
    return data if isinstance(data, bytes) else Path(data).read_bytes()


def test_operations_paths_and_contents(tmp_path):
    run = make_run(tmp_path, "my<sys>", p_win=0.4, p_tie=0.2, n=30, folder="run")
    operations = upload_operations(build_push_files(run, repo_id="org/arena-run"))
    by_path = {op.path_in_repo: _content(op) for op in operations}
    assert set(by_path) == {"data/verdicts.parquet", "summary.json", "README.md"}
    assert json.loads(by_path["summary.json"]) == json.loads((run / "summary.json").read_text())

    table = pq.read_table(io.BytesIO(by_path["data/verdicts.parquet"]))
    rows = table.to_pylist()
    source = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in rows] == [s["qid"] for s in source]
    assert [r["outcome"] for r in rows] == [s["outcome"] for s in source]
    assert rows[0]["judgments"][0]["judge"] == "openai:gpt-4o"
    assert rows[0]["judgments"][0]["raw"] == source[0]["judgments"][0]["raw"]

    card = by_path["README.md"].decode()
    assert card.startswith("---\n") and "path: data/verdicts.parquet" in card and "split: test" in card
    data = DatasetCard(card).data  # the card is huggingface_hub's own: its metadata reads back
    assert data.pretty_name == "RAG-QA Arena verdicts: my<sys> vs LFRQA"
    assert data.configs == [{"config_name": "default", "data_files": [{"split": "test", "path": "data/verdicts.parquet"}]}]
    assert (data.language, data.task_categories, data.size_categories) == (["en"], ["question-answering"], ["n<1K"])
    assert data.tags == ["rag", "rag-qa-arena", "lfrqa", "llm-as-a-judge"]
    assert "my\\<sys\\>" in card  # escaped in the Markdown body
    assert 'load_dataset("org/arena-run", split="test")' in card
    assert "| all queries |" in card and "| fiqa |" in card


def test_uploaded_folder_loads_with_datasets(tmp_path):
    datasets = pytest.importorskip("datasets")
    run = make_run(tmp_path, "sys", p_win=0.5, n=25, folder="run")
    out = tmp_path / "repo"
    assert main(["push", str(run), "--repo", "org/x", "--dry-run", str(out)]) == 0
    assert (out / "README.md").is_file() and (out / "data" / "verdicts.parquet").is_file()
    ds = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 25 and ds[0]["system_a"] == "sys" and isinstance(ds[0]["judgments"], list)


def test_extra_fields_are_kept_as_json(tmp_path):
    run = make_run(tmp_path, "sys", p_win=0.5, n=3, folder="run")
    lines = [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]
    lines[0]["usage"] = {"prompt_tokens": 12}
    (run / "verdicts.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    files = build_push_files(run, repo_id="org/x")
    rows = pq.read_table(io.BytesIO(files["data/verdicts.parquet"])).to_pylist()
    assert json.loads(rows[0]["usage"]) == {"prompt_tokens": 12} and rows[1]["usage"] is None


@pytest.mark.parametrize("secret", [FAKE_OPENAI, FAKE_HF, "AKIAABCDEFGHIJKLMNOP", "Bearer abcdefghijklmnopqrstuvwxyz012"])
def test_refuses_files_that_look_like_they_hold_secrets(tmp_path, secret):
    run = make_run(tmp_path, "sys", p_win=0.5, n=5, folder="run")
    lines = (run / "verdicts.jsonl").read_text().splitlines()
    lines[3] = lines[3].replace("<thinking>...", f"<thinking>the key is {secret}")
    (run / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SecretFoundError, match="verdicts.jsonl line 4") as error:
        build_push_files(run, repo_id="org/x")
    assert secret not in str(error.value) and secret[-10:] not in str(error.value)


def test_refuses_the_values_of_key_environment_variables(tmp_path, monkeypatch):
    run = make_run(tmp_path, "sys", p_win=0.5, n=5, folder="run")
    summary = json.loads((run / "summary.json").read_text())
    summary["note"] = "plainvalue-4242"
    (run / "summary.json").write_text(json.dumps(summary))
    build_push_files(run, repo_id="org/x")  # fine while that is not a secret
    monkeypatch.setenv("OPENAI_API_KEY", "plainvalue-4242")
    with pytest.raises(SecretFoundError, match="summary.json line 1: the value of an API-key environment variable"):
        build_push_files(run, repo_id="org/x")


def test_push_calls_the_hub_with_the_right_arguments(tmp_path, monkeypatch):
    run = make_run(tmp_path, "sys", p_win=0.5, n=10, folder="my-run")
    token = "hf_" + "Z" * 34
    monkeypatch.setenv("HF_TOKEN", token)
    hub = RecordingHub()
    url = push_run(run, "org/arena", private=True, token_from_env=True, api=hub)
    assert url == "https://huggingface.co/datasets/org/arena/commit/abc"
    (kind, repo, kwargs), (kind2, repo2, operations, commit_kwargs) = hub.calls
    assert (kind, repo, kind2, repo2) == ("create_repo", "org/arena", "create_commit", "org/arena")
    assert kwargs == {"repo_type": "dataset", "private": True, "exist_ok": True, "token": token}
    assert commit_kwargs["repo_type"] == "dataset" and commit_kwargs["token"] == token
    assert "my-run" in commit_kwargs["commit_message"]
    assert {op.path_in_repo for op in operations} == {"data/verdicts.parquet", "summary.json", "README.md"}
    assert all(token.encode() not in _content(op) for op in operations)


def test_token_problems_are_explained(tmp_path):
    run = make_run(tmp_path, "sys", p_win=0.5, n=3, folder="run")
    with pytest.raises(ValueError, match="HF_TOKEN is not set"):
        push_run(run, "org/x", token_from_env=True, api=RecordingHub())
    with pytest.raises(ValueError, match="Bad repo id 'no-slash'"):
        push_run(run, "no-slash", api=RecordingHub())
    assert main(["push", str(run), "--repo", "org/x", "--token-from-env"]) == 2


def test_empty_or_missing_run(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "verdicts.jsonl").write_text("")
    with pytest.raises(ValueError, match="has no verdicts"):
        build_push_files(tmp_path / "empty", repo_id="org/x")
    with pytest.raises(FileNotFoundError):
        build_push_files(tmp_path / "missing", repo_id="org/x")


def test_find_secrets_reports_kinds_and_lines_only():
    text = f"fine\nkey={FAKE_OPENAI}\ntoken {FAKE_HF}\nsk-short"
    hits = find_secrets(text, values=["tiny", "secret-value-1"])
    assert [line for _, line in hits] == [2, 3]
    assert find_secrets("x secret-value-1 y", values=["secret-value-1"])[0][1] == 1
    assert find_secrets("x tiny y", values=["tiny"]) == []  # too short to be a real key
    # placeholder keys (builders.is_placeholder_key) are no secret: an answer quoting one is pushed
    assert find_secrets("run the testing tools; use sk-local", values=["testing", "sk-local", "not-needed"]) == []


class _RefusingHub(BaseHTTPRequestHandler):
    """A Hub endpoint that answers every GET (``whoami``) and POST with 401, as huggingface.co does
    for a bad token."""

    def do_GET(self):  # noqa: N802
        self.do_POST()

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"error": "Invalid username or password."}'
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _hub(offline: bool, endpoint: str | None = None):
    """huggingface_hub's offline switch and endpoint, set for the block (its HTTP sessions are
    cached with the switch baked in, so they are reset on the way in and out)."""
    from huggingface_hub import constants

    try:  # huggingface_hub < 1 (requests)
        from huggingface_hub.utils import reset_sessions
    except ImportError:  # huggingface_hub >= 1 (httpx)
        from huggingface_hub.utils import close_session as reset_sessions

    old = constants.HF_HUB_OFFLINE, constants.ENDPOINT
    constants.HF_HUB_OFFLINE, constants.ENDPOINT = offline, endpoint or old[1]
    reset_sessions()
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE, constants.ENDPOINT = old
        reset_sessions()


@pytest.mark.parametrize("command", ["push", "data push"])
def test_hub_failures_are_one_line_errors(tmp_path, monkeypatch, capsys, command):
    run = make_run(tmp_path, "sys", p_win=0.5, n=3, folder="run")
    folder = tmp_path / "lfrqa"
    folder.mkdir()
    (folder / "README.md").write_text("---\nconfigs: []\n---\n")
    argv = (["push", str(run), "--repo", "org/x"] if command == "push"
            else ["data", "push", "org/x", "--from", str(folder)])
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)

    with _hub(offline=True):
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot upload to org/x: HF_HUB_OFFLINE is set; unset it" in err

    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with _hub(offline=False, endpoint=f"http://127.0.0.1:{server.server_address[1]}"):
            assert main(argv) == 2
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and FAKE_HF not in err
    assert "the Hugging Face Hub refused the upload to org/x (HTTP 401)" in err
    assert "check the token (HF_TOKEN or `hf auth login`): it needs write access to org" in err

    with _hub(offline=False, endpoint="http://127.0.0.1:9"):  # nothing listens there
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the Hugging Face Hub to upload to org/x: check the network" in err


@pytest.mark.parametrize("command", ["push", "data push"])
def test_no_token_is_said_before_any_network_call(tmp_path, monkeypatch, capsys, command):
    run = make_run(tmp_path, "sys", p_win=0.5, n=3, folder="run")
    folder = tmp_path / "lfrqa"
    folder.mkdir()
    (folder / "README.md").write_text("---\nconfigs: []\n---\n")
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved login either
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    argv = (["push", str(run), "--repo", "org/x"] if command == "push"
            else ["data", "push", "org/x", "--from", str(folder)])
    with _hub(offline=False, endpoint="http://127.0.0.1:9"):  # a network call would fail differently
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No Hugging Face token found" in err and "Traceback" not in err


# --------------------------------------------------------------------------------------------
# `data push`: --dry-run, --token-from-env, --message; the token and the Hub checked before exporting
# --------------------------------------------------------------------------------------------
class _RecordingHfApi(RecordingHub):
    """Stands in for huggingface_hub.HfApi in the CLI: also answers whoami."""

    instances: list = []

    def __init__(self, *args, **kwargs):
        super().__init__()
        _RecordingHfApi.instances.append(self)

    def whoami(self, token=None):
        self.calls.append(("whoami", token))
        return {"name": "me"}


def _exported_stub(folder: Path) -> Path:
    folder.mkdir()
    (folder / "README.md").write_text("---\nconfigs: []\n---\n")
    (folder / "eval.yaml").write_text("name: x\n")
    (folder / "data").mkdir()
    (folder / "data" / "t.parquet").write_bytes(b"PAR1")
    return folder


def test_data_push_dry_run_writes_the_files_and_needs_no_token(tmp_path, monkeypatch, capsys, lfrqa_data_dir):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    with _hub(offline=True):
        assert main(["data", "push", "org/lfrqa", "--dry-run", str(tmp_path / "preview"),
                     "--data-dir", str(lfrqa_data_dir)]) == 0
        assert main(["data", "push", "org/lfrqa", "--from", str(_exported_stub(tmp_path / "stub")),
                     "--dry-run", str(tmp_path / "copy")]) == 0
    err = capsys.readouterr().err
    assert "nothing uploaded" in err
    assert {"README.md", "eval.yaml", "data/fiqa/test.parquet"} <= {
        p.relative_to(tmp_path / "preview").as_posix() for p in (tmp_path / "preview").rglob("*") if p.is_file()}
    assert sorted(p.name for p in (tmp_path / "copy").rglob("*") if p.is_file()) == ["README.md", "eval.yaml",
                                                                                      "t.parquet"]
    (tmp_path / "stub" / "eval.yaml").write_text(f"notes: {FAKE_OPENAI}\n")
    assert main(["data", "push", "org/lfrqa", "--from", str(tmp_path / "stub"), "--dry-run", str(tmp_path / "c2")]) == 2
    assert "Refusing to upload" in capsys.readouterr().err


def test_data_push_checks_token_and_hub_before_exporting(tmp_path, monkeypatch, capsys):
    import builders

    exported = []
    monkeypatch.setattr(builders, "export_dataset", lambda *a, **k: exported.append(a) or tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    assert main(["data", "push", "org/lfrqa", "--token-from-env"]) == 2
    assert "HF_TOKEN is not set" in capsys.readouterr().err
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    with _hub(offline=True):
        assert main(["data", "push", "org/lfrqa"]) == 2
    assert "HF_HUB_OFFLINE is set" in capsys.readouterr().err
    assert exported == []  # nothing was exported for a push that could not happen


def test_data_push_passes_token_from_env_and_message(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", _RecordingHfApi)
    _RecordingHfApi.instances.clear()
    monkeypatch.setenv("HF_TOKEN", FAKE_HF)
    folder = _exported_stub(tmp_path / "stub")
    assert main(["data", "push", "org/lfrqa", "--from", str(folder), "--token-from-env", "--message", "LFRQA v1"]) == 0
    calls = [call for api in _RecordingHfApi.instances for call in api.calls]
    assert calls[0] == ("whoami", FAKE_HF)
    [commit] = [c for c in calls if c[0] == "create_commit"]
    assert commit[3]["commit_message"] == "LFRQA v1" and commit[3]["token"] == FAKE_HF
    assert sorted(op.path_in_repo for op in commit[2]) == ["README.md", "data/t.parquet", "eval.yaml"]
    assert FAKE_HF not in capsys.readouterr().out
