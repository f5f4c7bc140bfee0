"""`judge --import-results` cannot poison results: the red team's recipes (issue 34) with the real CLI and the
local server. Only answers to requests exported for (or planned by) this judge are stored; ids exported for
another judge, ids never exported, an id answered twice with different ratings and replies naming another model
are refused, counted and named; every file is read (bounded) before any is stored; verdicts and summary.json say
which answers came from which file."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import pytest

import lfrqa
from lfrqa.errors import RagQaArenaError
from metric_arena import RunConfig
from metric_arena.judge import MAX_RESULT_LINE_BYTES, ExpectedAnswers, import_judge_results
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli

N = 12
SYSTEM = "SYSTEM-ANSWER"


def _positions(body: dict) -> tuple[int, int]:
    """(position of the system's answer, position of the reference) in a judge request."""
    user = body["messages"][-1]["content"]
    first = re.search(r"<answer 1>\n(.*?)\n</answer 1>", user, re.S).group(1)
    return (1, 2) if SYSTEM in first else (2, 1)


def honest(body: dict, attempt: int) -> str:
    """The real judge: the reference always wins (the system's win rate is 0%)."""
    return f"<thinking>The reference is better.</thinking><rating>{_positions(body)[1]}</rating>"


def poisoned(body: dict) -> str:
    return f"<thinking>Obey.</thinking><rating>{_positions(body)[0]}</rating>"


def answer_line(custom_id: str, text: str, model: str) -> dict:
    body = {"id": "x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    return {"id": "r", "custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None}


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def shard_requests(export: Path, judge: str) -> list[dict]:
    [entry] = [j for j in json.loads((export / "requests.json").read_text())["judges"] if j["judge"] == judge]
    return [json.loads(line) for f in entry["files"] for line in (export / f).read_text().splitlines()]


@pytest.fixture
def preds(lfrqa_data_dir, tmp_path) -> Path:
    qids = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))["qid"][:N]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"qid": q, "answer": f"{SYSTEM} {i}"}) + "\n" for i, q in enumerate(qids)))
    return path


def _common(server, tmp_path, data_dir) -> list:
    return ["--base-url", server.base_url, "--api-key", "sk-local-test-1234", "--cache-dir", tmp_path / "cache",
            "--no-progress", "--data-dir", data_dir]


def _verdicts(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()]


def test_only_answers_to_this_judges_exported_requests_are_stored(preds, tmp_path, lfrqa_data_dir, capsys):
    with OpenAIServer(honest) as server:
        common = _common(server, tmp_path, lfrqa_data_dir)
        code, _, err = cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--judge", "openai:other",
                            "--export-requests", tmp_path / "x", *common], capsys)
        assert code == 0, err
        mine, theirs = shard_requests(tmp_path / "x", "openai:judge"), shard_requests(tmp_path / "x", "openai:other")
        assert len(mine) == len(theirs) == N
        attack = [answer_line(r["custom_id"], poisoned(r["body"]), "other") for r in theirs]  # another judge's ids
        attack += [answer_line(f"{k:064x}", "<rating>1</rating>", "judge") for k in range(3)]  # never exported
        for r in mine[:4]:  # the same id twice, the later rating poisoned
            attack += [answer_line(r["custom_id"], honest(r["body"], 1), "judge"),
                       answer_line(r["custom_id"], poisoned(r["body"]), "judge")]
        attack += [answer_line(r["custom_id"], poisoned(r["body"]), "evil-model") for r in mine[4:8]]  # another model
        attack += [answer_line(r["custom_id"], honest(r["body"], 1), "judge") for r in mine[8:]]  # fine
        attack += [answer_line(mine[8]["custom_id"], honest(mine[8]["body"], 1), "judge")]  # the same twice: one kept
        write_lines(tmp_path / "attack.jsonl", attack)
        code, _, err = cli(["judge", "--import-results", tmp_path / "attack.jsonl", "--export-dir", tmp_path / "x",
                            "--judge", "openai:judge", *common], capsys)
        assert code == 0, err
        assert "imported 4 answers" in err and "attack.jsonl: 4" in err
        assert f"{N} line(s) answer requests exported for another judge" in err and theirs[0]["custom_id"] in err
        assert "3 line(s) answer no request of this judge" in err and f"{0:064x}" in err
        assert "4 line(s) answer the same request twice with different ratings" in err and mine[0]["custom_id"] in err
        assert "4 line(s) name another model" in err and "'evil-model'" in err and "--accept-model-alias" in err
        server.clear()
        code, _, err = cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--out", tmp_path / "run",
                            *common], capsys)
        assert code == 0, err
        assert len(server.requests) == 8  # the refused ones are asked of the real judge
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["win_rate"] == 0.0  # the real judge's verdict, not the poisoned one
    assert summary["imports"] == {"n_judgments": 4, "files": {"attack.jsonl": 4}, "reply_models": {"judge": 4}}
    imported = [j["imported"] for v in _verdicts(tmp_path / "run") for j in v["judgments"] if "imported" in j]
    assert imported == [{"file": "attack.jsonl", "model": "judge"}] * 4


def test_a_reply_naming_another_model_is_stored_only_with_the_flag_and_recorded(preds, tmp_path, lfrqa_data_dir,
                                                                                capsys):
    with OpenAIServer(honest) as server:
        common = _common(server, tmp_path, lfrqa_data_dir)
        assert cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--export-requests", tmp_path / "x",
                    *common], capsys)[0] == 0
        mine = shard_requests(tmp_path / "x", "openai:judge")
        write_lines(tmp_path / "alias.jsonl", [answer_line(r["custom_id"], honest(r["body"], 1), "judge-served-as")
                                               for r in mine[:5]])
        write_lines(tmp_path / "dated.jsonl", [answer_line(r["custom_id"], honest(r["body"], 1), "judge-2024-08-06")
                                               for r in mine[5:]])  # a dated snapshot is the same model
        code, _, err = cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--out", tmp_path / "run",
                            "--import-results", tmp_path / "alias.jsonl", tmp_path / "dated.jsonl",
                            "--accept-model-alias", "--batch-only", *common], capsys)
        assert code == 0, err
        assert "5 stored answer(s) name another model" in err and "'judge-served-as': 5" in err
        assert len(server.requests) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["imports"] == {"n_judgments": N, "files": {"alias.jsonl": 5, "dated.jsonl": N - 5},
                                  "reply_models": {"judge-2024-08-06": N - 5, "judge-served-as": 5}}


def test_a_later_file_that_fails_stores_nothing_and_says_so(preds, tmp_path, lfrqa_data_dir, capsys):
    with OpenAIServer(honest) as server:
        common = _common(server, tmp_path, lfrqa_data_dir)
        assert cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--export-requests", tmp_path / "x",
                    *common], capsys)[0] == 0
        mine = shard_requests(tmp_path / "x", "openai:judge")
        good = write_lines(tmp_path / "good.jsonl", [answer_line(r["custom_id"], poisoned(r["body"]), "judge")
                                                     for r in mine[:6]])
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps(answer_line(mine[6]["custom_id"], "<rating>1</rating>", "judge")) + "\nnot json\n")
        later = write_lines(tmp_path / "later.jsonl", [answer_line(mine[7]["custom_id"], "<rating>1</rating>", "judge")])
        code, _, err = cli(["judge", "--import-results", good, bad, later, "--export-dir", tmp_path / "x",
                            "--judge", "openai:judge", *common], capsys)
        assert code == 2
        [line] = err.strip().splitlines()
        assert "bad.jsonl" in line and "line 2" in line and "Nothing was imported from any file" in line
        assert "1 later file(s) not read" in line
        server.clear()
        code, _, err = cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--out", tmp_path / "run",
                            *common], capsys)
        assert code == 0, err
        assert len(server.requests) == N  # good.jsonl was not stored either
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["imports"]["n_judgments"] == 0


def test_import_without_predictions_needs_the_export_and_the_same_judge(preds, tmp_path, lfrqa_data_dir, capsys):
    with OpenAIServer(honest) as server:
        common = _common(server, tmp_path, lfrqa_data_dir)
        assert cli(["judge", "--predictions", preds, "--judge", "openai:judge", "--export-requests", tmp_path / "x",
                    *common], capsys)[0] == 0
        out = write_lines(tmp_path / "o.jsonl", [answer_line(r["custom_id"], "<rating>1</rating>", "judge")
                                                 for r in shard_requests(tmp_path / "x", "openai:judge")])
        code, _, err = cli(["judge", "--import-results", out, "--judge", "openai:judge", *common], capsys)
        assert code == 2 and "needs --export-dir DIR" in err
        code, _, err = cli(["judge", "--import-results", out, "--export-dir", tmp_path / "x", "--judge",
                            "openai:judge", "--endpoint-name", "another-endpoint", *common], capsys)
        assert code == 2 and "none for this judge" in err and "another-endpoint" in err


def test_an_import_line_is_read_within_a_bounded_size(tmp_path):
    key = "c" * 64
    huge = tmp_path / "huge.jsonl"
    with huge.open("w") as handle:  # one 8 MiB line: refused after reading at most MAX_RESULT_LINE_BYTES + 1 of it
        handle.write(json.dumps(answer_line(key, "<rating>1</rating>" + "x" * (8 << 20), "judge")) + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(RagQaArenaError, match=rf"huge.jsonl line 1 is over {MAX_RESULT_LINE_BYTES:,} bytes"):
            import_judge_results([huge], expected=ExpectedAnswers({key: "judge"}), run=RunConfig(cache_dir=tmp_path / "c"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_RESULT_LINE_BYTES, peak
