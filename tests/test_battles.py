"""The battles export against rows computed by hand: who won, and whose answer was shown first."""

from __future__ import annotations

import json

import pytest

from metric_arena.report import battle_rows, write_battles

JUDGE = "openai:gpt-4o"


def judgment(a_position, judge=JUDGE):
    return {"judge": judge, "a_position": a_position, "rating": 1}


# (qid, domain, outcome for system_a, positions of system_a's answer in the judgments)
VERDICTS = [
    ("q1", "fiqa", "win", [1]),
    ("q2", "fiqa", "loss", [2]),
    ("q3", "writing", "tie", [1, 2]),
    ("q4", "writing", "win", [2]),
    ("q5", "science", "loss", [1]),
    ("q6", "science", None, [1]),  # a failed pair: left out
]

# Worked out by hand from VERDICTS: system_a is "mine" (model_a), system_b "theirs" (model_b).
EXPECTED = [
    {"model_a": "mine", "model_b": "theirs", "winner": "model_a", "qid": "q1", "domain": "fiqa", "judge": JUDGE,
     "first_shown": "model_a"},
    {"model_a": "mine", "model_b": "theirs", "winner": "model_b", "qid": "q2", "domain": "fiqa", "judge": JUDGE,
     "first_shown": "model_b"},
    {"model_a": "mine", "model_b": "theirs", "winner": "tie", "qid": "q3", "domain": "writing", "judge": JUDGE,
     "first_shown": "both"},
    {"model_a": "mine", "model_b": "theirs", "winner": "model_a", "qid": "q4", "domain": "writing", "judge": JUDGE,
     "first_shown": "model_b"},
    {"model_a": "mine", "model_b": "theirs", "winner": "model_b", "qid": "q5", "domain": "science", "judge": JUDGE,
     "first_shown": "model_a"},
]


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "mine"
    run.mkdir()
    lines = [json.dumps({"qid": qid, "domain": domain, "system_a": "mine", "system_b": "theirs", "outcome": outcome,
                         "judgments": [judgment(p) for p in positions]})
             for qid, domain, outcome, positions in VERDICTS]
    (run / "verdicts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


def test_battle_rows_are_the_hand_computed_ones(run_dir):
    assert battle_rows([run_dir]) == EXPECTED


def test_written_battles_are_the_hand_computed_ones(run_dir, tmp_path):
    import pyarrow.parquet as pq

    assert write_battles([run_dir], tmp_path / "b.jsonl") == len(EXPECTED)
    assert [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()] == EXPECTED
    assert write_battles([run_dir], tmp_path / "b.parquet") == len(EXPECTED)
    assert pq.read_table(tmp_path / "b.parquet").to_pylist() == EXPECTED


def test_several_judges_are_named_together(tmp_path):
    run = tmp_path / "two-judges"
    run.mkdir()
    row = {"qid": "q1", "domain": "fiqa", "system_a": "mine", "system_b": "theirs", "outcome": "loss",
           "judgments": [judgment(2, "openai:b"), judgment(2, "openai:a")]}
    (run / "verdicts.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert battle_rows([run]) == [{"model_a": "mine", "model_b": "theirs", "winner": "model_b", "qid": "q1",
                                   "domain": "fiqa", "judge": "openai:a,openai:b", "first_shown": "model_b"}]
