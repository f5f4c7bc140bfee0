"""Hostile sizes: an answer of a megabyte, thousands of prediction files. Each is refused in one line
before anything is sent (naming the qid or the count and the documented limit), or counted without a
crash; nothing grows without bound."""

from __future__ import annotations

import json

import pytest

from metric_arena import RunConfig, judge_pairs
from metric_arena.judge import MAX_TOURNAMENT_SYSTEMS
from metric_arena.llm import get_encoding
from metric_arena.records import MAX_TEXT_CHARS
from metric_arena.style import answer_style
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli, write_jsonl
from metric_arena.judge import JudgeInputs

HUGE = "word " * 210_000  # 1,050,000 characters: bpe_openai refuses to encode 1,000,000 or more at once


def _files(tmp_path, answer: str):
    preds = write_jsonl(tmp_path / "preds.jsonl", [{"qid": "q0", "question": "q0 asks?", "answer": "A"},
                                                   {"qid": "q1", "question": "q1 asks?", "answer": answer}])
    other = write_jsonl(tmp_path / "other.jsonl", [{"qid": "q0", "answer": "B"}, {"qid": "q1", "answer": "B"}])
    return ["judge", "--predictions", preds, "--versus", other, "--judge", "openai:j", "--out", tmp_path / "run",
            "--cache-dir", tmp_path / "cache"]


@pytest.mark.parametrize("dry_run", [False, True], ids=["judge", "dry-run"])
def test_a_megabyte_answer_is_refused_before_anything_is_sent(tmp_path, capsys, dry_run):
    """Before: the 1 MB prompts were sent, then the tokenizer's ValueError ended the run with a traceback
    (the dry run died the same way)."""
    with OpenAIServer() as server:
        argv = _files(tmp_path, HUGE) + ["--base-url", server.base_url] + (["--dry-run"] if dry_run else [])
        code, _, err = cli(argv, capsys)
        assert server.requests == []
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert "preds.jsonl line 2 (qid q1): answer has 1,050,000 characters" in err
    assert f"limit of {MAX_TEXT_CHARS:,}" in err and "MAX_TEXT_CHARS" in err


def test_an_answer_at_the_limit_is_judged(tmp_path, capsys):
    answer = ("word " * (MAX_TEXT_CHARS // 5))[:MAX_TEXT_CHARS]
    with OpenAIServer() as server:
        code, _, err = cli(_files(tmp_path, answer) + ["--base-url", server.base_url], capsys)
        assert code == 0, err
        assert len(server.requests) == 2
    verdicts = [json.loads(line) for line in (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines()]
    assert verdicts[1]["style_a"]["words"] == MAX_TEXT_CHARS // 5


def test_the_python_entry_point_refuses_a_huge_reference_by_position_and_id(tmp_path):
    with pytest.raises(ValueError, match=r"references\[1\] \(id b\): reference has 1,050,000 characters"):
        judge_pairs(JudgeInputs(predictions=["x", "y"], references=["r", HUGE], questions=["q", "q"], ids=["a", "b"]),
                    judge="openai:j",
                    run=RunConfig(base_url="http://127.0.0.1:9/v1", api_key="k", cache_dir=tmp_path))


def test_style_and_token_counts_take_any_length_and_special_token_text():
    """Before: answer_style raised on 1,000,000 characters or more, and on text such as <|endoftext|>."""
    encoding, _ = get_encoding("gpt-4o")
    assert answer_style(HUGE)["words"] == 210_000
    assert answer_style(HUGE)["tokens"] == len(encoding.encode(HUGE)) == 210_001
    assert answer_style("ends <|endoftext|> here")["tokens"] > 3


def test_a_tournament_of_too_many_systems_is_refused_before_reading_them(tmp_path, capsys):
    """Before: a dry run over 10,000 files planned every pair in memory (10.6 GB after 516 s, still going)."""
    n = MAX_TOURNAMENT_SYSTEMS + 1
    files = [write_jsonl(tmp_path / f"s{i}.jsonl", [{"qid": "x", "answer": "a"}]) for i in range(n)]
    files[-1].write_text("not json\n")  # never read: the count is refused first
    for extra in (["--dry-run"], ["--out", tmp_path / "runs"]):
        code, _, err = cli(["tournament", *files, "--judge", "openai:gpt-4o", *extra], capsys)
        assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
        assert f"at most {MAX_TOURNAMENT_SYSTEMS} systems (MAX_TOURNAMENT_SYSTEMS), got {n}" in err
    assert not (tmp_path / "runs").exists()


def test_the_help_states_the_limits(capsys):
    _, judge_help, _ = cli(["judge", "--help"], capsys)
    _, tournament_help, _ = cli(["tournament", "--help"], capsys)
    assert f"{MAX_TEXT_CHARS:,} characters (MAX_TEXT_CHARS)" in " ".join(judge_help.split())
    assert f"At most {MAX_TOURNAMENT_SYSTEMS} systems (MAX_TOURNAMENT_SYSTEMS" in tournament_help
