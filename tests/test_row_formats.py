"""Stages exchange JSON Lines, Parquet and saved ``datasets.Dataset`` folders: ``judge`` and
``generate`` read each of them, through the one reader in ``lfrqa.kernel``."""

from __future__ import annotations

import pytest

from lfrqa.kernel import iter_records
from metric_arena.generate import read_retrieved
from metric_arena.judge import read_predictions
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli, prediction_rows, read_jsonl, retrieved_rows, write_jsonl


def save(rows: list[dict], path, fmt: str):
    """``rows`` written as JSONL, Parquet (under a .jsonl name too: the content decides) or a saved Dataset."""
    if fmt == "jsonl":
        return write_jsonl(path.with_suffix(".jsonl"), rows)
    import datasets

    dataset = datasets.Dataset.from_list(rows)
    if fmt == "parquet":
        dataset.to_parquet(str(path.with_suffix(".parquet")))
        return path.with_suffix(".parquet")
    if fmt == "parquet-named-jsonl":
        dataset.to_parquet(str(path.with_suffix(".jsonl")))
        return path.with_suffix(".jsonl")
    dataset.save_to_disk(str(path))
    return path


FORMATS = ("jsonl", "parquet", "parquet-named-jsonl", "dataset")


@pytest.mark.parametrize("fmt", FORMATS)
def test_predictions_read_the_same_in_every_format(tmp_path, fmt):
    # The failed row first: Dataset.from_list takes its columns from the first row, the others get null there.
    rows = [{"qid": "q3", "question": "q3 asks?", "domain": "fiqa", "answer": "", "failed": True}] + prediction_rows(3)
    expected = read_predictions(save(rows, tmp_path / "ref", "jsonl"))
    assert read_predictions(save(rows, tmp_path / "preds", fmt)) == expected
    assert expected["q3"]["failed"] is True and expected["q0"]["answer"] == "An answer. (0)"


@pytest.mark.parametrize("fmt", FORMATS)
def test_retrieved_rows_read_the_same_in_every_format(tmp_path, fmt):
    rows = retrieved_rows(3, n_passages=2)
    assert read_retrieved(save(rows, tmp_path / "retrieved", fmt)) == read_retrieved(
        save(rows, tmp_path / "ref", "jsonl"))


def test_bad_rows_are_named_by_row_number(tmp_path):
    rows = prediction_rows(2)
    rows[1]["answer"] = None
    with pytest.raises(ValueError, match=r"preds.parquet row 2 \(qid q1\): answer must be a string, got NoneType"):
        read_predictions(save(rows, tmp_path / "preds", "parquet"))
    with pytest.raises(ValueError, match=r"ds row 2 \(qid q1\): answer must be a string"):
        read_predictions(save(rows, tmp_path / "ds", "dataset"))


def test_unreadable_inputs_say_what_is_accepted(tmp_path):
    import datasets

    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 cut short")
    with pytest.raises(ValueError, match=r"broken.parquet: not a readable Parquet file .*give a JSON Lines file, "
                                         r"a Parquet file, or a folder written by datasets' Dataset.save_to_disk"):
        list(iter_records(broken))
    splits = tmp_path / "splits"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(prediction_rows(1))}).save_to_disk(str(splits))
    with pytest.raises(ValueError, match=r"holds a DatasetDict \(splits: test\): give one split's folder .*splits/test"):
        read_predictions(splits)
    assert list(read_predictions(splits / "test")) == ["q0"]
    with pytest.raises(FileNotFoundError, match=r"is a folder, not a file: give a JSONL file .* a Parquet file"):
        read_predictions(tmp_path)


def test_judge_and_generate_commands_take_parquet_and_datasets(tmp_path, capsys):
    retrieved = save(retrieved_rows(3, n_passages=2), tmp_path / "retrieved", "parquet")
    with OpenAIServer(lambda body, attempt: "Answer: yes." if "passage" in body["messages"][-1]["content"]
                      else "<thinking>.</thinking><rating>1</rating>") as server:
        code, _, err = cli(["generate", "--retrieved", retrieved, "--model", "openai:gen", "--out",
                            tmp_path / "a.jsonl", "--base-url", server.base_url, "--cache-dir", tmp_path / "cache"], capsys)
        assert code == 0, err
        answers = read_jsonl(tmp_path / "a.jsonl")
        assert [a["qid"] for a in answers] == ["q0", "q1", "q2"]
        mine = save(answers, tmp_path / "mine", "dataset")
        theirs = save(prediction_rows(3), tmp_path / "theirs", "parquet")
        code, stdout, err = cli(["judge", "--predictions", mine, "--versus", theirs, "--judge", "openai:j",
                                 "--base-url", server.base_url, "--cache-dir", tmp_path / "cache", "--out",
                                 tmp_path / "run", "--no-progress"], capsys)
    assert code == 0, err
    verdicts = read_jsonl(tmp_path / "run" / "verdicts.jsonl")
    assert sorted(v["qid"] for v in verdicts) == ["q0", "q1", "q2"] and all(v["outcome"] for v in verdicts)
    assert "pairs 3" in stdout
