"""OpenAI Batch API workflow against the local Files + Batches server: write, submit, poll, collect."""

from __future__ import annotations

import json

import openai
import pytest

from metric_arena.llm import ChatRequest
from metric_arena.llm.batch import (
    BatchNotReady,
    batch_status,
    chat_body,
    collect,
    parse_output_lines,
    submit_batches,
    wait_for_batches,
    write_batch_files,
)
from tests.batch_api_server import BatchAPIServer, BatchReply


def _requests(n: int, model: str = "gpt-4o", size: int = 20) -> list[tuple[str, dict]]:
    return [(f"key{i:03d}", chat_body(model, ChatRequest([{"role": "user", "content": f"q{i} " + "x" * size}])))
            for i in range(n)]


def _client(server: BatchAPIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _scripted(custom_id: str, body: dict):
    if custom_id == "key003":
        return BatchReply(status_code=400, content="context length exceeded")
    if custom_id == "key004":
        return BatchReply(error={"code": "batch_expired", "message": "not run in the window"})
    if custom_id == "key005":
        return BatchReply(choices=[])
    return BatchReply(content=f"<rating>2</rating> {custom_id}", finish_reason="length" if custom_id == "key006" else "stop")


def test_write_submit_poll_collect_end_to_end(tmp_path):
    requests = _requests(8)
    files = write_batch_files(requests, tmp_path / "batch", max_requests=3)
    assert [f.name for f in files] == ["batch-00000.jsonl", "batch-00001.jsonl", "batch-00002.jsonl"]
    assert [len(_lines(f)) for f in files] == [3, 3, 2]
    first = _lines(files[0])[0]
    assert first == {"custom_id": "key000", "method": "POST", "url": "/v1/chat/completions", "body": requests[0][1]}

    with BatchAPIServer(reply=_scripted, polls_to_finish=3) as server:
        client = _client(server)
        batch_ids = submit_batches(files, client, metadata={"system": "my-rag"})
        assert len(set(batch_ids)) == 3
        assert all(b["metadata"] == {"system": "my-rag"} for b in server.batches.values())
        assert all(server.files[b["input_file_id"]]["purpose"] == "batch" for b in server.batches.values())

        rows = batch_status(tmp_path / "batch", client)  # poll 1: validated, in progress
        assert [r["status"] for r in rows] == ["in_progress"] * 3
        assert [r["request_counts"]["total"] for r in rows] == [3, 3, 2]
        with pytest.raises(BatchNotReady, match="still running"):
            collect(tmp_path / "batch", client)  # poll 2

        seen = []
        rows = wait_for_batches(tmp_path / "batch", client, poll_s=0.01, on_status=seen.append)
        assert [r["status"] for r in rows] == ["completed"] * 3 and seen

        results = collect(tmp_path / "batch", client)
        n_downloads = server.count("GET", r"/v1/files/[^/]+/content")
        again = collect(tmp_path / "batch", client)  # a later collect reuses the downloads
        assert server.count("GET", r"/v1/files/[^/]+/content") == n_downloads
        assert again == results

    assert set(results) == {cid for cid, _ in requests}
    assert results["key000"] == {"text": "<rating>2</rating> key000", "finish_reason": "stop",
                                 "usage": {"prompt_tokens": 100, "completion_tokens": 7},
                                 "model": requests[0][1]["model"]}  # the model the reply names
    assert results["key006"]["finish_reason"] == "length"
    assert results["key003"]["error"]["status_code"] == 400
    assert "context length exceeded" in results["key003"]["error"]["message"]
    assert results["key004"] == {"error": {"code": "batch_expired", "message": "not run in the window"}}
    assert results["key005"]["error"]["code"] == "empty_choices"
    assert (tmp_path / "batch" / "batch-00001.errors.jsonl").is_file()
    assert (tmp_path / "batch" / "batch-00000.output.jsonl").is_file()
    manifest = json.loads((tmp_path / "batch" / "manifest.json").read_text())
    assert [f["batch_id"] for f in manifest["files"]] == batch_ids
    assert "test-key" not in (tmp_path / "batch" / "manifest.json").read_text()


def test_resubmitting_never_uploads_or_creates_twice(tmp_path):
    files = write_batch_files(_requests(4), tmp_path, max_requests=2)
    with BatchAPIServer() as server:
        client = _client(server)

        class CrashOnCreate:
            """The client dies after the first upload, before its batch is created."""

            files = client.files

            class batches:  # noqa: N801
                @staticmethod
                def create(**kwargs):
                    raise ConnectionError("network gone")

        with pytest.raises(ConnectionError):
            submit_batches(files, CrashOnCreate())
        assert server.count("POST", "/v1/files") == 1
        manifest = json.loads((tmp_path / "manifest.json").read_text())
        assert manifest["files"][0]["input_file_id"] and not manifest["files"][0]["batch_id"]

        ids = submit_batches(files, client)  # a fresh run resumes from the manifest
        assert server.count("POST", "/v1/files") == 2  # only the second file was uploaded now
        assert submit_batches(files, client) == ids  # and a third run does nothing
        assert server.count("POST", "/v1/files") == 2 and server.count("POST", "/v1/batches") == 2


def test_cancelled_batch_reports_every_request_as_missing(tmp_path):
    files = write_batch_files(_requests(3), tmp_path)
    with BatchAPIServer(polls_to_finish=10) as server:
        client = _client(server)
        [batch_id] = submit_batches(files, client)
        client.batches.cancel(batch_id)
        results = collect(tmp_path, client)
    assert set(results) == {"key000", "key001", "key002"}
    assert all(r["error"]["code"] == "no_output" and "cancelled" in r["error"]["message"] for r in results.values())


def test_batch_failing_validation_reports_why(tmp_path):
    files = write_batch_files(_requests(2), tmp_path)
    with BatchAPIServer(fail_validation="Enqueued token limit reached for gpt-4o") as server:
        client = _client(server)
        submit_batches(files, client)
        [row] = wait_for_batches(tmp_path, client, poll_s=0.01)
        results = collect(tmp_path, client)
    assert row["status"] == "failed"
    assert row["errors"] == ["token_limit_exceeded: Enqueued token limit reached for gpt-4o"]
    assert set(results) == {"key000", "key001"}
    assert all("Enqueued token limit" in r["error"]["message"] for r in results.values())


def test_collect_partial_skips_running_batches(tmp_path):
    files = write_batch_files(_requests(4), tmp_path, max_requests=2)
    with BatchAPIServer(polls_to_finish=2) as server:
        client = _client(server)
        submit_batches(files[:1], client)  # a low tier submits a few files at a time
        with pytest.raises(ValueError, match="batch-00001.jsonl .* never submitted"):
            collect(tmp_path, client)  # poll 1 of the first batch
        assert set(collect(tmp_path, client, allow_partial=True)) == {"key000", "key001"}  # poll 2: done
        submit_batches(files[1:], client)
        assert set(collect(tmp_path, client, allow_partial=True)) == {"key000", "key001"}  # second one validating
        wait_for_batches(tmp_path, client, poll_s=0.01)
        results = collect(tmp_path, client)
    assert set(results) == {"key000", "key001", "key002", "key003"}


def test_split_by_request_count(tmp_path):
    requests = _requests(10)
    files = write_batch_files(requests, tmp_path, max_requests=4)
    assert [len(_lines(f)) for f in files] == [4, 4, 2]
    assert [line["custom_id"] for f in files for line in _lines(f)] == [cid for cid, _ in requests]


def test_split_by_bytes(tmp_path):
    requests = _requests(10, size=200)
    line_bytes = [len((json.dumps({"custom_id": c, "method": "POST", "url": "/v1/chat/completions", "body": b},
                                  separators=(",", ":")) + "\n").encode()) for c, b in requests]
    limit = 3 * max(line_bytes) + 10  # room for exactly 3 lines of this size
    files = write_batch_files(requests, tmp_path, max_bytes=limit)
    assert [len(_lines(f)) for f in files] == [3, 3, 3, 1]
    assert all(f.stat().st_size <= limit for f in files)
    assert [line["custom_id"] for f in files for line in _lines(f)] == [cid for cid, _ in requests]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [f["bytes"] for f in manifest["files"]] == [f.stat().st_size for f in files]
    # an exact fit stays in one file
    exact = write_batch_files(requests[:2], tmp_path / "exact", max_bytes=line_bytes[0] + line_bytes[1])
    assert len(exact) == 1


def test_request_over_the_byte_limit_is_named_and_nothing_is_left(tmp_path):
    requests = _requests(3) + [("huge-one", chat_body("gpt-4o", ChatRequest([{"role": "user", "content": "y" * 5000}])))]
    with pytest.raises(ValueError, match="'huge-one' is .* bytes, over the 4,000-byte"):
        write_batch_files(requests, tmp_path / "out", max_bytes=4000)
    assert not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize(
    "requests, message",
    [
        ([("a", {"model": "m"}), ("a", {"model": "m"})], "'a' appears twice"),
        ([("a", {"model": "m1"}), ("b", {"model": "m2"})], "model 'm2' but earlier requests for 'm1'"),
        ([("", {"model": "m"})], "custom_id ''"),
        ([(7, {"model": "m"})], "custom_id 7"),
        ([("a", "not a body")], "body of custom_id 'a' is str"),
        ([("a",)], "request #0"),
        ([], "no requests"),
    ],
)
def test_bad_requests_are_named(tmp_path, requests, message):
    with pytest.raises(ValueError, match=message):
        write_batch_files(requests, tmp_path)


def test_folder_guard_and_rewrite(tmp_path):
    write_batch_files(_requests(6), tmp_path, max_requests=2)
    files = write_batch_files(_requests(2), tmp_path, max_requests=2)  # never submitted: replaced
    assert sorted(p.name for p in tmp_path.glob("batch-*.jsonl")) == ["batch-00000.jsonl"]
    with BatchAPIServer() as server:
        submit_batches(files, _client(server))
    with pytest.raises(FileExistsError, match="already submitted"):
        write_batch_files(_requests(2), tmp_path)


def test_edited_file_is_not_submitted(tmp_path):
    [path] = write_batch_files(_requests(2), tmp_path)
    path.write_text(path.read_text().replace("q0", "q9"))
    with BatchAPIServer() as server:
        with pytest.raises(ValueError, match="changed since"):
            submit_batches([path], _client(server))
        assert server.count("POST", "/v1/files") == 0


def test_missing_manifest_and_bad_metadata(tmp_path):
    with pytest.raises(FileNotFoundError, match="write_batch_files"):
        batch_status(tmp_path, client=None)
    [path] = write_batch_files(_requests(1), tmp_path)
    with pytest.raises(ValueError, match="metadata="):
        submit_batches([path], client=None, metadata={"k": 1})


def test_parse_output_lines():
    ok = {"custom_id": "a", "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}}, "error": None}
    http_error = {"custom_id": "b", "response": {"status_code": 429, "body": {"error": {
        "message": "slow down", "type": "rate_limit", "code": "rate_limit_exceeded"}}}, "error": None}
    line_error = {"custom_id": "c", "response": None, "error": {"code": "batch_expired", "message": "late"}}
    no_content = {"custom_id": "d", "response": {"status_code": 200, "body": {"choices": [{"message": {}}]}}}
    neither = {"custom_id": "e"}
    lines = [json.dumps(x) for x in (ok, http_error, line_error, no_content, neither)]
    out = parse_output_lines([lines[0].encode(), "", *lines[1:], "  \n"])
    assert out["a"] == {"text": "hi", "finish_reason": "stop", "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    assert out["b"]["error"] == {"code": "rate_limit_exceeded", "message": "slow down", "type": "rate_limit",
                                 "status_code": 429}
    assert out["c"] == {"error": {"code": "batch_expired", "message": "late"}}
    assert out["d"]["error"]["code"] == "empty_choices"
    assert out["e"]["error"]["code"] == "no_response"
    # an answer beats an error for the same id, whatever the order
    assert "text" in parse_output_lines([json.dumps({**line_error, "custom_id": "a"}), lines[0]])["a"]
    assert "text" in parse_output_lines([lines[0], json.dumps({**line_error, "custom_id": "a"})])["a"]
    with pytest.raises(ValueError, match="line 2 of the batch output is not JSON"):
        parse_output_lines([lines[0], "{oops"])
    with pytest.raises(ValueError, match="line 1 .* no custom_id"):
        parse_output_lines(['{"response": null}'])


def test_chat_body_matches_the_online_request():
    request = ChatRequest([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                          max_tokens=300, temperature=0.5, top_p=0.9)
    assert chat_body("gpt-4o-mini", request) == {"model": "gpt-4o-mini", "messages": request.messages,
                                                 "max_tokens": 300, "temperature": 0.5, "top_p": 0.9}
