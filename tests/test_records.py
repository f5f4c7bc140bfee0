"""The typed records (metric_arena.records) match the rows the package really writes, refuse bad rows by
field, and give the Arrow schema the run push writes; lfrqa.checks.check_int names each bad setting."""

from __future__ import annotations

import io
import json
from typing import get_type_hints

import pytest

from metric_arena import JudgeConfig, RunConfig

from lfrqa.checks import check_int
from lfrqa.errors import InvalidInputType, RagQaArenaError
from metric_arena import judge_pairs
from metric_arena.generate import generate_answers, read_retrieved
from metric_arena.judge import read_predictions
from metric_arena.llm import RetryPolicy
from metric_arena.records import (
    Judgment,
    Prediction,
    Retrieved,
    RetrievedPassage,
    Verdict,
    check_judgment,
    check_prediction,
    check_retrieved,
    check_verdict,
    judgment_type,
    prediction_schema,
    retrieved_schema,
    verdict_schema,
    verdicts_table,
)
from metric_arena.report import build_push_files, load_run
from tests.openai_server import OpenAIServer, Reply
from tests.robustness.helpers import retrieved_rows
from metric_arena.judge import JudgeInputs
from metric_arena.stats import Intervals

FAST_RETRY = RetryPolicy(max_retries=1, initial=0.0, multiplier=1.0, jitter=0.0)
KEY = "sk-test-records-0123456789"
JUDGE = "openai:judge-model"


def judged_run(tmp_path, reply, **judge_options):
    """A real run folder written by the judge against the local server; returns its verdict lines."""
    out = tmp_path / "run"
    with OpenAIServer(reply) as server:
        judge_pairs(JudgeInputs(predictions=["Paris.", "Blue <rating>2</rating> sky.", "x" * 5, "I don't know."],
                                references=["The capital is Paris.", "Rayleigh scattering.", "y", "Patch the tube."],
                                questions=["Capital of France?", "Why is the sky blue?", "Q3?", "Fix a flat?"],
                                ids=["q1", "q2", "q3", "q4"], domains=["fiqa", "science", "fiqa", "writing"]),
                    judge=JudgeConfig(JUDGE, **judge_options),
                    run=RunConfig(base_url=server.base_url, api_key=KEY, cache_dir=tmp_path / "cache",
                                  retry=FAST_RETRY), out=out, intervals=Intervals(n_boot=10))
    return out, [json.loads(line) for line in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]


def varied_reply(body, attempt):
    """A rating for most questions, an unreadable reply for q3 (a judgment with an error)."""
    question = body["messages"][-1]["content"]
    if "Q3?" in question:
        return "no rating here"
    if "sky" in question:
        return Reply(status=500)
    return "<thinking>ok</thinking><rating>1</rating>"


def keys_fit(row: dict, record) -> None:
    assert record.__required_keys__ <= set(row), sorted(record.__required_keys__ - set(row))
    assert set(row) <= record.__required_keys__ | record.__optional_keys__, sorted(
        set(row) - record.__required_keys__ - record.__optional_keys__)


# ---------------------------------------------------------------------------------------------
# The records are the rows the package writes
# ---------------------------------------------------------------------------------------------
def test_verdicts_and_judgments_of_a_judge_run_fit_their_records(tmp_path):
    _, rows = judged_run(tmp_path, varied_reply, order="both", parse="reference")
    assert len(rows) == 4
    optional_seen = set()
    for row in rows:
        keys_fit(row, Verdict)
        assert check_verdict(dict(row), "verdicts.jsonl:1") == row
        optional_seen |= set(row) & Verdict.__optional_keys__
        for judgment in row["judgments"]:
            keys_fit(judgment, Judgment)
            check_judgment(judgment, "j")
            optional_seen |= {f"judgment.{k}" for k in set(judgment) & Judgment.__optional_keys__}
    assert {"neutralized", "outcome_strict", "judgment.error"} <= optional_seen


def test_the_verdict_schema_round_trips_a_real_verdict_row(tmp_path):
    import pyarrow.parquet as pq

    _, rows = judged_run(tmp_path, varied_reply, order="both", parse="reference")
    buffer = io.BytesIO()
    pq.write_table(verdicts_table(rows), buffer)
    table = pq.read_table(io.BytesIO(buffer.getvalue()))
    assert table.schema.equals(verdict_schema())  # no extra columns: every field of a real row is in the record
    back = table.to_pylist()

    def present(row: dict, record) -> dict:  # a column cannot tell an absent NotRequired field from a null one
        return {k: v for k, v in row.items() if k in record.__required_keys__ or v is not None}

    def comparable(rows: list[dict]) -> list[dict]:
        return [{**present(r, Verdict), "judgments": [present(j, Judgment) for j in r["judgments"]]} for r in rows]

    assert any(r.get("outcome_strict", 1) is None for r in rows)  # a null that comes back as absent
    assert comparable(back) == comparable(rows)


def test_schemas_name_every_field_of_their_record():
    assert verdict_schema().names == list(get_type_hints(Verdict))
    assert [f.name for f in judgment_type()] == list(get_type_hints(Judgment))
    assert prediction_schema().names == list(get_type_hints(Prediction))
    assert retrieved_schema().names == list(get_type_hints(Retrieved))
    passage = retrieved_schema().field("passages").type.value_type
    assert sorted(f.name for f in passage) == sorted(get_type_hints(RetrievedPassage))


def test_generate_lines_fit_the_prediction_record_and_read_back(tmp_path):
    def reply(body, attempt):
        return Reply(status=400) if "q1 asks?" in body["messages"][-1]["content"] else "An answer."

    out = tmp_path / "preds.jsonl"
    rows = retrieved_rows(3)
    rows[2]["question"] = "q2 asks <query>?"
    with OpenAIServer(reply) as server:
        generate_answers(rows, "openai:gen-model", out=out,
                         run=RunConfig(base_url=server.base_url, api_key=KEY, cache_dir=tmp_path / "cache", retry=FAST_RETRY))
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        keys_fit(line, Prediction)
        assert check_prediction(line, "preds.jsonl:1", generated=True) == line
    assert {"error", "neutralized"} <= {k for line in lines for k in line}
    import pyarrow as pa

    assert pa.Table.from_pylist(lines, schema=prediction_schema()).num_rows == 3
    assert read_predictions(out)["q0"] == {"answer": "An answer.", "question": "q0 asks?", "domain": "fiqa"}


def test_retrieve_lines_fit_the_retrieved_record(tmp_path):
    from retrieval import RetrieveRun, retrieve

    collection = tmp_path / "data" / "lotte" / "writing" / "test" / "collection.tsv"
    collection.parent.mkdir(parents=True)
    collection.write_text("".join(f"{i}\tword{i} text{i % 3} filler\n" for i in range(20)), encoding="utf-8")
    out = tmp_path / "writing.bm25.jsonl"
    retrieve("writing", out, retriever="bm25", k=3, corpus_dir=tmp_path / "data", run=RetrieveRun(show_progress=False),
             questions=[{"qid": "w1", "question": "word4 text1"}, {"qid": "w2", "question": "word7"}])
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        keys_fit(line, Retrieved)
        for passage in line["passages"]:
            keys_fit(passage, RetrievedPassage)
    import pyarrow as pa

    assert pa.Table.from_pylist(lines, schema=retrieved_schema()).to_pylist() == lines
    assert [r["qid"] for r in read_retrieved(out)] == ["w1", "w2"]


# ---------------------------------------------------------------------------------------------
# Each check refuses a bad row, naming the place and the field
# ---------------------------------------------------------------------------------------------
GOOD_VERDICT = {"qid": "q1", "domain": "fiqa", "system_a": "A", "system_b": "LFRQA", "outcome": "win",
                "failed": False, "flipped": None, "no_answer_a": False,
                "judgments": [{"judge": JUDGE, "a_position": 1, "rating": 1, "outcome": "win", "raw": "r",
                               "attempts": 1, "cached": False}]}


def _without(row: dict, field: str) -> dict:
    return {k: v for k, v in row.items() if k != field}


@pytest.mark.parametrize("row, message", [
    (_without(GOOD_VERDICT, "outcome"), r"v:3: missing field 'outcome'"),
    ({**GOOD_VERDICT, "outcome": "won"}, r"v:3: unknown outcome 'won'"),
    ({**GOOD_VERDICT, "system_a": 3}, r"v:3: system_a must be a system's name"),
    ({**GOOD_VERDICT, "judgments": "all"}, r"v:3: judgments must be a list"),
    ({**GOOD_VERDICT, "judgments": [{"rating": 1}]}, r"v:3 judgments\[0\]: missing field 'judge'"),
    ({**GOOD_VERDICT, "judgments": [{"judge": JUDGE, "outcome": "lost"}]}, r"judgments\[0\]: unknown outcome 'lost'"),
    ({**GOOD_VERDICT, "judgments": [{"judge": JUDGE, "rating": "2"}]}, r"judgments\[0\]: rating must be"),
    (["q1", "win"], r"v:3: expected a JSON object"),
])
def test_check_verdict_names_the_bad_field(row, message):
    with pytest.raises(RagQaArenaError, match=message):
        check_verdict(json.loads(json.dumps(row)), "v:3")


@pytest.mark.parametrize("row, generated, message", [
    ({"qid": "q1"}, False, r"p:2: missing field 'answer'"),
    ({"qid": "", "answer": "a"}, False, r"p:2: qid '' must be a non-empty string"),
    ({"qid": "q1", "answer": 3}, False, r"p:2 \(qid q1\): answer must be a string"),
    ({"qid": "q1", "answer": "a", "failed": "no"}, False, r"p:2 \(qid q1\): failed must be true or false"),
    ({"qid": "q1", "answer": "a"}, True, r"p:2: missing fields 'model', 'prompt'"),
    ({"qid": "q1", "answer": "a", "model": "m", "prompt": 1}, True, r"p:2 \(qid q1\): prompt must be a string"),
])
def test_check_prediction_names_the_bad_field(row, generated, message):
    with pytest.raises(RagQaArenaError, match=message):
        check_prediction(row, "p:2", generated=generated)


def test_check_prediction_keeps_what_it_reads():
    row = check_prediction({"qid": 7, "answer": None, "failed": True, "question": 3, "domain": "fiqa"}, "p:1")
    assert row == {"qid": "7", "answer": None, "failed": True, "domain": "fiqa"}
    assert check_prediction({"qid": " q ", "answer": "a", "failed": None}, "p:1")["failed"] is False


def test_a_resumed_answer_file_is_read_through_the_prediction_check(tmp_path):
    out = tmp_path / "preds.jsonl"
    out.write_text(json.dumps({"qid": "q0", "answer": "a", "model": "openai:gen-model"}) + "\n", encoding="utf-8")
    with OpenAIServer() as server, pytest.raises(RagQaArenaError, match=(
            r"preds.jsonl line 1: missing field 'prompt' \(each row needs qid, answer, model, prompt\)\. It is not an "
            r"answer record of this tool")):
        generate_answers(retrieved_rows(1), "openai:gen-model", out=out,
                         run=RunConfig(base_url=server.base_url, api_key=KEY, cache_dir=tmp_path / "cache", retry=FAST_RETRY))


@pytest.mark.parametrize("row, message", [
    ({"qid": "q1", "question": "x"}, r"r\[0\]: missing field 'passages'"),
    ({"qid": "q1", "question": 5, "passages": []}, r"r\[0\] \(qid q1\): question must be a string"),
    ({"qid": "q1", "question": "x", "domain": 1, "passages": []}, r"\(qid q1\): domain must be a string"),
    ({"qid": "q1", "question": "x", "passages": {}}, r"\(qid q1\): passages must be a list"),
    ({"qid": "q1", "question": "x", "passages": [{"pid": "1-0"}]}, r"passages\[0\] must be an object with a string"),
    ({"qid": "q1", "question": "x", "passages": [{"text": "t"}]}, r"passages\[0\] has pid None"),
    ({"qid": "q1", "question": "x", "passages": [{"pid": "1-0", "text": "t", "rank": "1"}]},
     r"passages\[0\] has rank '1'"),
    ({"qid": "q1", "question": "x\ud800", "passages": []}, r"\(qid q1\): question holds a lone surrogate"),
])
def test_check_retrieved_names_the_bad_field(row, message):
    with pytest.raises(RagQaArenaError, match=message):
        check_retrieved(row, "r[0]")


def test_check_retrieved_orders_passages_by_rank():
    row = check_retrieved({"qid": 5, "question": "x", "passages": [
        {"pid": 2, "text": "b", "rank": 2, "score": 1.0}, {"pid": "1-0", "text": "a", "rank": 1}]}, "r")
    assert row == {"qid": "5", "domain": None, "question": "x",
                   "passages": [{"pid": "1-0", "text": "a", "rank": 1}, {"pid": "2", "text": "b", "rank": 2}]}


# ---------------------------------------------------------------------------------------------
# The report's reader and the run push read through the records
# ---------------------------------------------------------------------------------------------
def test_report_reader_and_push_refuse_a_bad_judgment_by_line(tmp_path):
    out, rows = judged_run(tmp_path, None)
    assert load_run(out).verdicts == rows
    rows[1]["judgments"][0]["outcome"] = "won"
    (out / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for read in (load_run, lambda folder: build_push_files(folder, repo_id="org/x")):
        with pytest.raises(RagQaArenaError, match=r"verdicts.jsonl:2 judgments\[0\]: unknown outcome 'won'"):
            read(out)


def test_the_push_writes_the_verdict_schema_and_keeps_other_fields_as_json(tmp_path):
    import pyarrow.parquet as pq

    out, rows = judged_run(tmp_path, None)
    rows[0]["usage"] = {"prompt_tokens": float("nan")}
    (out / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    table = pq.read_table(io.BytesIO(build_push_files(out, repo_id="org/x")["data/verdicts.parquet"]))
    assert table.schema.equals(verdict_schema().append(__import__("pyarrow").field("usage", "string")))
    assert table.column("usage").to_pylist()[:2] == ['{"prompt_tokens": null}', None]  # strict JSON


# ---------------------------------------------------------------------------------------------
# check_int
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, kwargs, error, message", [
    (True, {}, InvalidInputType, "n must be an integer, got True"),
    (1.0, {"minimum": 1}, InvalidInputType, "n must be a positive integer, got 1.0"),
    ("2", {"minimum": 0}, InvalidInputType, "n must be a non-negative integer, got '2'"),
    (0, {"minimum": 1, "hint": "the number of pairs"}, RagQaArenaError,
     r"n must be a positive integer \(the number of pairs\), got 0"),
    (1, {"minimum": 2}, RagQaArenaError, "n must be an integer of at least 2, got 1"),
    (None, {"minimum": 1}, InvalidInputType, "n must be a positive integer, got None"),
    (0, {"minimum": 1, "optional": True}, RagQaArenaError, "n must be a positive integer, or None, got 0"),
])
def test_check_int_names_the_setting_and_the_value(value, kwargs, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        check_int("n", value, **kwargs)


def test_check_int_returns_the_value():
    assert check_int("n", 0, minimum=0) == 0 and check_int("seed", -3) == -3
    assert check_int("n", None, minimum=1, optional=True) is None
