"""Agreement of the judge with human pairwise labels (Cohen's kappa, Pearson r)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metric_arena.stats import agreement, cohen_kappa, judge_outcomes, load_human_labels, majority_labels, majority_vote


def _verdict(qid, outcome, a="gpt-4o", b="LFRQA", judgments=None):
    return {"qid": qid, "system_a": a, "system_b": b, "outcome": outcome, "judgments": judgments or []}


def test_labels_file_formats_orientation_and_majority(tmp_path):
    path = tmp_path / "human.jsonl"
    rows = [
        {"qid": "q1", "system_a": "gpt-4o", "system_b": "LFRQA", "label": 1, "annotator": "w1"},
        {"qid": "q1", "system_a": "LFRQA", "system_b": "gpt-4o", "label": "loss", "annotator": "w2"},  # same vote, reversed
        {"qid": "q1", "system_a": "gpt-4o", "system_b": "LFRQA", "label": 0, "annotator": "w3"},
        {"qid": "q2", "system_a": "LFRQA", "system_b": "gpt-4o", "label": 1},  # LFRQA better
        {"qid": "q3", "system_a": "gpt-4o", "system_b": "LFRQA", "label": "win"},
        {"qid": "q3", "system_a": "gpt-4o", "system_b": "LFRQA", "label": "loss"},  # no majority: tie
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    labels = majority_labels(load_human_labels(path))
    assert labels == {
        ("q1", "gpt-4o", "LFRQA"): "win",
        ("q2", "LFRQA", "gpt-4o"): "win",
        ("q3", "gpt-4o", "LFRQA"): "tie",
    }
    verdicts = [_verdict("q1", "win"), _verdict("q2", "loss"), _verdict("q3", "tie"), _verdict("q4", "win")]
    r = agreement(load_human_labels(path), verdicts)
    assert r["n"] == 3 and r["accuracy"] == 1.0 and r["kappa"] == 1.0 and r["pearson"] == pytest.approx(1.0)
    assert r["confusion"]["win"]["win"] == 1 and r["confusion"]["loss"]["loss"] == 1
    assert r["n_unmatched_human"] == 0 and list(r["per_pair"]) == ["gpt-4o vs LFRQA"]


def test_kappa_and_pearson_against_hand_computation():
    human = [1, 1, 0, -1, -1, 0, 1, -1]
    judged = [1, 0, 0, -1, 1, 0, 1, -1]
    observed = 6 / 8
    expected = (3 * 3 + 2 * 3 + 3 * 2) / 64
    assert cohen_kappa(human, judged) == pytest.approx((observed - expected) / (1 - expected))
    outcome = {1: "win", 0: "tie", -1: "loss"}
    rows = [{"qid": f"q{i}", "system_a": "s", "system_b": "LFRQA", "label": outcome[h]} for i, h in enumerate(human)]
    verdicts = [_verdict(f"q{i}", outcome[j], a="s") for i, j in enumerate(judged)]
    r = agreement(rows, verdicts)
    assert r["kappa"] == pytest.approx((observed - expected) / (1 - expected))
    assert r["pearson"] == pytest.approx(np.corrcoef(human, judged)[0, 1])
    stats = pytest.importorskip("scipy.stats")
    assert r["pearson_p"] == pytest.approx(stats.pearsonr(human, judged).pvalue)


def test_one_judge_among_several():
    judgments = [
        {"judge": "openai:gpt-4o", "outcome": "win"},
        {"judge": "openai:gpt-4o", "outcome": "win"},
        {"judge": "hf:llama", "outcome": "loss"},
    ]
    verdicts = [_verdict("q1", "win", judgments=judgments), _verdict("q2", None, judgments=[{"judge": "hf:llama", "outcome": None}])]
    assert judge_outcomes(verdicts) == {("q1", "gpt-4o", "LFRQA"): "win"}
    assert judge_outcomes(verdicts, "hf:llama") == {("q1", "gpt-4o", "LFRQA"): "loss"}
    human = [{"qid": "q1", "system_a": "gpt-4o", "system_b": "LFRQA", "label": 2}]
    assert agreement(human, verdicts, judge="hf:llama")["accuracy"] == 1.0
    assert agreement(human, verdicts, judge="openai:gpt-4o")["accuracy"] == 0.0


def test_majority_rule():
    assert majority_vote(["win"]) == "win"
    assert majority_vote(["win", "win", "tie"]) == "win"
    assert majority_vote(["win", "loss"]) == "tie"
    assert majority_vote(["loss", "loss", "win", "win"]) == "tie"
    assert majority_vote([None, "loss", None]) == "loss"  # failed judges do not vote
    assert majority_vote([]) is None


def test_bad_labels_are_named(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"qid": "q1", "system_a": "a", "system_b": "b", "label": 1}\n{"qid": "q2", "system_a": "a", "system_b": "b", "label": 3}\n')
    with pytest.raises(ValueError, match=r"h.jsonl:2: unknown label 3"):
        load_human_labels(path)
    path.write_text('{"qid": "q1", "system_a": "a", "label": 1}\n')
    with pytest.raises(ValueError, match="missing field.*system_b"):
        load_human_labels(path)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_human_labels(tmp_path / "nope.jsonl")


def test_no_overlap_gives_nan_not_a_crash():
    r = agreement([{"qid": "x", "system_a": "a", "system_b": "b", "label": 0}], [_verdict("q1", "win")])
    assert r["n"] == 0 and np.isnan(r["kappa"]) and r["n_unmatched_human"] == 1
