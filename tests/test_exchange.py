"""Request files for outside engines: `judge --export-requests` / `tournament --export-requests` write OpenAI
batch-format shards (custom_id = cache key), an outside runner answers them in the batch output format, and
`judge --import-results` reads the answers back into the cache with the checks of an online reply; the run
that follows gives the online run's verdicts with 0 online requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lfrqa
from lfrqa.errors import RagQaArenaError
from metric_arena import RunConfig
from metric_arena.judge import ExpectedAnswers, import_judge_results
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer
from tests.test_end_to_end import arena_server_reply

SYSTEMS = ("strong", "medium", "weak")


def outside_runner(shards: list[Path], out: Path, *, fail: int = 0, leak: str | None = None) -> None:
    """What `vllm run-batch` writes: one output line per input line, answered by the arena's scripted judge;
    the first ``fail`` lines get an error instead, and ``leak`` is put into every reply (to be redacted)."""
    lines = []
    for shard in shards:
        for k, raw in enumerate(shard.read_text().splitlines()):
            request = json.loads(raw)
            assert set(request) == {"custom_id", "method", "url", "body"} and request["url"] == "/v1/chat/completions"
            if len(lines) < fail:
                lines.append({"id": f"r{k}", "custom_id": request["custom_id"], "response": None,
                              "error": {"code": "engine_error", "message": "out of memory"}})
                continue
            text = arena_server_reply(request["body"], 1) + (f" {leak}" if leak else "")
            body = {"id": "x", "object": "chat.completion", "model": request["body"]["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
            lines.append({"id": f"r{k}", "custom_id": request["custom_id"],
                          "response": {"status_code": 200, "request_id": "q", "body": body}, "error": None})
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def files(lfrqa_data_dir, tmp_path):
    rows = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    out = {}
    for system in SYSTEMS:
        out[system] = tmp_path / f"{system}.jsonl"
        out[system].write_text("".join(json.dumps({"qid": q, "answer": f"ANSWER[{system}] an answer"}) + "\n"
                                       for q in rows["qid"][:12]))
    return out


def _common(tmp_path, server, data_dir, cache: str) -> list[str]:
    return ["--judge", "openai:judge", "--base-url", server.base_url, "--api-key", "sk-local-test-1234",
            "--cache-dir", str(tmp_path / cache), "--no-progress", "--data-dir", str(data_dir)]


def test_exported_shards_answered_outside_give_the_online_verdicts_with_no_online_request(files, tmp_path,
                                                                                         lfrqa_data_dir, capsys):
    with OpenAIServer(arena_server_reply) as server:
        online = _common(tmp_path, server, lfrqa_data_dir, "online")
        assert main(["judge", "--predictions", str(files["strong"]), "--out", str(tmp_path / "online"), *online]) == 0
        offline = _common(tmp_path, server, lfrqa_data_dir, "offline")
        server.clear()
        assert main(["judge", "--predictions", str(files["strong"]), "--export-requests", str(tmp_path / "x"),
                     "--shards", "3", *offline]) == 0
        manifest = json.loads((tmp_path / "x" / "requests.json").read_text())
        [entry] = manifest["judges"]
        shards = [tmp_path / "x" / f for f in entry["files"]]
        assert len(shards) == 3 and entry["n_requests"] == 12 and len(server.requests) == 0
        assert sorted(len(s.read_text().splitlines()) for s in shards) == [4, 4, 4]
        outs = []
        for k, shard in enumerate(shards):
            outs.append(tmp_path / f"out-{k}.jsonl")
            outside_runner([shard], outs[-1], leak="sk-local-test-1234")
        capsys.readouterr()
        assert main(["judge", "--predictions", str(files["strong"]), "--import-results", *map(str, outs),
                     "--batch-only", "--out", str(tmp_path / "offline"), *offline]) == 0
        assert "imported 12 answers" in capsys.readouterr().err
        assert len(server.requests) == 0  # nothing asked online
    mine = [json.loads(line) for line in (tmp_path / "offline" / "verdicts.jsonl").read_text().splitlines()]
    theirs = [json.loads(line) for line in (tmp_path / "online" / "verdicts.jsonl").read_text().splitlines()]
    assert [(v["qid"], v["outcome"]) for v in mine] == [(v["qid"], v["outcome"]) for v in theirs]
    assert all("sk-local-test-1234" not in j["raw"] and "***" in j["raw"] for v in mine for j in v["judgments"])


def test_a_tournament_export_covers_every_match_and_failed_lines_are_asked_online(files, tmp_path, lfrqa_data_dir,
                                                                                 capsys):
    with OpenAIServer(arena_server_reply) as server:
        common = _common(tmp_path, server, lfrqa_data_dir, "c")
        assert main(["tournament", *map(str, files.values()), "--export-requests", str(tmp_path / "x"),
                     "--sample", "6", *common]) == 0
        [entry] = json.loads((tmp_path / "x" / "requests.json").read_text())["judges"]
        assert entry["n_requests"] == 3 * 12 + 3 * 6
        outside_runner([tmp_path / "x" / f for f in entry["files"]], tmp_path / "out.jsonl", fail=2)
        assert main(["judge", "--import-results", str(tmp_path / "out.jsonl"), "--export-dir", str(tmp_path / "x"),
                     *common]) == 0
        assert "2 failed lines (engine_error: 2)" in capsys.readouterr().err
        assert main(["tournament", *map(str, files.values()), "--out", str(tmp_path / "runs"), "--sample", "6",
                     *common]) == 0
        assert len(server.requests) == 2  # only the two lines the outside runner failed


def test_import_refuses_what_is_not_batch_output(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"custom_id": "' + "a" * 64 + '", "response": {"status_code": 200, "body": {}}}\nnot json\n')
    expected = ExpectedAnswers({"a" * 64: "judge"})
    with pytest.raises(RagQaArenaError, match="bad.jsonl.*line 2"):
        import_judge_results([bad], expected=expected, run=RunConfig(cache_dir=tmp_path / "c"))
    with pytest.raises(RagQaArenaError, match="does not exist"):
        import_judge_results([tmp_path / "missing.jsonl"], expected=expected, run=RunConfig(cache_dir=tmp_path / "c"))
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"custom_id": "not-a-key", "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "<rating>1</rating>"}}]}}}) + "\n")
    assert import_judge_results([odd], expected=expected, run=RunConfig(cache_dir=tmp_path / "c"))["n_unknown_ids"] == 1


def test_an_imported_reply_is_cut_at_the_size_cap_as_online(tmp_path):
    from metric_arena.llm import CompletionCache

    key = "b" * 64
    long = tmp_path / "long.jsonl"
    long.write_text(json.dumps({"custom_id": key, "response": {"status_code": 200, "body": {
        "choices": [{"message": {"content": "<rating>1</rating>" + "x" * 100_000}}]}}}) + "\n")
    counts = import_judge_results([long], expected=ExpectedAnswers({key: "judge"}), run=RunConfig(cache_dir=tmp_path / "c"))
    assert counts["n_oversized"] == 1 and counts["n_valid"] == 1
    with CompletionCache(tmp_path / "c") as cache:
        entry = cache.get(key)
    assert len(entry.text) == 8192 and entry.completion().original_chars == 100_018
