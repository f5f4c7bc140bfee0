"""Inputs cannot corrupt or destroy outputs: no output may replace an input (even with --overwrite),
a torn last line ending inside a multi-byte character does not make `generate` refuse its own file,
a run folder holds the verdicts of one parse, an edited batch manifest cannot reach outside its
folder, an edited LFRQA Arrow cache is rebuilt before use, and bare strings are refused where lists
are expected. Real files under tmp_path, a real local server where anything could be sent."""

from __future__ import annotations

import json
import os

import pytest

from metric_arena import RunConfig, judge_pairs
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import (
    FAKE_KEY,
    cli,
    prediction_rows,
    read_jsonl,
    retrieved_rows,
    write_jsonl,
)
from metric_arena.judge import JudgeInputs

RATED = "<thinking>Scripted.</thinking><rating>1</rating>"


# --------------------------------------------------------------------------------------------
# No output replaces an input
# --------------------------------------------------------------------------------------------
def test_generate_never_writes_its_answers_over_the_retrieval_file(tmp_path, capsys):
    retrieved = write_jsonl(tmp_path / "r.jsonl", retrieved_rows(3))
    before = retrieved.read_bytes()
    os.link(retrieved, tmp_path / "hard.jsonl")
    with OpenAIServer() as server:
        for out in (retrieved, tmp_path / "." / "r.jsonl", tmp_path / "hard.jsonl"):
            code, _, err = cli(["generate", "--retrieved", retrieved, "--model", "openai:m", "--base-url",
                                server.base_url, "--api-key", FAKE_KEY, "--out", out, "--overwrite", "--no-progress",
                                "--cache-dir", tmp_path / "cache"], capsys)
            assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
            assert "would write over the input --retrieved" in err and "even with --overwrite" in err
        assert server.requests == []
    assert retrieved.read_bytes() == before


def test_judge_report_tournament_and_retrieve_refuse_an_output_over_an_input(tmp_path, capsys):
    run = tmp_path / "runs" / "x"
    preds = write_jsonl(run / "verdicts.jsonl", prediction_rows(3))  # a prediction file where verdicts go
    other = write_jsonl(tmp_path / "other.jsonl", prediction_rows(3, answer="Other"))
    before = preds.read_bytes()
    nowhere = ["--base-url", "http://127.0.0.1:9/v1", "--api-key", FAKE_KEY, "--judge", "openai:j"]
    for argv in (
        ["judge", "--predictions", preds, "--versus", other, "--out", run, "--overwrite", *nowhere],
        ["judge", "--predictions", other, "--versus", preds, "--out", run, *nowhere],
        ["tournament", preds, other, "--out", tmp_path / "runs", *nowhere],
        ["report", run, "--out", tmp_path / "lb", "--battles", preds],
        ["push", run, "--repo", "org/x", "--dry-run", run],
        ["retrieve", "--domain", "writing", "--retriever", "bm25", "--questions", other, "--out", other],
    ):
        code, _, err = cli(argv, capsys)
        assert code == 2 and err.count("\n") == 1 and "would write over the input" in err, (argv[0], err)
    assert preds.read_bytes() == before and other.read_bytes() == write_jsonl(
        tmp_path / "again.jsonl", prediction_rows(3, answer="Other")).read_bytes()


def test_report_battles_never_overwrite_a_runs_verdicts(tmp_path, capsys):
    with OpenAIServer(lambda body, attempt: RATED) as server:
        preds = write_jsonl(tmp_path / "a.jsonl", prediction_rows(4))
        other = write_jsonl(tmp_path / "b.jsonl", prediction_rows(4, answer="B"))
        code, _, _ = cli(["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--base-url",
                          server.base_url, "--api-key", FAKE_KEY, "--out", tmp_path / "runs" / "x", "--cache-dir",
                          tmp_path / "cache", "--no-progress"], capsys)
        assert code == 0
    verdicts = tmp_path / "runs" / "x" / "verdicts.jsonl"
    before = verdicts.read_bytes()
    code, _, err = cli(["report", tmp_path / "runs" / "x", "--out", tmp_path / "lb", "--no-plots", "--battles",
                        verdicts], capsys)
    assert code == 2 and "--battles" in err and "would write over the input RUN_DIR" in err
    assert verdicts.read_bytes() == before and not (tmp_path / "lb").exists()


# --------------------------------------------------------------------------------------------
# A torn last line after a full disk
# --------------------------------------------------------------------------------------------
def test_generate_resumes_a_file_whose_last_line_ends_inside_a_multibyte_character(tmp_path, capsys):
    retrieved = write_jsonl(tmp_path / "r.jsonl", retrieved_rows(4))
    out = tmp_path / "answers.jsonl"
    argv = ["generate", "--retrieved", retrieved, "--model", "openai:m", "--out", out, "--no-progress",
            "--cache-dir", tmp_path / "cache", "--api-key", FAKE_KEY]
    with OpenAIServer(lambda body, attempt: "Réponse — 答え ✓") as server:
        assert cli([*argv, "--base-url", server.base_url], capsys)[0] == 0
        lines = out.read_bytes().splitlines(keepends=True)
        torn = lines[-1][: lines[-1].index("答".encode()) + 1]  # cut inside the 3-byte character
        out.write_bytes(b"".join(lines[:-1]) + torn)
        with pytest.raises(UnicodeDecodeError):
            out.read_bytes().decode("utf-8")
        code, printed, err = cli([*argv, "--base-url", server.base_url], capsys)
    assert code == 0, err
    assert "resumed 3" in printed
    rows = read_jsonl(out)
    assert len(rows) == 4 and all(r["answer"] == "Réponse — 答え ✓" and not r["failed"] for r in rows)


def test_generate_still_refuses_a_file_that_is_not_utf8_before_its_last_line(tmp_path, capsys):
    retrieved = write_jsonl(tmp_path / "r.jsonl", retrieved_rows(2))
    out = tmp_path / "answers.jsonl"
    out.write_bytes(b'{"qid": "q0", "answer": "\xe7\xad"}\n{"qid": "q1"}\n')
    code, _, err = cli(["generate", "--retrieved", retrieved, "--model", "openai:m", "--out", out,
                        "--base-url", "http://127.0.0.1:9/v1", "--api-key", FAKE_KEY, "--no-progress",
                        "--cache-dir", tmp_path / "cache"], capsys)
    assert code == 2 and "line 1: not UTF-8" in err


def test_report_reads_a_run_whose_last_verdict_ends_inside_a_multibyte_character(tmp_path, capsys):
    rows = [{"qid": f"q{i}", "domain": "fiqa", "system_a": "sys", "system_b": "LFRQA", "outcome": "win",
             "judgments": [], "note": "答え"} for i in range(12)]
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    torn = data[: data.rindex("答".encode()) + 1]  # a killed judge, a full disk: cut inside the character
    (tmp_path / "runs" / "sys").mkdir(parents=True)
    (tmp_path / "runs" / "sys" / "verdicts.jsonl").write_bytes(torn)
    code, _, err = cli(["report", tmp_path / "runs" / "sys", "--out", tmp_path / "lb", "--no-plots"], capsys)
    assert code == 0, err
    assert "torn last line skipped" in err
    assert json.loads((tmp_path / "lb" / "leaderboard.json").read_text())[0]["n"] == 11


# --------------------------------------------------------------------------------------------
# A run folder holds one parse
# --------------------------------------------------------------------------------------------
def test_changing_parse_on_a_run_folder_is_refused_unless_overwrite(tmp_path, capsys):
    preds = write_jsonl(tmp_path / "a.jsonl", prediction_rows(5))
    other = write_jsonl(tmp_path / "b.jsonl", prediction_rows(5, answer="B"))
    out = tmp_path / "run"
    with OpenAIServer(lambda body, attempt: RATED) as server:
        argv = ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--base-url",
                server.base_url, "--api-key", FAKE_KEY, "--out", out, "--cache-dir", tmp_path / "cache",
                "--no-progress"]
        assert cli(argv, capsys)[0] == 0
        summary = (out / "summary.json").read_bytes()
        code, _, err = cli([*argv, "--parse", "reference"], capsys)
        assert code == 2 and "parse 'strict' there, 'reference' now" in err and "--overwrite" in err
        assert (out / "summary.json").read_bytes() == summary
        # An unfinished run (no summary yet) tells its parse by its verdicts.
        (out / "summary.json").unlink()
        code, _, err = cli([*argv, "--parse", "reference"], capsys)
        assert code == 2 and "parse 'strict' there" in err
        assert cli([*argv, "--parse", "reference", "--overwrite"], capsys)[0] == 0
    assert json.loads((out / "summary.json").read_text())["parse"] == "reference"
    assert all("outcome_strict" in row for row in read_jsonl(out / "verdicts.jsonl"))


# --------------------------------------------------------------------------------------------
# Batch manifests stay inside their folder
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../victim.txt", "ABSOLUTE", "..", "sub/../../victim.txt"])
def test_an_edited_batch_manifest_cannot_delete_or_read_outside_its_folder(tmp_path, name):
    from metric_arena.llm.batch import MANIFEST, read_manifest, write_batch_files

    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    folder = tmp_path / "a" / "batch"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    write_batch_files([("id-1", body)], folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"][0]["name"] = str(victim) if name == "ABSOLUTE" else name
    (folder / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ValueError, match="not a plain name inside the batch folder"):
        read_manifest(folder)
    with pytest.raises(ValueError, match="not a plain name inside the batch folder"):
        write_batch_files([("id-2", body)], folder)  # rewriting the folder deletes the old files it lists
    assert victim.read_text(encoding="utf-8") == "precious"


def test_an_edited_judge_batch_plan_cannot_point_outside_its_folder(tmp_path, capsys):
    from metric_arena.judge import judge_batch_status
    from metric_arena.judge._batch import PLAN_FILE

    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / PLAN_FILE).write_text(json.dumps({"format": "rag-qa-arena/judge-batch", "version": 1, "judges": [
        {"judge": "openai:j", "folder": "../../etc"}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="'../../etc', which is not a plain name"):
        judge_batch_status(folder, client=object())
    code, _, err = cli(["judge", "--batch-status", folder, "--judge", "openai:j", "--api-key", FAKE_KEY], capsys)
    assert code == 2 and err.count("\n") == 1 and "not a plain name inside the batch folder" in err


# --------------------------------------------------------------------------------------------
# The LFRQA Arrow cache is verified before use
# --------------------------------------------------------------------------------------------
def test_an_edited_lfrqa_arrow_cache_is_rebuilt_not_served(tmp_path, lfrqa_data_dir):
    import lfrqa

    first = lfrqa.load("science", cache_dir=tmp_path / "hf")
    question = first[0]["question"]
    word = max(question.split(), key=len).encode()
    (arrow,) = list((tmp_path / "hf").rglob("*.arrow"))
    data = arrow.read_bytes()
    start = data.index(word)
    arrow.write_bytes(data[:start] + b"X" * len(word) + data[start + len(word):])  # same size, other text
    again = lfrqa.load("science", cache_dir=tmp_path / "hf")
    assert again[0]["question"] == question
    assert again.num_rows == first.num_rows


# --------------------------------------------------------------------------------------------
# Bare strings where lists are expected
# --------------------------------------------------------------------------------------------
def test_bare_strings_are_refused_not_judged_character_by_character(tmp_path):
    import evaluate

    import metric_arena

    arena = evaluate.load(metric_arena.METRIC_PATH)
    with OpenAIServer(lambda body, attempt: RATED) as server:
        run = RunConfig(base_url=server.base_url, api_key=FAKE_KEY, cache_dir=tmp_path)
        with pytest.raises(ValueError, match=r"predictions is one string \('Paris.'\), not a list"):
            arena.compute(predictions="Paris.", references=["Paris is the capital."], questions=["Capital?"], run=run)
        with pytest.raises(ValueError, match=r"questions is one string"):
            arena.compute(predictions=["Paris."], references=["Paris is."], questions="Capital?", run=run)
        with pytest.raises(ValueError, match=r"references is one str \('Paris is.'\), not a list"):
            judge_pairs(JudgeInputs(predictions=["Paris."], references="Paris is.", questions=["Capital?"]), run=run)
        with pytest.raises(ValueError, match=r"ids is one str"):
            judge_pairs(JudgeInputs(predictions=["Paris."], references=["Paris is."], questions=["Capital?"],
                                    ids="q1"), run=run)
        assert server.requests == []
