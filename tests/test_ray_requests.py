"""`rag-qa-arena requests run`: an export's request files run on Ray Data with Ray's own LLM processors, answers
written in the batch output format, imported back by `judge --import-results`.

The slow test runs it for real: a local Ray (2 CPUs), three local servers (one good, one answering 30% of its
requests with 500, one always 503), a 2,000-pair judge export and a tournament export; failed lines are
written as error lines (status code and error body kept) and later passes (`--retry-failed`) fill them; the
re-run of `judge` and `tournament` then sends 0 requests. The fast tests check the pass bookkeeping (no Ray).
"""

from __future__ import annotations

import builtins
import hashlib
import json
from pathlib import Path

import pytest

import lfrqa
from lfrqa.errors import RagQaArenaError
from metric_arena.llm.batch import run_requests
from metric_arena.llm.batch._passes import answered_ids, bucket_of, cumulative, pass_number, request_files, shares
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer, Reply
from tests.test_end_to_end import arena_server_reply

NO_RAY = 'Ray is not installed: pip install "rag-qa-arena[ray]" (.ci/run installs it before the slow tests)'


def _request_line(key: str, text: str = "hi") -> str:
    return json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
                       "body": {"model": "judge", "messages": [{"role": "user", "content": text}], "max_tokens": 8}},
                      separators=(",", ":")) + "\n"


def _result_line(key: str, status: int) -> str:
    body = ({"choices": [{"message": {"content": "<rating>1</rating>"}, "finish_reason": "stop"}]} if status == 200
            else {"error": {"message": "down", "type": "service_unavailable"}})
    return json.dumps({"custom_id": key, "response": {"status_code": status, "body": body}, "error": None}) + "\n"


def test_passes_send_only_what_no_pass_answered_and_never_overwrite(tmp_path):
    export, out = tmp_path / "x", tmp_path / "out"
    (export / "judge").mkdir(parents=True)
    (export / "judge" / "shard-00000-of-00001.jsonl").write_text(_request_line("a") + _request_line("b"))
    assert [p.name for p in request_files(export, out)] == ["shard-00000-of-00001.jsonl"]
    with pytest.raises(RagQaArenaError, match="overlap"):
        request_files(export, export / "results")
    with pytest.raises(RagQaArenaError, match="no earlier pass"):
        pass_number(out, retry_failed=True)
    assert pass_number(out, retry_failed=False) == 1
    (out / "judge").mkdir(parents=True)
    (out / "judge" / "shard-00000-of-00001.pass-00001.jsonl").write_text(_result_line("a", 200) + _result_line("b", 503))
    with pytest.raises(RagQaArenaError, match="--retry-failed"):
        pass_number(out, retry_failed=False)
    assert pass_number(out, retry_failed=True) == 2
    assert answered_ids(out) == ({"a"}, {"503": 1})
    # a pass killed while writing left half a line: cut, and its request counts as unanswered
    (out / "judge" / "shard-00000-of-00001.pass-00002.jsonl").write_text(_result_line("b", 200)[:40])
    assert answered_ids(out) == ({"a"}, {"503": 1})
    assert (out / "judge" / "shard-00000-of-00001.pass-00002.jsonl").read_text() == ""
    (out / "judge" / "shard-00000-of-00001.pass-00002.jsonl").write_text(_result_line("b", 200))
    assert answered_ids(out) == ({"a", "b"}, {})
    # shares: equal at first, then by success; a server that answered nothing gets nothing
    history = [{"endpoints": {"http://a/v1": {"sent": 10, "ok": 10}, "http://b/v1": {"sent": 10, "ok": 7},
                              "http://c/v1": {"sent": 10, "ok": 0}}}]
    assert shares(["http://a/v1", "http://b/v1"], []) == [0.5, 0.5]
    assert [round(w, 3) for w in shares(["http://a/v1", "http://b/v1", "http://c/v1"], history)] == [0.588, 0.412, 0.0]
    edges = cumulative([0.5, 0.5])
    buckets = [bucket_of(hashlib.sha256(str(i).encode()).hexdigest(), edges) for i in range(2000)]
    assert 900 < buckets.count(0) < 1100


def test_without_ray_the_command_names_the_extra(tmp_path, monkeypatch, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "r.jsonl").write_text(_request_line("a"))
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    assert main(["requests", "run", str(tmp_path / "x"), "--out", str(tmp_path / "out"),
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert 'pip install "rag-qa-arena[ray]"' in capsys.readouterr().err


def test_the_command_wants_servers_or_a_model(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "r.jsonl").write_text(_request_line("a"))
    out = ["requests", "run", str(tmp_path / "x"), "--out", str(tmp_path / "out")]
    assert main(out) == 2
    assert "--base-url URL" in capsys.readouterr().err
    assert main([*out, "--base-url", "http://127.0.0.1:9/v1", "--vllm", "m"]) == 2
    assert main([*out, "--base-url", "localhost:8000"]) == 2
    assert "not an http(s) URL" in capsys.readouterr().err
    assert main(["requests", "run", str(tmp_path / "x"), "--out", str(tmp_path / "x" / "results"),
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "overlap" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def flaky_reply(body: dict, attempt: int):
    """The arena's judge, except that 30% of the requests (by body and attempt) get a 500."""
    u = int(hashlib.sha256(f"{json.dumps(body, sort_keys=True)}:{attempt}".encode()).hexdigest()[:8], 16) / 16**8
    return Reply(status=500) if u < 0.3 else arena_server_reply(body, attempt)


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason=NO_RAY)
    pytest.importorskip("ray.data.llm", reason=NO_RAY)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _predictions(tmp_path: Path, data_dir, n: int, systems=("strong",)) -> dict[str, Path]:
    qids = lfrqa.load("all", data_dir=str(data_dir))["qid"][:n]
    out = {}
    for system in systems:
        out[system] = tmp_path / f"{system}.jsonl"
        out[system].write_text("".join(json.dumps({"qid": q, "answer": f"ANSWER[{system}] an answer"}) + "\n"
                                       for q in qids))
    return out


def _all_passes(export: Path, out: Path, urls: list[str]) -> list[dict]:
    """The first pass, then --retry-failed passes until every request is answered (each pass's record)."""
    args = ["requests", "run", str(export), "--out", str(out), "--no-progress", "--batch-size", "32",
            *(a for url in urls for a in ("--base-url", url))]
    assert main(args) == 0
    records = json.loads((out / "passes.json").read_text())["passes"]
    while records[-1]["still_failed"] and len(records) < 12:
        assert main([*args, "--retry-failed"]) == 0
        records = json.loads((out / "passes.json").read_text())["passes"]
    return records


def _check_passes(records: list[dict], n_requests: int, down: str) -> None:
    first = records[0]
    assert first["n_requests"] == n_requests
    assert first["endpoints"][down]["ok"] == 0 and first["endpoints"][down]["failed"] == {
        "503": first["endpoints"][down]["sent"]}
    assert first["still_failed"].get("500", 0) > 0 and first["still_failed"]["503"] > 0
    for record in records:  # each request sent once per pass, through one server
        assert sum(e["sent"] for e in record["endpoints"].values()) == record["n_requests"]
    for before, after in zip(records, records[1:]):  # each pass sends exactly what is still failed
        assert after["n_requests"] == sum(before["still_failed"].values())
        assert down not in after["endpoints"]  # answered nothing: no share in later passes
    assert records[-1]["still_failed"] == {}
    assert sum(r["n_ok"] for r in records) == n_requests


@pytest.fixture(scope="module")
def servers():
    """One good server, one answering 30% of its requests with 500, one always answering 503."""
    with OpenAIServer(arena_server_reply) as good, OpenAIServer(flaky_reply) as flaky, \
            OpenAIServer(lambda body, attempt: Reply(status=503)) as down:
        yield good, flaky, down


def _common(tmp_path: Path, good, data_dir) -> list[str]:
    return ["--judge", "openai:judge", "--base-url", good.base_url, "--endpoint-name", "judge-pool",
            "--api-key", "sk-local-test-1234", "--cache-dir", str(tmp_path / "cache"), "--no-progress",
            "--data-dir", str(data_dir)]


def _sent(servers) -> int:
    return sum(len(server.requests) for server in servers)


@pytest.mark.slow
def test_ray_runs_a_2000_pair_judge_export_through_three_servers(local_ray, servers, tmp_path, lfrqa_data_dir,
                                                                  capsys):
    good, flaky, down = servers
    common = _common(tmp_path, good, lfrqa_data_dir)
    [preds] = _predictions(tmp_path, lfrqa_data_dir, 2000).values()
    assert main(["judge", "--predictions", str(preds), "--export-requests", str(tmp_path / "x"),
                 "--shards", "3", *common]) == 0
    records = _all_passes(tmp_path / "x", tmp_path / "r", [s.base_url for s in servers])
    _check_passes(records, 2000, down.base_url)
    first = [json.loads(line) for f in (tmp_path / "r").glob("*/*.pass-00001.jsonl")
             for line in f.read_text().splitlines()]
    assert len(first) == 2000
    kept = {line["response"]["status_code"]: line for line in first}
    assert kept[503]["response"]["body"]["error"]["type"] == "service_unavailable"  # the error body, kept
    assert kept[500]["response"]["body"]["error"]["type"] == "server_error"
    with capsys.disabled():
        print("\njudge export passes (requests, seconds):", [(r["n_requests"], r["seconds"]) for r in records])
    results = sorted(map(str, (tmp_path / "r").glob("*/*.jsonl")))
    capsys.readouterr()
    assert main(["judge", "--import-results", *results, "--export-dir", str(tmp_path / "x"), *common]) == 0
    assert "imported 2,000 answers" in capsys.readouterr().err
    for server in servers:
        server.clear()
    assert main(["judge", "--predictions", str(preds), "--out", str(tmp_path / "run"), *common]) == 0
    assert _sent(servers) == 0
    assert len((tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()) == 2000


@pytest.mark.slow
def test_ray_runs_a_tournament_export_and_the_tournament_then_sends_nothing(local_ray, servers, tmp_path,
                                                                            lfrqa_data_dir, capsys):
    good, flaky, down = servers
    common = _common(tmp_path, good, lfrqa_data_dir)
    systems = _predictions(tmp_path, lfrqa_data_dir, 60, ("strong", "medium", "weak"))
    assert main(["tournament", *map(str, systems.values()), "--export-requests", str(tmp_path / "x"),
                 "--sample", "30", "--shards", "2", *common]) == 0
    n_requests = json.loads((tmp_path / "x" / "requests.json").read_text())["n_requests"]
    assert n_requests > 3 * 60  # the matches against LFRQA's answers and those between the systems
    records = _all_passes(tmp_path / "x", tmp_path / "r", [s.base_url for s in servers])
    _check_passes(records, n_requests, down.base_url)
    with capsys.disabled():
        print("\ntournament export passes (requests, seconds):", [(r["n_requests"], r["seconds"]) for r in records])
    results = sorted(map(str, (tmp_path / "r").glob("*/*.jsonl")))
    assert main(["judge", "--import-results", *results, "--export-dir", str(tmp_path / "x"), *common]) == 0
    for server in servers:
        server.clear()
    assert main(["tournament", *map(str, systems.values()), "--out", str(tmp_path / "runs"), "--sample", "30",
                 *common]) == 0
    assert _sent(servers) == 0
    capsys.readouterr()
    # nothing left: another --retry-failed pass sends nothing
    assert main(["requests", "run", str(tmp_path / "x"), "--out", str(tmp_path / "r"), "--retry-failed",
                 "--base-url", good.base_url, "--no-progress"]) == 0
    assert "nothing to send" in capsys.readouterr().err
    assert _sent(servers) == 0


@pytest.mark.slow
def test_the_vllm_processor_builds_and_its_rows_become_importable_lines(tmp_path):
    """On a machine without a GPU or vllm: the engine processor's configuration is accepted by Ray, and the
    rows it hands on (an answer, a failed row) become the lines `--import-results` reads."""
    pytest.importorskip("ray.data.llm", reason=NO_RAY)
    from metric_arena.llm.batch import VllmEngine, parse_output_lines
    from metric_arena.llm.batch._ray import _processors, _vllm_post, _vllm_pre

    [(name, processor)] = _processors(VllmEngine(model="org/model", engine_kwargs={"max_model_len": 256}),
                                      "/v1/chat/completions", [1.0])
    assert name == "vllm:org/model" and processor is not None
    key = "a" * 64
    row = {"text": _request_line(key, "w1 w2").strip(), "path": "x.jsonl"}
    pre = _vllm_pre(row)
    assert pre["messages"] == [{"role": "user", "content": "w1 w2"}] and "model" not in pre  # "model" means LoRA
    assert pre["sampling_params"]["max_tokens"] == 8
    line = _vllm_post({**row, **pre, "generated_text": "<rating>1</rating>", "num_input_tokens": 12,
                       "num_generated_tokens": 8})["line"]
    answer = parse_output_lines([line])[key]
    assert answer == {"text": "<rating>1</rating>", "finish_reason": "length", "model": "judge",
                      "usage": {"prompt_tokens": 12, "completion_tokens": 8}}


@pytest.mark.gpu  # only: `-m slow` on a CPU machine would just skip it; run with `-m gpu`
def test_the_vllm_engine_processor_answers_an_export(local_ray, tmp_path):
    pytest.importorskip("vllm")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from metric_arena.llm.batch import VllmEngine, parse_output_lines
    from tests.test_vllm_backend import _tiny_chat_model

    model = _tiny_chat_model(tmp_path / "tiny")
    (tmp_path / "x" / "judge").mkdir(parents=True)
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(8)]
    (tmp_path / "x" / "judge" / "shard-00000-of-00001.jsonl").write_text(
        "".join(_request_line(k, f"w{i} w{i + 1}") for i, k in enumerate(keys)))
    engine = VllmEngine(model=model, engine_kwargs={"max_model_len": 256, "gpu_memory_utilization": 0.2,
                                                     "enforce_eager": True}, batch_size=4)
    record = run_requests(tmp_path / "x", tmp_path / "r", engine=engine, progress=False)
    assert record["n_requests"] == 8 and record["still_failed"] == {}
    [path] = (tmp_path / "r" / "judge").glob("*.pass-00001.jsonl")
    answers = parse_output_lines(path.read_text().splitlines())
    assert sorted(answers) == sorted(keys)
    for answer in answers.values():
        assert isinstance(answer["text"], str) and 1 <= answer["usage"]["completion_tokens"] <= 8
