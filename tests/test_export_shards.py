"""`--export-requests` as it scales: shards split by request count and bytes (every file within
--max-requests-per-file and --max-bytes-per-file), the same requests however they are cut, and
--export-part K/N (one process per part) whose parts --import-results reads together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lfrqa
from lfrqa.errors import RagQaArenaError
from metric_arena.judge import export_judge_requests, tournament_requests
from metric_arena.llm.batch import FileLimits
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer
from tests.test_end_to_end import arena_server_reply
from tests.test_exchange import outside_runner

SYSTEMS = ("strong", "medium", "weak", "twin")
N_QUESTIONS = 10
SAMPLE = 5
# each system against LFRQA on every question, each of the 6 pairs on the sample; "twin" answers as "strong"
# does, so its match against LFRQA asks strong's requests (written once)
N_REQUESTS = 3 * N_QUESTIONS + 6 * SAMPLE


@pytest.fixture(scope="module")
def systems(lfrqa_data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("systems")
    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:N_QUESTIONS]
    out = []
    for name in SYSTEMS:
        out.append(folder / f"{name}.jsonl")
        said = "strong" if name == "twin" else name
        out[-1].write_text("".join(json.dumps({"qid": q, "answer": f"ANSWER[{said}] an answer to {q}"}) + "\n"
                                   for q in qids))
    return [str(path) for path in out]


def _export(systems, data_dir, out: Path, *flags: str) -> int:
    return main(["tournament", *systems, "--judge", "openai:judge", "--base-url", "http://127.0.0.1:9/v1",
                 "--api-key", "sk-local", "--endpoint-name", "pool", "--cache-dir", str(out.parent / "cache"), "--data-dir", str(data_dir),
                 "--sample", str(SAMPLE), "--export-requests", str(out), *flags])


def _ids(folder: Path, manifest: str = "requests.json") -> list[str]:
    [entry] = json.loads((folder / manifest).read_text())["judges"]
    return [json.loads(line)["custom_id"] for f in entry["files"] for line in (folder / f).read_text().splitlines()]


@pytest.fixture(scope="module")
def whole(systems, lfrqa_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "x"
    assert _export(systems, lfrqa_data_dir, out) == 0
    return out


def test_every_shard_respects_the_per_file_limits_and_holds_the_same_requests(systems, whole, lfrqa_data_dir,
                                                                              tmp_path):
    ids = _ids(whole)
    assert len(ids) == len(set(ids)) == N_REQUESTS  # the twin's matches against LFRQA are not written twice
    line_bytes = sorted(len(line.encode()) + 1 for f in whole.glob("*/shard-*.jsonl")
                        for line in f.read_text().splitlines())
    max_bytes = 3 * line_bytes[-1]  # room for three of the longest lines
    for name, flags, most_lines, most_bytes in (
            ("count", ["--max-requests-per-file", "7", "--shards", "2"], 7, None),
            ("bytes", ["--max-bytes-per-file", str(max_bytes)], None, max_bytes)):
        out = tmp_path / name
        assert _export(systems, lfrqa_data_dir, out, *flags) == 0
        [entry] = json.loads((out / "requests.json").read_text())["judges"]
        shards = [out / f for f in entry["files"]]
        assert len(shards) == len(list(out.glob("*/shard-*.jsonl")))
        assert len(shards) >= N_REQUESTS / (most_lines or 3)
        for k, shard in enumerate(shards):
            assert shard.name == f"shard-{k:05d}-of-{len(shards):05d}.jsonl"
            assert 1 <= len(shard.read_text().splitlines()) <= (most_lines or N_REQUESTS)
            assert shard.stat().st_size <= (most_bytes or 10**9)
        assert sorted(_ids(out)) == sorted(ids)
        assert json.loads(shards[0].read_text().splitlines()[0]).keys() == {"custom_id", "method", "url", "body"}


def test_parts_exported_by_separate_runs_are_imported_together(systems, whole, lfrqa_data_dir, tmp_path, capsys):
    out = tmp_path / "x"
    out.mkdir()
    (out / "requests.json").write_text((whole / "requests.json").read_text())  # an earlier whole export, replaced
    for k in range(3):
        assert _export(systems, lfrqa_data_dir, out, "--export-part", f"{k}/3") == 0
    assert sorted(p.name for p in out.glob("requests*.json")) == [f"requests.part-{k:05d}-of-00003.json"
                                                                   for k in range(3)]
    ids = [i for k in range(3) for i in _ids(out, f"requests.part-{k:05d}-of-00003.json")]
    assert set(ids) == set(_ids(whole))
    assert N_REQUESTS <= len(ids) <= N_REQUESTS + N_QUESTIONS  # the twin's duplicates are removed within a part
    with OpenAIServer(arena_server_reply) as server:
        common = ["--judge", "openai:judge", "--base-url", server.base_url, "--endpoint-name", "pool", "--no-progress",
                  "--api-key", "sk-local",
                  "--cache-dir", str(tmp_path / "cache"), "--data-dir", str(lfrqa_data_dir)]
        outside_runner(sorted(out.glob("*/shard-*.jsonl")), tmp_path / "answers.jsonl")
        assert main(["judge", "--import-results", str(tmp_path / "answers.jsonl"), "--export-dir", str(out),
                     *common]) == 0
        assert main(["tournament", *systems, "--out", str(tmp_path / "runs"), "--sample", str(SAMPLE), *common]) == 0
        assert len(server.requests) == 0
    (out / "requests.part-00001-of-00003.json").unlink()
    capsys.readouterr()
    assert main(["judge", "--import-results", str(tmp_path / "answers.jsonl"), "--export-dir", str(out),
                 *common]) == 2
    assert "missing part(s) 1 of 3" in capsys.readouterr().err


def test_a_whole_export_after_parts_replaces_them_and_bad_settings_are_named(systems, lfrqa_data_dir, tmp_path,
                                                                             capsys):
    out = tmp_path / "x"
    assert _export(systems, lfrqa_data_dir, out, "--export-part", "1/2", "--max-requests-per-file", "4") == 0
    assert _export(systems, lfrqa_data_dir, out) == 0
    assert [p.name for p in out.glob("requests*.json")] == ["requests.json"]
    assert [p.name for p in out.glob("*/shard-*")] == ["shard-00000-of-00001.jsonl"]
    for flags, said in ((["--export-part", "2/2"], "0 <= K < N"), (["--max-requests-per-file", "0"], "positive"),
                        (["--max-bytes-per-file", "100"], "over the 100-byte file limit")):
        capsys.readouterr()
        assert _export(systems, lfrqa_data_dir, tmp_path / "bad", *flags) == 2
        assert said in capsys.readouterr().err
    with pytest.raises(RagQaArenaError, match="part="):
        export_judge_requests([], tmp_path / "y", judge="openai:judge", part=(3, 2))
    with pytest.raises(RagQaArenaError, match="max_requests"):
        FileLimits(max_requests=0)


def test_the_tournament_hands_its_matches_over_one_at_a_time(systems, lfrqa_data_dir):
    matches = tournament_requests(systems, sample=SAMPLE, data_dir=lfrqa_data_dir)
    assert not isinstance(matches, (list, tuple)) and len(next(matches).predictions) == N_QUESTIONS
    assert sum(1 for _ in matches) == len(SYSTEMS) - 1 + 6


@pytest.mark.slow
def test_parts_exported_by_parallel_processes_into_one_folder(systems, whole, lfrqa_data_dir, tmp_path):
    import os
    import subprocess
    import sys

    out = tmp_path / "x"
    argv = ["tournament", *systems, "--judge", "openai:judge", "--base-url", "http://127.0.0.1:9/v1", "--api-key",
            "sk-local", "--endpoint-name", "pool", "--cache-dir", str(tmp_path / "cache"), "--data-dir",
            str(lfrqa_data_dir), "--sample", str(SAMPLE), "--export-requests", str(out), "--max-requests-per-file", "4"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    runs = [subprocess.Popen([sys.executable, "-m", "rag_qa_arena", *argv, "--export-part", f"{k}/3"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for k in range(3)]
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err.decode()
    ids = [i for k in range(3) for i in _ids(out, f"requests.part-{k:05d}-of-00003.json")]
    assert set(ids) == set(_ids(whole))
    assert all(len(f.read_text().splitlines()) <= 4 for f in out.glob("*/shard-*.jsonl"))
    assert not list(out.glob(".export-staging-*"))  # each process cleaned up after itself


def test_a_match_planned_in_chunks_gives_the_requests_of_one_plan(lfrqa_data_dir, tmp_path, monkeypatch):
    import metric_arena.judge._exchange as exchange
    from metric_arena import RunConfig
    from metric_arena.judge import judge_batch_requests

    rows = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    match = dict(predictions=[f"A{i}" for i in range(40)], references=list(rows["answer"][:40]),
                 questions=list(rows["question"][:40]), ids=list(rows["qid"][:40]), sample=7)
    run = RunConfig(cache_dir=tmp_path / "c", base_url="http://127.0.0.1:9/v1", api_key="sk-local")
    monkeypatch.setattr(exchange, "EXPORT_CHUNK", 3)
    done = export_judge_requests([match], tmp_path / "x", judge="openai:judge", run=run, data_dir=lfrqa_data_dir)
    from metric_arena.judge import JudgeInputs

    [plan] = judge_batch_requests(JudgeInputs(**match), judge="openai:judge", run=run,
                                  data_dir=lfrqa_data_dir).values()
    assert sorted(_ids(tmp_path / "x")) == sorted(key for key, _ in plan["requests"]) and done["n_requests"] == 7


def test_an_export_takes_more_systems_than_a_tournament_run_and_refuses_past_its_own_limit(tmp_path, capsys):
    from metric_arena.judge import MAX_EXPORT_SYSTEMS, MAX_TOURNAMENT_SYSTEMS

    assert MAX_EXPORT_SYSTEMS > MAX_TOURNAMENT_SYSTEMS
    files = []
    for i in range(MAX_EXPORT_SYSTEMS + 1):
        files.append(tmp_path / f"s{i}.jsonl")
        files[-1].write_text('{"qid": "x", "answer": "a"}\n' if i else "not json\n")  # never read
    assert main(["tournament", *map(str, files), "--judge", "openai:judge", "--api-key", "sk-local",
                 "--export-requests", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert f"at most {MAX_EXPORT_SYSTEMS} systems (MAX_EXPORT_SYSTEMS), got {MAX_EXPORT_SYSTEMS + 1}" in err
    assert not (tmp_path / "x").exists()
