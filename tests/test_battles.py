"""The battles export against rows computed by hand: who won, and whose answer was shown first.

As the reference's ``all_battles.json``: ``model_a`` is the answer shown first (Answer 1), so the
evaluated system is ``model_a`` only where it was shown first; a pair judged in both orders is one
row per order."""

from __future__ import annotations

import json

import pytest

from metric_arena.report import battle_rows, write_battles
from metric_arena.style import STYLE_FIELDS

JUDGE = "openai:gpt-4o"


def judgment(a_position, outcome, judge=JUDGE):
    return {"judge": judge, "a_position": a_position, "rating": 1, "outcome": outcome}


# (qid, domain, outcome for system_a, [(position of system_a's answer, that order's outcome), ...])
VERDICTS = [
    ("q1", "fiqa", "win", [(1, "win")]),
    ("q2", "fiqa", "loss", [(2, "loss")]),
    ("q3", "writing", "tie", [(1, "win"), (2, "loss")]),  # both orders, a position flip: the pair is a tie
    ("q4", "writing", "win", [(2, "win")]),
    ("q5", "science", "loss", [(1, "loss")]),
    ("q6", "science", None, [(1, None)]),  # a failed pair: left out
]

# Worked out by hand from VERDICTS: system_a is "mine", system_b "theirs"; model_a is whoever was shown first.
EXPECTED = [
    {"model_a": "mine", "model_b": "theirs", "winner": "model_a", "qid": "q1", "domain": "fiqa", "judge": JUDGE,
     "first_shown": "model_a"},   # mine first, mine won
    {"model_a": "theirs", "model_b": "mine", "winner": "model_a", "qid": "q2", "domain": "fiqa", "judge": JUDGE,
     "first_shown": "model_a"},   # theirs first, mine lost: theirs won
    {"model_a": "mine", "model_b": "theirs", "winner": "model_a", "qid": "q3", "domain": "writing", "judge": JUDGE,
     "first_shown": "model_a"},   # order 1: mine first and won
    {"model_a": "theirs", "model_b": "mine", "winner": "model_a", "qid": "q3", "domain": "writing", "judge": JUDGE,
     "first_shown": "model_a"},   # order 2: theirs first, mine lost: the first shown won again
    {"model_a": "theirs", "model_b": "mine", "winner": "model_b", "qid": "q4", "domain": "writing", "judge": JUDGE,
     "first_shown": "model_a"},   # theirs first, mine won
    {"model_a": "mine", "model_b": "theirs", "winner": "model_b", "qid": "q5", "domain": "science", "judge": JUDGE,
     "first_shown": "model_a"},   # mine first, mine lost
]


# Rows without recorded lengths carry the length and style columns as nulls.
NO_STYLE = {f"{name}_{side}": None for name in STYLE_FIELDS for side in "ab"}
EXPECTED = [{**row, **NO_STYLE} for row in EXPECTED]


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "mine"
    run.mkdir()
    lines = [json.dumps({"qid": qid, "domain": domain, "system_a": "mine", "system_b": "theirs", "outcome": outcome,
                         "judgments": [judgment(p, o) for p, o in orders]})
             for qid, domain, outcome, orders in VERDICTS]
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
           "judgments": [judgment(2, "loss", "openai:b"), judgment(2, "loss", "openai:a")]}
    (run / "verdicts.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert battle_rows([run]) == [{"model_a": "theirs", "model_b": "mine", "winner": "model_a", "qid": "q1",
                                   "domain": "fiqa", "judge": "openai:a,openai:b", "first_shown": "model_a", **NO_STYLE}]
