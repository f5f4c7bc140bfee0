"""The user-facing entry points: the `evaluate` module and the `rag-qa-arena judge` command,
end to end against a real local OpenAI-compatible server."""

from __future__ import annotations

import doctest
import importlib
import json
import re
import subprocess
import sys

import pytest

import metric_arena
from rag_qa_arena.cli import main
from tests.openai_server import OpenAIServer, Reply


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A judge server, its URL and a key in the environment, and a private judgment cache."""
    with OpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-from-env")
        monkeypatch.setenv("RAG_QA_ARENA_CACHE", str(tmp_path / "cache"))
        yield server


@pytest.fixture(scope="module")
def arena():
    evaluate = pytest.importorskip("evaluate")
    return evaluate.load(metric_arena.METRIC_PATH)


def test_metric_end_to_end(env, arena, tmp_path):
    results = arena.compute(
        predictions=["Paris.", "I couldn't find an answer.", "Blue light scatters more."],
        references=["The capital is Paris.", "Boiling point is 100 C.", "Rayleigh scattering."],
        questions=["capital of france", "boiling point of water?", "why blue sky"],
        ids=["a", "b", "c"],
        domains=["geo", "science", "science"],
        judge=metric_arena.JudgeConfig("openai:gpt-4o-mini", order="both"),
        run=metric_arena.RunConfig(max_concurrency=4, cache_dir=str(tmp_path / "metric-cache")),
    )
    assert results["n"] == 3 and results["n_failed"] == 0 and len(env.requests) == 6
    # the default server reply always prefers Answer 1: every pair flips, so every pair is a tie
    assert results["tie_rate"] == 1.0 and results["position_flip_rate"] == 1.0
    assert results["win_rate"] == 0.0 and results["win_tie_rate"] == 1.0
    assert results["no_answer_rate"] == pytest.approx(1 / 3)
    assert set(results["per_domain"]) == {"geo", "science"} and results["per_domain"]["science"]["n"] == 2
    assert [v["qid"] for v in results["verdicts"]] == ["a", "b", "c"]
    verdict = results["verdicts"][0]
    assert {j["a_position"] for j in verdict["judgments"]} == {1, 2}
    assert all(j["raw"].endswith("<rating>1</rating>") for j in verdict["judgments"])
    assert {"win_rate_ci", "win_tie_rate_ci", "errors"} <= set(results)
    assert env.requests[0]["model"] == "gpt-4o-mini"


def test_metric_rejects_missing_inputs(env, arena):
    with pytest.raises(ValueError, match="questions"):
        arena.compute(predictions=["a"], references=["b"])


def test_metric_docstring_example_runs(env, arena):
    module = importlib.import_module(type(arena).__module__)
    test = doctest.DocTestParser().get_doctest(module._KWARGS_DESCRIPTION, {}, "rag_qa_arena", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test)
    assert result.attempted >= 5 and result.failed == 0


def test_metric_path_holds_the_module_and_its_card():
    from pathlib import Path

    folder = Path(metric_arena.METRIC_PATH)
    assert (folder / "rag_qa_arena.py").is_file() and (folder / "README.md").is_file()
    source = (folder / "rag_qa_arena.py").read_text()
    # evaluate's dependency scan misreads "import a, b": one import per line
    assert not re.search(r"^\s*import \w+\s*,", source, re.M)


# --------------------------------------------------------------------------------------------
# rag-qa-arena judge
# --------------------------------------------------------------------------------------------
def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_versus_writes_a_run_folder_and_resumes(env, tmp_path, capsys):
    a = write_jsonl(tmp_path / "sys-a.jsonl", [
        {"qid": "1", "answer": "A one", "question": "first question here", "domain": "fiqa"},
        {"qid": "2", "answer": "A two", "question": "second question", "domain": "science"},
        {"qid": "3", "answer": "A three", "question": "third one", "domain": "science"},
    ])
    b = write_jsonl(tmp_path / "sys-b.jsonl", [{"qid": "2", "answer": "B two"}, {"qid": "3", "answer": "B three"},
                                               {"qid": "9", "answer": "B nine"}])
    out = tmp_path / "runs" / "a-vs-b"  # a pair's folder: both sides are named after their files
    args = ["judge", "--predictions", str(a), "--versus", str(b), "--judge", "openai:m", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "sys-a vs sys-b" in printed and "win" in printed
    verdicts = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [v["qid"] for v in verdicts] == ["2", "3"]  # the qids both files answer
    assert {v["system_a"] for v in verdicts} == {"sys-a"} and {v["system_b"] for v in verdicts} == {"sys-b"}
    # 2 words: A shown first and rated 1 -> win; 2 words again for "third one"
    assert [v["outcome"] for v in verdicts] == ["win", "win"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 2 and summary["opponent"] == "sys-b" and summary["per_domain"]["science"]["n"] == 2
    assert "sk-test-key-from-env" not in (out / "summary.json").read_text()
    sent = len(env.requests)
    assert main(args + ["--name", "renamed"]) == 2  # other settings: refused without --overwrite
    assert main(args + ["--name", "renamed", "--overwrite"]) == 0  # a re-run asks nothing and does not duplicate
    assert len(env.requests) == sent
    lines = (out / "verdicts.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["system_a"] == "renamed"


def test_cli_judges_against_lfrqa(env, tmp_path, lfrqa_data_dir, capsys):
    lfrqa = pytest.importorskip("lfrqa")
    ds = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    rows = [{"qid": ds[i]["qid"], "answer": f"answer {i}"} for i in range(3)]
    preds = write_jsonl(tmp_path / "preds.jsonl", rows)
    out = tmp_path / "run"
    assert main(["judge", "--predictions", str(preds), "--judge", "openai:m", "--out", str(out),
                 "--data-dir", str(lfrqa_data_dir), "--order", "random", "--seed", "5"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 3 and summary["order"] == "random" and summary["seed"] == 5
    assert list(summary["per_domain"]) == ["fiqa"]
    # the reference answer sent to the judge is LFRQA's answer for that qid
    assert any(ds[0]["answer"].strip() in body["messages"][-1]["content"] for body in env.requests)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"qid": "no-such-qid", "answer": "x"}])
    assert main(["judge", "--predictions", str(bad), "--out", str(tmp_path / "r2"),
                 "--data-dir", str(lfrqa_data_dir)]) == 2
    assert "'no-such-qid'" in capsys.readouterr().err


def test_cli_dry_run_sends_nothing(env, tmp_path, capsys):
    a = write_jsonl(tmp_path / "sys-a.jsonl", [{"qid": str(i), "answer": "x " * 50, "question": f"q {i}"} for i in range(4)])
    b = write_jsonl(tmp_path / "B.jsonl", [{"qid": str(i), "answer": "y " * 50} for i in range(4)])
    assert main(["judge", "--predictions", str(a), "--versus", str(b), "--judge", "openai:gpt-4-0125-preview",
                 "--order", "both", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert env.requests == []
    assert "requests:              8" in printed and "max_tokens" in printed
    last = printed.strip().splitlines()[-1]
    match = re.fullmatch(r"estimated_cost_usd: (\d+\.\d+)", last)
    assert match and 0.05 < float(match.group(1)) < 0.3  # ~8 x 1,700 tokens at $10/M plus output at $30/M
    assert main(["judge", "--predictions", str(a), "--versus", str(b), "--judge", "openai:my-local-model",
                 "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "cost:                  unknown" in printed and printed.strip().endswith("estimated_cost_usd: nan")


def test_cli_auth_error_exits_with_a_message_and_no_key(env, tmp_path, capsys):
    env.reply = lambda body, attempt: Reply(status=401)
    a = write_jsonl(tmp_path / "sys-a.jsonl", [{"qid": "1", "answer": "x", "question": "q"}])
    b = write_jsonl(tmp_path / "B.jsonl", [{"qid": "1", "answer": "y"}])
    code = main(["judge", "--predictions", str(a), "--versus", str(b), "--judge", "openai:m",
                 "--api-key", "sk-cli-SECRET-999", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 3 and "authentication failed" in err and env.base_url in err
    assert "sk-cli-SECRET-999" not in err


@pytest.mark.parametrize(
    "content, match",
    [
        ('{"qid": "1", "answer": "a"}\nnot json\n', "line 2: not valid JSON"),
        ('{"qid": "1"}\n', "line 1: missing field 'answer'"),
        ('{"qid": "1", "answer": null}\n', "line 1 .*answer must be a string"),
        ('{"qid": "1", "answer": "a"}\n{"qid": "1", "answer": "b"}\n', "line 2: qid '1' appears twice"),
        ("\n\n", "holds no predictions"),
    ],
)
def test_cli_rejects_bad_prediction_files(tmp_path, capsys, content, match):
    path = tmp_path / "preds.jsonl"
    path.write_text(content, encoding="utf-8")
    assert main(["judge", "--predictions", str(path), "--out", str(tmp_path / "r")]) == 2
    assert re.search(match, capsys.readouterr().err)


def test_cli_rejects_non_utf8(tmp_path, capsys):
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b'{"qid": "1", "answer": "ok"}\n{"qid": "2", "answer": "\xff"}\n')
    assert main(["judge", "--predictions", str(path), "--out", str(tmp_path / "r")]) == 2
    assert "line 2: not UTF-8" in capsys.readouterr().err


def test_cli_help_explains_every_flag():
    result = subprocess.run([sys.executable, "-m", "rag_qa_arena", "judge", "--help"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    for flag in ("--predictions", "--judge", "--base-url", "--api-key", "--out", "--name", "--versus", "--order",
                 "--seed", "--max-concurrency", "--cache-dir", "--dry-run", "--timeout", "--data-dir", "--no-cache"):
        assert flag in result.stdout
    assert "estimated_cost_usd" in result.stdout


def test_metric_refuses_prompts_over_the_token_budget(env, arena, tmp_path):
    long_answer = "word " * 3000
    results = arena.compute(
        predictions=["Paris.", long_answer], references=["The capital is Paris.", "Short."],
        questions=["capital of france", "a long one"],
        judge=metric_arena.JudgeConfig("openai:gpt-4o-mini", max_input_tokens=2500),
        run=metric_arena.RunConfig(cache_dir=str(tmp_path / "c")),
    )
    assert results["n"] == 2 and results["n_failed"] == 1 and len(env.requests) == 1
    assert results["verdicts"][1]["failed"] and "over_budget" in json.dumps(results["errors"])


def test_metric_takes_the_data_dir_its_offline_hint_names(env, arena, tmp_path, lfrqa_data_dir, monkeypatch):
    monkeypatch.delenv("LFRQA_DATA_DIR", raising=False)
    inputs = dict(predictions=["Paris."], references=["The capital is Paris."], questions=["capital?"],
                  judge="openai:gpt-4o-mini", run=metric_arena.RunConfig(cache_dir=str(tmp_path / "metric-cache")))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="is not in the data folder .*empty"):  # the folder given is read
        arena.compute(**inputs, data_dir=str(empty))
    assert env.requests == []
    results = arena.compute(**inputs, data_dir=str(lfrqa_data_dir))
    assert results["n"] == 1 and results["n_failed"] == 0 and len(env.requests) == 1
    assert env.requests[0]["messages"][0]["role"] == "system"  # the pinned judge prompt, read from data_dir
