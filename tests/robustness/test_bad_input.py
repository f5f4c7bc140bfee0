"""Bad input, table-driven: every public entry point (the evaluate metric, judge_pairs, the judge
and generate commands and API, lfrqa.load, the retrieve and report commands) rejects it with a
message that names the bad value and says what to do; commands exit with code 2 and print no
traceback. An empty answer is legal and is judged; a prompt over --max-input-tokens is refused
(not truncated) and its item is failed with the reason."""

from __future__ import annotations

import dataclasses
import functools
import json
import re

import pytest

from metric_arena import DEFAULT_JUDGE, JudgeConfig, RunConfig, judge_pairs
from metric_arena.generate import GenerationConfig, generate_answers
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli, query_of, read_jsonl, retrieved_rows
from metric_arena.judge import JudgeInputs

INPUT_FIELDS = {field.name for field in dataclasses.fields(JudgeInputs)}  # a call's keywords that go into JudgeInputs

NOWHERE = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}  # never reached: input is checked first


def _nowhere(tmp) -> RunConfig:
    return RunConfig(cache_dir=tmp, **NOWHERE)


# --------------------------------------------------------------------------------------------
# Python entry points
# --------------------------------------------------------------------------------------------
def _judge(judge_options=None, **kwargs):
    """judge_pairs on these inputs; ``judge_options`` go into the JudgeConfig, built inside the call."""
    args = {"predictions": ["a"], "references": ["b"], "questions": ["q"]}
    args.update(kwargs)

    def call(tmp):
        if judge_options is not None:
            args["judge"] = JudgeConfig(args.get("judge", DEFAULT_JUDGE), **judge_options)
        inputs = JudgeInputs(**{name: args.pop(name) for name in list(args) if name in INPUT_FIELDS})
        return judge_pairs(inputs, run=_nowhere(tmp), **args)

    return call


def _metric(judge_options=None, **kwargs):
    args = {"predictions": ["a"], "references": ["b"], "questions": ["q"]}
    args.update(kwargs)

    def call(tmp):
        if judge_options is not None:
            args["judge"] = JudgeConfig(args.get("judge", DEFAULT_JUDGE), **judge_options)
        return _arena().compute(**args, run=RunConfig(cache_dir=str(tmp), **NOWHERE))

    return call


@functools.lru_cache(maxsize=1)
def _arena():
    import evaluate

    import metric_arena

    return evaluate.load(metric_arena.METRIC_PATH)


def _generate(rows=None, generation_options=None, **kwargs):
    """generate_answers on ``rows``; ``generation_options`` go into the GenerationConfig, built inside the call."""
    rows = retrieved_rows(1) if rows is None else rows

    def call(tmp):
        if generation_options is not None:
            kwargs["generation"] = GenerationConfig(**generation_options)
        return generate_answers(rows, kwargs.pop("model", "openai:m"), run=_nowhere(tmp), **kwargs)

    return call


def _load(*args):
    def call(tmp):
        import lfrqa

        return lfrqa.load(*args)

    return call


def _row(**changes):
    row = retrieved_rows(1)[0]
    row.update(changes)
    return row


API_CASES = [
    # evaluate metric
    ("metric: lengths", _metric(references=["b", "c"]), ValueError, r"predictions \(1\) and references \(2\)"),
    ("metric: None answer", _metric(predictions=[None]), ValueError, r"predictions.*\[None\]"),
    ("metric: duplicate ids", _metric(predictions=["a", "b"], references=["c", "d"], questions=["q", "r"],
                                      ids=["x", "x"]), ValueError, "Duplicate id 'x'"),
    ("metric: order", _metric(judge_options={"order": "sideways"}), ValueError,
     "Unknown order policy 'sideways'.*paper, random, both"),
    ("metric: backend", _metric(judge="claude:x"), ValueError, "Unknown backend 'claude'.*openai, hf, vllm"),
    # judge_pairs
    ("judge_pairs: lengths", _judge(questions=["q", "r"]), ValueError, "questions has 2 entries but predictions has 1"),
    ("judge_pairs: None answer", _judge(predictions=[None]), TypeError, r"predictions\[0\] is NoneType.*empty answer"),
    ("judge_pairs: number answer", _judge(references=[3]), TypeError, r"references\[0\] is int \(3\)"),
    ("judge_pairs: duplicate ids", _judge(predictions=["a", "b"], references=["c", "d"], questions=["q", "r"],
                                          ids=["x", "x"]), ValueError, "Duplicate id 'x' at positions 0 and 1"),
    ("judge_pairs: non-string id", _judge(ids=[7]), TypeError, r"ids\[0\] is 7"),
    ("judge_pairs: domains length", _judge(domains=["fiqa", "fiqa"]), ValueError, "domains has 2 entries"),
    ("judge_pairs: order", _judge(judge_options={"order": "first"}), ValueError, "Unknown order policy 'first'"),
    ("judge_pairs: spec", _judge(judge="gpt-4o"), ValueError, r"'gpt-4o'.*'<backend>:<model>'"),
    ("judge_pairs: backend", _judge(judge="anthropic:claude"), ValueError, "Unknown backend 'anthropic'"),
    ("judge_pairs: same judge twice", _judge(judge=["openai:a", "openai:a"]), ValueError, "'openai:a' is given twice"),
    ("judge_pairs: failed flags", _judge(generation_failed=[True, False]), ValueError, "generation_failed has 2"),
    ("judge_pairs: budget", _judge(judge_options={"max_input_tokens": 0}), ValueError,
     r"JudgeConfig\(max_input_tokens\) must be a positive integer, got 0"),
    # generate_answers
    ("generate: empty", _generate(rows=[]), ValueError, "No retrieved rows given"),
    ("generate: one dict", _generate(rows={"qid": "q"}), TypeError, "not one dict: wrap it in a list"),
    ("generate: duplicate qid", _generate(rows=retrieved_rows(1) * 2), ValueError,
     r"retrieved\[1\]: qid 'q0' appears twice \(also at retrieved\[0\]\)"),
    ("generate: None question", _generate(rows=[_row(question=None)]), ValueError,
     r"retrieved\[0\] \(qid q0\): question must be a string, got NoneType"),
    ("generate: passages", _generate(rows=[_row(passages="text")]), ValueError, "passages must be a list"),
    ("generate: passage text", _generate(rows=[_row(passages=[{"pid": "p", "text": None}])]), ValueError,
     r"passages\[0\] must be an object with a string 'text'"),
    ("generate: missing field", _generate(rows=[{"qid": "q", "question": "x"}]), ValueError, "missing field 'passages'"),
    ("generate: prompt", _generate(generation_options={"prompt": "v3"}), ValueError,
     "Unknown prompt version 'v3'. Available: v1, v2"),
    ("generate: n_passages", _generate(generation_options={"n_passages": 0}), ValueError,
     r"GenerationConfig\(n_passages\) must be a positive integer, got 0"),
    ("generate: backend", _generate(model="gemini:pro"), ValueError, "Unknown backend 'gemini'"),
    ("generate: budget", _generate(generation_options={"max_input_tokens": -5}), ValueError,
     r"GenerationConfig\(max_input_tokens\) must be a positive integer, got -5"),
    # lfrqa.load
    ("lfrqa.load: domain", _load("medicine"), ValueError, "Unknown LFRQA config 'medicine'. Available: bioasq, fiqa"),
    ("lfrqa.load: split", _load("fiqa", "train"), ValueError, "Unknown split 'train'. Available: test, dev"),
]


@pytest.mark.parametrize("call, error, match", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_python_entry_points_name_the_bad_value(tmp_path, call, error, match):
    with pytest.raises(error, match=match):
        call(tmp_path)


# --------------------------------------------------------------------------------------------
# Commands (in this process: exit code and stderr)
# --------------------------------------------------------------------------------------------
GOOD_PRED = '{"qid": "q0", "question": "q0 asks?", "answer": "A"}\n'
GOOD_RETRIEVED = json.dumps(retrieved_rows(1)[0]) + "\n"


def judge_with(predictions: str | bytes, *extra: str, versus: str | None = GOOD_PRED):
    def argv(tmp):
        path = tmp / "preds.jsonl"
        path.write_bytes(predictions if isinstance(predictions, bytes) else predictions.encode())
        args = ["judge", "--predictions", path, "--judge", "openai:j", "--out", tmp / "run", "--cache-dir",
                tmp / "cache", "--base-url", NOWHERE["base_url"]]
        if versus is not None:
            (tmp / "other.jsonl").write_text(versus)
            args += ["--versus", tmp / "other.jsonl"]
        return args + list(extra)

    return argv


def generate_with(retrieved: str | bytes, *extra: str):
    def argv(tmp):
        path = tmp / "retrieved.jsonl"
        path.write_bytes(retrieved if isinstance(retrieved, bytes) else retrieved.encode())
        return ["generate", "--retrieved", path, "--model", "openai:m", "--out", tmp / "preds.jsonl", "--cache-dir",
                tmp / "cache", "--base-url", NOWHERE["base_url"], *extra]

    return argv


def plain(*args: str):
    return lambda tmp: [a.replace("TMP", str(tmp)) for a in args]


def report_with(verdicts: bytes | None, summary: bytes | None = None):
    def argv(tmp):
        run = tmp / "runs" / "sys"
        run.mkdir(parents=True)
        if verdicts is not None:
            (run / "verdicts.jsonl").write_bytes(verdicts)
        if summary is not None:
            (run / "summary.json").write_bytes(summary)
        return ["report", run, "--out", tmp / "lb", "--no-plots"]

    return argv


def retrieve_with(questions: bytes, *extra: str):
    def argv(tmp):
        (tmp / "q.jsonl").write_bytes(questions)
        return ["retrieve", "--domain", "fiqa", "--retriever", "bm25", "--out", tmp / "r.jsonl", "--questions",
                tmp / "q.jsonl", "--data-dir", tmp, *extra]

    return argv


VERDICT = json.dumps({"qid": "1", "domain": "fiqa", "system_a": "sys", "system_b": "LFRQA", "outcome": "win",
                      "failed": False, "flipped": None, "no_answer_a": False, "judgments": []})

CLI_CASES = [
    # judge
    ("judge: empty file", judge_with(""), "holds no predictions"),
    ("judge: bad JSON line", judge_with(GOOD_PRED + "{oops\n"), r"preds.jsonl line 2: not valid JSON"),
    ("judge: not UTF-8", judge_with(GOOD_PRED.encode() + b'{"qid": "q1", "answer": "\xff"}\n'),
     "preds.jsonl line 2: not UTF-8 text.*Save the file as UTF-8"),
    ("judge: duplicate qid", judge_with(GOOD_PRED * 2), "line 2: qid 'q0' appears twice"),
    ("judge: null answer", judge_with('{"qid": "q0", "answer": null}\n'),
     r"line 1 \(qid q0\): answer must be a string, got NoneType.*write \"\" for an empty answer"),
    ("judge: number answer", judge_with('{"qid": "q0", "answer": 42}\n'), "answer must be a string, got int"),
    ("judge: failed flag", judge_with('{"qid": "q0", "answer": "x", "failed": "yes"}\n'),
     "failed must be true or false, got 'yes'"),
    ("judge: missing answer", judge_with('{"qid": "q0"}\n'), "line 1: missing field 'answer'"),
    ("judge: not an object", judge_with('["q0", "A"]\n'), "line 1: expected a JSON object, got list"),
    ("judge: no shared qid", judge_with(GOOD_PRED, versus='{"qid": "other", "answer": "B"}\n'), "share no qid"),
    ("judge: qid not in LFRQA", judge_with('{"qid": "no-such-qid", "answer": "A"}\n', versus=None),
     r"1 qid\(s\) are not in LFRQA's test set, e.g. 'no-such-qid'"),
    ("judge: order", judge_with(GOOD_PRED, "--order", "sideways"), "invalid choice: 'sideways'"),
    ("judge: backend", judge_with(GOOD_PRED, "--judge", "claude:x"), "Unknown backend 'claude'"),
    ("judge: missing file", plain("judge", "--predictions", "TMP/none.jsonl", "--out", "TMP"),
     "none.jsonl does not exist"),
    ("judge: budget", judge_with(GOOD_PRED, "--max-input-tokens", "0"),
     "--max-input-tokens must be >= 1, got 0"),
    ("judge: folder as file", plain("judge", "--predictions", "TMP", "--out", "TMP/run"),
     r"Prediction file .* is a folder, not a file: give a JSONL file"),
    # generate
    ("generate: empty file", generate_with(""), "retrieved.jsonl holds no questions"),
    ("generate: bad JSON line", generate_with(GOOD_RETRIEVED * 2 + "nope\n"), "retrieved.jsonl line 3: not valid JSON"),
    ("generate: not UTF-8", generate_with(b'{"qid": "\xff\xfe"}\n'), "line 1: not UTF-8 text"),
    ("generate: duplicate qid", generate_with(GOOD_RETRIEVED * 2),
     r"line 2: qid 'q0' appears twice \(also at .*line 1\)"),
    ("generate: no passages", generate_with('{"qid": "q", "question": "x"}\n'), "line 1: missing field 'passages'"),
    ("generate: passages", generate_with('{"qid": "q", "question": "x", "passages": [{"pid": "p"}]}\n'),
     r"passages\[0\] must be an object with a string 'text'"),
    ("generate: rank", generate_with('{"qid": "q", "question": "x", "passages": [{"pid": "p", "text": "t", '
                                     '"rank": "first"}]}\n'), "rank 'first'; ranks are integers"),
    ("generate: prompt", generate_with(GOOD_RETRIEVED, "--prompt", "v3"), "invalid choice: 'v3'"),
    ("generate: passages 0", generate_with(GOOD_RETRIEVED, "--passages", "0"), "--passages must be >= 1, got 0"),
    ("generate: backend", generate_with(GOOD_RETRIEVED, "--model", "gemini:pro"), "Unknown backend 'gemini'"),
    ("generate: spec", generate_with(GOOD_RETRIEVED, "--model", "gpt-4o"), r"'<backend>:<model>'"),
    ("generate: hf flag on openai", generate_with(GOOD_RETRIEVED, "--batch-size", "4"),
     "--batch-size apply to hf/vllm models"),
    ("generate: missing file", plain("generate", "--retrieved", "TMP/none.jsonl", "--model", "openai:m", "--out", "TMP"),
     r"none.jsonl does not exist.*rag-qa-arena retrieve"),
    ("generate: no --out", plain("generate", "--retrieved", "x", "--model", "openai:m"), "--out FILE is required"),
    ("generate: --out is a folder", lambda tmp: generate_with(GOOD_RETRIEVED)(tmp) + ["--out", tmp],
     r"cannot write to .*: it is a folder, not a file \(give a file path or remove the folder\)"),
    ("generate: folder as file", plain("generate", "--retrieved", "TMP", "--model", "openai:m", "--out", "TMP/p.jsonl"),
     r"Retrieved file .* is a folder, not a file: write it with `rag-qa-arena retrieve --out`"),
    # report
    ("report: missing folder", plain("report", "TMP/nowhere", "--out", "TMP/lb"), "'.*nowhere' does not exist"),
    ("report: no verdicts", report_with(None), "has no verdicts.jsonl"),
    ("report: bad JSON line", report_with(b"{oops\n" + VERDICT.encode() + b"\n"), r"verdicts.jsonl:1: not valid JSON"),
    ("report: not UTF-8", report_with(VERDICT.encode() + b"\n", b"\xff\xfe"), r"summary.json.*UTF-8"),
    ("report: parent of the runs", lambda tmp: report_with(VERDICT.encode() + b"\n")(tmp)[:1] + [
        tmp / "runs", "--out", tmp / "lb"], r"'.*runs' has no verdicts.jsonl: .* \(it holds run folders: pass '.*runs/\*'"),
    ("report: --out is a file", lambda tmp: report_with(VERDICT.encode() + b"\n")(tmp)[:-3] + [
        "--out", tmp / "runs" / "sys" / "verdicts.jsonl", "--no-plots"], r"--out .*verdicts.jsonl is a file: give a folder"),
    ("report: --n-boot", plain("report", "TMP", "--out", "TMP/lb", "--n-boot", "many"),
     "argument --n-boot: 'many' must be a positive integer, e.g. 1000"),
    # retrieve
    ("retrieve: domain", plain("retrieve", "--domain", "medicine", "--retriever", "bm25", "--out", "TMP/r.jsonl"),
     "invalid choice: 'medicine'"),
    ("retrieve: k", retrieve_with(b'{"qid": "1", "question": "x"}\n', "--k", "0"), "k must be a positive integer, got 0"),
    ("retrieve: bad JSON line", retrieve_with(b'{"qid": "1", "question": "x"}\nnope\n'), r"q.jsonl line 2: not valid JSON"),
    ("retrieve: not UTF-8", retrieve_with(b'{"qid": "\xff"}\n'), r"q.jsonl line 1.*UTF-8"),
    ("retrieve: empty file", retrieve_with(b""), r"q.jsonl.*no questions"),
    ("retrieve: missing questions file", plain("retrieve", "--domain", "fiqa", "--retriever", "bm25", "--out",
                                               "TMP/r.jsonl", "--questions", "TMP/none.jsonl"),
     r"Questions file .*none.jsonl does not exist: give a JSONL file .* or drop --questions"),
]


def _case(case):
    if hasattr(case, "values"):  # pytest.param
        return pytest.param(*case.values[1:], marks=case.marks, id=case.values[0])
    return pytest.param(*case[1:], id=case[0])


@pytest.mark.parametrize("argv, match", [_case(c) for c in CLI_CASES])
def test_commands_name_the_bad_value(tmp_path, capsys, argv, match):
    code, stdout, stderr = cli(argv(tmp_path), capsys)
    assert code == 2, (stdout, stderr)
    assert "Traceback" not in stderr
    assert stderr.strip(), "no message"
    assert re.search(match, stderr), stderr


# --------------------------------------------------------------------------------------------
# Legal but unusual input
# --------------------------------------------------------------------------------------------
def test_an_empty_answer_is_judged(tmp_path, capsys):
    with OpenAIServer() as server:
        code, _, err = cli(judge_with('{"qid": "q0", "question": "two words", "answer": ""}\n')(tmp_path)
                           + ["--base-url", server.base_url], capsys)
        assert code == 0, err
        assert "<answer 1>\n\n</answer 1>" in server.requests[0]["messages"][-1]["content"]
    verdict = read_jsonl(tmp_path / "run" / "verdicts.jsonl")[0]
    assert verdict["failed"] is False and verdict["outcome"] == "win" and verdict["no_answer_a"] is False


def test_a_judge_prompt_over_the_budget_is_refused_and_failed(tmp_path, capsys):
    long = "word " * 3000
    preds = ('{"qid": "q0", "question": "short one", "answer": "A"}\n'
             + json.dumps({"qid": "q1", "question": "long one", "answer": long}) + "\n")
    with OpenAIServer() as server:
        code, stdout, err = cli(judge_with(preds, versus='{"qid": "q0", "answer": "B"}\n{"qid": "q1", "answer": "B"}\n')(
            tmp_path) + ["--base-url", server.base_url, "--max-input-tokens", "4000"], capsys)
        assert code == 0, err
        assert [query_of(b) for b in server.requests] == ["short one"]  # the long pair is never sent
    refused = read_jsonl(tmp_path / "run" / "verdicts.jsonl")[1]
    assert refused["failed"] and refused["judgments"][0]["attempts"] == 0
    assert "over the max_input_tokens budget of 4000" in refused["judgments"][0]["error"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["errors"] == {"over_budget": 1} and summary["n_failed"] == 1


def test_a_generation_prompt_over_the_budget_is_refused_and_failed(tmp_path):
    rows = retrieved_rows(2)
    rows[1]["passages"][0]["text"] = "word " * 3000
    with OpenAIServer(lambda body, attempt: "Answer: ok") as server:
        res = generate_answers(rows, "openai:gpt-4o", generation=GenerationConfig(max_input_tokens=1000),
                               run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path),
                               out=tmp_path / "preds.jsonl")
        assert [query_of(b) for b in server.requests] == ["q0 asks?"]
    refused = read_jsonl(tmp_path / "preds.jsonl")[1]
    assert refused["failed"] and refused["answer"] is None and "max_input_tokens budget of 1000" in refused["error"]
    assert res["errors"] == {"over_budget": 1} and res["n_failed"] == 1


# --------------------------------------------------------------------------------------------
# Text that is not text, JSON nested too deeply, a missing optional dependency
# --------------------------------------------------------------------------------------------
SURROGATE_LINE = '{"qid": "q7", "question": "q7 asks?", "answer": "broken \\ud800 text"}\n'
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("command", ["judge", "generate"])
def test_a_lone_surrogate_is_named_by_line_and_qid_before_anything_is_sent(tmp_path, capsys, command):
    """Before: the run aborted when the cache key was computed, naming neither the line nor the qid."""
    with OpenAIServer() as server:
        if command == "judge":
            argv = judge_with(GOOD_PRED + SURROGATE_LINE, versus=GOOD_PRED + '{"qid": "q7", "answer": "B"}\n')(tmp_path)
        else:
            row = retrieved_rows(1, prefix="p")[0]
            row["passages"][2]["text"] = "x \ud800 y"
            argv = generate_with(GOOD_RETRIEVED + json.dumps(row) + "\n")(tmp_path)
        code, stdout, err = cli(argv + ["--base-url", server.base_url], capsys)
        assert server.requests == []  # checked before anything is sent
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    if command == "judge":
        assert "preds.jsonl line 2 (qid q7): answer holds a lone surrogate" in err
    else:
        assert "retrieved.jsonl line 2 (qid p0): passages[2].text holds a lone surrogate" in err
    assert "\\ud83d\\ude00 is fine" in err  # a valid pair is not refused


def test_a_lone_surrogate_is_refused_by_the_python_entry_points(tmp_path):
    with pytest.raises(ValueError, match=r"references\[1\] holds a lone surrogate"):
        judge_pairs(JudgeInputs(predictions=["a", "b"], references=["c", "d\udfff"], questions=["q", "r"]),
                    run=_nowhere(tmp_path))
    with pytest.raises(ValueError, match=r"retrieved\[0\] \(qid q0\): question holds a lone surrogate"):
        generate_answers([_row(question="\ud800?")], "openai:m", run=_nowhere(tmp_path))
    with OpenAIServer() as server:  # a surrogate pair (an emoji written as escapes) is ordinary text
        res = judge_pairs(JudgeInputs(predictions=["ok \U0001F600"], references=["b"], questions=["q"]),
                          judge="openai:j", run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path))
    assert res["n_failed"] == 0


@pytest.mark.parametrize("where", ["judge", "generate", "report"])
def test_json_nested_too_deeply_is_one_line_naming_the_file_and_line(tmp_path, capsys, where):
    """Before: a RecursionError traceback."""
    if where == "judge":
        argv = judge_with(GOOD_PRED + DEEP + "\n")(tmp_path)
        expected = "preds.jsonl line 2: not valid JSON (nested too deeply)"
    elif where == "generate":
        argv = generate_with(GOOD_RETRIEVED + DEEP + "\n")(tmp_path)
        expected = "retrieved.jsonl line 2: not valid JSON (nested too deeply)"
    else:
        argv = report_with(VERDICT.encode() + b"\n" + DEEP.encode() + b"\n" + VERDICT.encode() + b"\n")(tmp_path)
        expected = "verdicts.jsonl:2: not valid JSON (nested too deeply)"
    code, stdout, err = cli(argv, capsys)
    assert code == 2 and "Traceback" not in err and "RecursionError" not in err, err
    assert expected in err and err.strip().count("\n") == 0


def test_a_missing_optional_dependency_prints_only_the_hint(tmp_path):
    """`generate --model hf:...` without transformers (hidden from a real subprocess)."""
    from tests.robustness.helpers import run_cli, write_jsonl

    blocked = tmp_path / "blocked" / "transformers"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'transformers'\", "
                                         "name='transformers')\n")
    retrieved = write_jsonl(tmp_path / "r.jsonl", retrieved_rows(40))
    result = run_cli(["generate", "--retrieved", retrieved, "--model", "hf:/nowhere/model", "--out",
                      tmp_path / "p.jsonl", "--cache-dir", tmp_path / "c", "--batch-size", "1"],
                     PYTHONPATH=str(tmp_path / "blocked"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == ['rag-qa-arena: error: the hf backend needs transformers and torch: pip install '
                                          '"rag-qa-arena[hf]" (No module named \'transformers\')']


def test_many_items_failing_at_once_leave_no_unretrieved_task_exceptions():
    """What printed ~70 lines of "Task exception was never retrieved" after the hint: when several
    items fail at the same moment, the first error is raised and every other one is marked seen."""
    import asyncio
    import gc
    import io
    import logging

    from metric_arena.llm._tasks import gather_or_cancel

    async def fail(i):
        await asyncio.sleep(0)
        raise ImportError(f"missing {i}")

    async def run():
        with pytest.raises(ImportError):
            await gather_or_cancel([asyncio.ensure_future(fail(i)) for i in range(20)])

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.getLogger("asyncio").addHandler(handler)
    try:
        asyncio.run(run())
        gc.collect()
    finally:
        logging.getLogger("asyncio").removeHandler(handler)
    assert "never retrieved" not in stream.getvalue()
