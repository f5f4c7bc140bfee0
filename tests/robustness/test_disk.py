"""A full disk, a read-only folder, or a file where a folder should be: the commands stop with
"cannot write to DIR: ... (disk full or read-only?)" and exit code 2, never a traceback; what was
answered before stays in the cache, so the next run does not pay for it again.

The full disk is a 64 KiB tmpfs and the read-only folder a read-only bind mount (tests run as
root, for whom chmod does not forbid anything); where mounting is not allowed these tests skip."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    cli,
    prediction_rows,
    read_jsonl,
    read_only,
    retrieved_rows,
    run_cli,
    tmpfs,
    write_jsonl,
)

N = 20
LONG = "x" * 6000  # ~10 verdicts or answers fill the 64 KiB disk


def judge_reply(body, attempt):
    return f"<thinking>{LONG}</thinking><rating>1</rating>"


def judge_argv(tmp_path, server, out, cache):
    preds = write_jsonl(tmp_path / "sys.jsonl", prediction_rows(N))
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(N, answer="Other"))
    return ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:judge", "--base-url",
            server.base_url, "--out", out, "--cache-dir", cache, "--max-concurrency", "2", "--no-progress"]


def generate_argv(tmp_path, server, out, cache):
    retrieved = write_jsonl(tmp_path / "retrieved.jsonl", retrieved_rows(N))
    return ["generate", "--retrieved", retrieved, "--model", "openai:gen", "--base-url", server.base_url,
            "--out", out, "--cache-dir", cache, "--max-concurrency", "2", "--no-progress"]


def assert_clear_write_error(code: int, stderr: str, where) -> None:
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert f"cannot write to {where}" in stderr and "(disk full or read-only?)" in stderr


def cached(cache) -> int:
    with sqlite3.connect(cache / "completions.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM completions WHERE valid = 1").fetchone()[0]


def test_judge_on_a_full_disk_stops_cleanly_and_resumes_from_the_cache(tmp_path, capsys):
    with tmpfs(tmp_path / "full") as full, OpenAIServer(judge_reply) as server:
        argv = judge_argv(tmp_path, server, full / "run", tmp_path / "cache")
        result = run_cli(argv, OPENAI_API_KEY=FAKE_KEY)  # a real subprocess
        assert_clear_write_error(result.returncode, result.stderr, full / "run")
        assert "No space left on device" in result.stderr
        n_cached = cached(tmp_path / "cache")
        assert 0 < n_cached < N
        server.clear()
        argv[argv.index("--out") + 1] = tmp_path / "run"  # a disk with room
        code, _, err = cli(argv, capsys)
        assert code == 0, err
        assert len(server.requests) == N - n_cached  # answered before the disk filled: from the cache
    assert len(read_jsonl(tmp_path / "run" / "verdicts.jsonl")) == N


def test_generate_on_a_full_disk_stops_cleanly(tmp_path, capsys):
    with tmpfs(tmp_path / "full") as full, OpenAIServer(lambda body, attempt: f"Answer: {LONG}") as server:
        code, _, err = cli(generate_argv(tmp_path, server, full / "preds.jsonl", tmp_path / "cache"), capsys)
        assert_clear_write_error(code, err, full)
        assert "No space left on device" in err
        n_cached = cached(tmp_path / "cache")
        # every answer may be in before the full disk stops the writer (a busy machine): the re-run then sends none
        assert 0 < n_cached <= N
        server.clear()
        code, stdout, err = cli(generate_argv(tmp_path, server, tmp_path / "preds.jsonl", tmp_path / "cache"), capsys)
        assert code == 0, err
        assert len(server.requests) == N - n_cached  # the rest came from the cache
    assert len(read_jsonl(tmp_path / "preds.jsonl")) == N


def test_a_full_cache_disk_is_a_clear_error(tmp_path, capsys):
    with tmpfs(tmp_path / "full") as full, OpenAIServer(judge_reply) as server:
        code, _, err = cli(judge_argv(tmp_path, server, tmp_path / "run", full / "cache"), capsys)
    assert_clear_write_error(code, err, full / "cache")
    assert "No space left on device" in err


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_read_only_output_folder(tmp_path, capsys, command):
    with read_only(tmp_path / "ro") as ro, OpenAIServer(judge_reply) as server:
        make = judge_argv if command == "judge" else generate_argv
        out = ro / ("run" if command == "judge" else "sub/preds.jsonl")
        code, _, err = cli(make(tmp_path, server, out, tmp_path / "cache"), capsys)
        assert server.requests == []  # refused before anything is sent
    assert code == 2 and "Traceback" not in err and "cannot write to" in err and "Read-only file system" in err


def test_read_only_cache_folder(tmp_path, capsys):
    with read_only(tmp_path / "ro") as ro, OpenAIServer(judge_reply) as server:
        code, _, err = cli(generate_argv(tmp_path, server, tmp_path / "preds.jsonl", ro / "cache"), capsys)
        assert server.requests == []
    assert code == 2 and "Traceback" not in err and "Read-only file system" in err and "cache" in err


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_a_file_where_the_output_folder_should_be(tmp_path, capsys, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with OpenAIServer(judge_reply) as server:
        make = judge_argv if command == "judge" else generate_argv
        out = blocker / ("run" if command == "judge" else "preds.jsonl")
        code, _, err = cli(make(tmp_path, server, out, tmp_path / "cache"), capsys)
        assert server.requests == []
    assert code == 2 and "Traceback" not in err and "cannot write to" in err and "a-file" in err
    assert json.loads(json.dumps(err))  # printable, one message
