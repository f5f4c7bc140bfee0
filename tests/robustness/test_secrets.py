"""Security: no eval/exec/pickle of untrusted files in the package, trust_remote_code off by
default, and API keys taken only from arguments or the environment and never written anywhere:
not in run folders, answer files, the cache (its raw SQLite bytes), stdout or stderr, even with
the openai client's debug log on and a server that echoes the key in its error."""

from __future__ import annotations

import base64
import inspect
import json
import re
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, Reply
from tests.robustness.helpers import (
    FAKE_KEY,
    ROOT,
    cli,
    prediction_rows,
    read_jsonl,
    retrieved_rows,
    run_cli,
    write_jsonl,
)

PACKAGES = ["lfrqa", "metric_arena", "retrieval", "builders", "rag_qa_arena"]
DANGEROUS = {
    r"(?<![\w.])eval\(": "eval() runs text as code",
    r"(?<![\w.])exec\(": "exec() runs text as code",
    r"\bpickle\.loads?\(": "unpickling runs code from the file",
    r"\bcloudpickle\b|\bdill\.load": "unpickling runs code from the file",
    r"\bmarshal\.loads?\(": "unmarshalling code objects",
    r"\byaml\.load\((?![^)]*SafeLoader)": "yaml.load without SafeLoader builds arbitrary objects",
    r"torch\.load\((?![^)]*weights_only\s*=\s*True)": "torch.load without weights_only=True unpickles",
    r"allow_pickle\s*=\s*True": "numpy pickles",
    r"trust_remote_code\s*(:\s*bool\s*)?=\s*True": "trust_remote_code must default to False",
    r"shell\s*=\s*True": "a shell interprets the arguments",
}


def package_sources() -> list[Path]:
    files = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(files) > 30
    return files


@pytest.mark.parametrize("pattern", list(DANGEROUS), ids=list(DANGEROUS.values()))
def test_no_dangerous_calls_in_the_package(pattern):
    hits = []
    for path in package_sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(pattern, code):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert hits == [], DANGEROUS[pattern]


def test_the_grep_would_catch_them():
    samples = {"x = eval(text)": r"(?<![\w.])eval\(", "obj = pickle.load(handle)": r"\bpickle\.loads?\(",
               "torch.load(path)": r"torch\.load\((?![^)]*weights_only\s*=\s*True)",
               "def f(trust_remote_code: bool = True):": r"trust_remote_code\s*(:\s*bool\s*)?=\s*True"}
    for code, pattern in samples.items():
        assert re.search(pattern, code)
    assert not re.search(r"(?<![\w.])eval\(", "model.eval()")


def test_trust_remote_code_is_off_by_default():
    from metric_arena.llm._hf import HFBackend
    from rag_qa_arena.cli import build_parser

    assert inspect.signature(HFBackend.__init__).parameters["trust_remote_code"].default is False
    vllm_source = (ROOT / "metric_arena" / "llm" / "_vllm.py").read_text()
    assert re.search(r"trust_remote_code: bool = False", vllm_source)
    args = build_parser().parse_args(["generate", "--retrieved", "r", "--model", "hf:m", "--out", "o"])
    assert args.trust_remote_code is False


def written_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_api_keys_are_never_written(tmp_path, capsys):
    """Judge (a subprocess, key from the environment, openai debug log on) and generate (in this
    process, key on the command line), each against a server that refuses the key (echoing it)
    and then one that accepts it."""
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {FAKE_KEY}.", "type": "invalid_api_key"}})
    work = tmp_path / "work"
    preds = write_jsonl(work / "sys.jsonl", prediction_rows(5))
    other = write_jsonl(work / "other.jsonl", prediction_rows(5, answer="Other"))
    retrieved = write_jsonl(work / "retrieved.jsonl", retrieved_rows(5))
    outputs = []
    for status in (401, 200):
        reply = (lambda body, attempt: Reply(status=401, raw_body=echo)) if status == 401 else None
        with OpenAIServer(reply) as server:
            judge = run_cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--base-url",
                             server.base_url, "--out", work / f"run-{status}", "--cache-dir", work / "cache"],
                            OPENAI_API_KEY=FAKE_KEY, OPENAI_LOG="debug")
            code, stdout, stderr = cli(["generate", "--retrieved", retrieved, "--model", "openai:g", "--base-url",
                                        server.base_url, "--api-key", FAKE_KEY, "--out", work / f"preds-{status}.jsonl",
                                        "--cache-dir", work / "cache"], capsys)
            assert {h.get("authorization") for h in server.headers} == {f"Bearer {FAKE_KEY}"}  # it was used
        expected = 3 if status == 401 else 0
        assert (judge.returncode, code) == (expected, expected), judge.stderr + stderr
        outputs += [judge.stdout, judge.stderr, stdout, stderr]
    assert "Incorrect API key provided: ***" in outputs[1]  # the server's message, redacted
    files = written_bytes(work)
    assert any(name.startswith("cache/completions.sqlite") for name in files)
    assert {"run-200/verdicts.jsonl", "run-200/summary.json", "preds-200.jsonl", "preds-200.summary.json"} <= set(files)
    leaks = [name for name, data in files.items() if FAKE_KEY.encode() in data]
    leaks += [f"output {i}" for i, text in enumerate(outputs) if FAKE_KEY in text]
    assert leaks == []
    secret_part = FAKE_KEY.split("-", 2)[2].encode()  # no partial copy either
    assert not [name for name, data in files.items() if secret_part in data]


SHORT_KEY = "lp-tok-4417"  # a local proxy's key: no sk- prefix, under 20 characters


def _fault_for_one(reply: Reply):
    """The reply for every request, except a 400 for the question "q1 asks?" (its error is stored)."""
    def answer(body, attempt):
        return Reply(status=400) if "q1 asks?" in body["messages"][-1]["content"] else reply
    return answer


@pytest.mark.parametrize("how", ["key", "url"])
def test_credentials_echoed_by_a_server_are_never_stored(tmp_path, capsys, how):
    """A 200 reply quoting the request's Authorization header, and URL credentials in --base-url:
    neither reaches verdicts (raw, error), answers, summaries, the cache, the output or a push."""
    work = tmp_path / "work"
    preds = write_jsonl(work / "sys.jsonl", prediction_rows(3))
    other = write_jsonl(work / "other.jsonl", prediction_rows(3, answer="Other"))
    retrieved = write_jsonl(work / "retrieved.jsonl", retrieved_rows(3))
    rated = "<thinking>ok</thinking><rating>1</rating>"
    with OpenAIServer(_fault_for_one(Reply(content=rated, echo_authorization=True))) as server:
        if how == "key":
            base_url, secrets, flags = server.base_url, [SHORT_KEY], ["--api-key", SHORT_KEY]
        else:  # the proxy's password in the URL: sent as Basic auth (base64 of user:password)
            password = "pw-secret-99"
            base_url = server.base_url.replace("http://", f"http://proxyuser:{password}@")
            secrets, flags = [password, base64.b64encode(f"proxyuser:{password}".encode()).decode()], []
        common = ["--base-url", base_url, "--cache-dir", work / "cache", "--no-progress", *flags]
        outputs = [cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--out",
                        work / "run", *common], capsys),
                   cli(["generate", "--retrieved", retrieved, "--model", "openai:g", "--out", work / "preds.jsonl",
                        *common], capsys)]
        sent = {h.get("authorization") for h in server.headers}
        outputs.append(cli(["push", work / "run", "--repo", "me/x", "--dry-run", work / "pushed"], capsys))
    assert [code for code, _, _ in outputs] == [0, 0, 0], outputs
    assert any(secrets[-1] in (value or "") for value in sent)  # the credential was used, and echoed
    verdicts = read_jsonl(work / "run" / "verdicts.jsonl")
    assert "you sent Authorization: " in verdicts[0]["judgments"][0]["raw"]  # the echo, redacted
    assert "400" in verdicts[1]["judgments"][0]["error"] and "127.0.0.1" in verdicts[1]["judgments"][0]["error"]
    files = written_bytes(work)
    assert {"run/verdicts.jsonl", "run/summary.json", "preds.jsonl", "pushed/data/verdicts.parquet"} <= set(files)
    leaks = [(name, s) for name, data in files.items() for s in secrets if s.encode() in data]
    leaks += [(f"output {i}", s) for i, out in enumerate(outputs) for text in out[1:] for s in secrets if s in text]
    assert leaks == []
    if how == "url":  # the URL shown in errors has no credentials at all
        assert b"proxyuser" not in files["run/verdicts.jsonl"] and b"proxyuser" not in files["preds.jsonl"]


def test_push_refuses_credentials_of_any_shape(tmp_path, capsys, monkeypatch):
    """A run folder written before redaction (or by hand) holding a short, non-sk key after Bearer,
    another in an Authorization header, and URL credentials: push refuses it, even with no key set
    in the environment at push time."""
    for name in ("OPENAI_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    run = tmp_path / "run"
    run.mkdir()
    raws = [f"<rating>1</rating> you sent Bearer {SHORT_KEY}", "<rating>2</rating> Authorization: Basic dXNlcjpwYXNz",
            "<rating>0</rating>"]
    errors = [None, None, "connection error at http://proxyuser:pw-secret-99@10.0.0.1:8000/v1"]
    rows = [{"qid": str(i), "domain": "fiqa", "system_a": "s", "system_b": "LFRQA", "outcome": "win", "failed": False,
             "flipped": None, "no_answer_a": False,
             "judgments": [{"judge": "openai:j", "raw": raw, **({"error": error} if error else {})}]}
            for i, (raw, error) in enumerate(zip(raws, errors))]
    write_jsonl(run / "verdicts.jsonl", rows)
    code, _, err = cli(["push", run, "--repo", "me/x", "--dry-run", tmp_path / "pushed"], capsys)
    assert code == 2 and "Refusing to upload" in err, err
    for kind in ("line 1: a Bearer token", "line 2: an Authorization header", "line 3: credentials in a URL"):
        assert kind in err
    assert SHORT_KEY not in err and "pw-secret-99" not in err and not (tmp_path / "pushed").exists()
