"""``--parse reference``: judge replies read as the reference implementation's scripts read them,
next to the strict default, with the difference recorded in every run."""

from __future__ import annotations

import json

import pytest

from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.judge import PARSES, judge_batch_requests, parse_rating, reference_rating
from metric_arena.llm import RetryPolicy
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli, prediction_rows, write_jsonl
from metric_arena.judge import JudgeInputs

FAST_RETRY = RetryPolicy(max_retries=2, initial=0.0, multiplier=1.0, jitter=0.0)

# (reply, score the pinned scripts give it). Each was checked against the reference's own
# aggregate_evaluators (code/compute_correlation.py at the pinned commit) on this machine.
TRICKY = [
    ("<thinking>a</thinking><rating>1</rating>", 1),
    ("<rating> 1 </rating>", 1),
    ("<rating>\n2\n</rating>", 2),
    ("I prefer answer 2.", 2),                      # no tag: any 1/2 in the text votes
    ("Answer 1 is better", 1),
    ("no digits here", 0),                          # no tag, no digit: a tie
    ("", 0),
    ("FAIL TO GENERATE ANS.", 0),
    ("<rating>12</rating>", 2),                     # the highest of 0/1/2 present wins
    ("<rating>10</rating>", 1),
    ("<rating>3</rating>", 0),
    ("<rating>5</rating> answer 1", 0),             # the tag span matched: text after it is not read
    ("<rating>tie</rating> answer 1", 1),           # no digit in the tag: the whole reply is read
    ("<rating>1</rating> ... <rating>2</rating>", 2),  # greedy span over both tags
    ("<rating>1</rating> then <rating>0</rating>", 1),
    ("<thinking>Answer 2 cites more</thinking><rating>1</rating>", 1),
    ("<rating>1", 1),                               # unclosed tag: the whole reply
    ("<Rating>2</Rating>", 2),                      # the tag is case-sensitive: the whole reply
    ("<rating>1 (answer 2 is worse)</rating>", 2),
    ("<rating></rating> 2 1", 2),
    ("<rating>x</rating> <rating>1</rating>", 1),
    ("<thinking>Both are fine.</thinking><rating>0</rating>\nAnswer 2", 0),
    ("3 answers: <rating>2</rating>", 2),
]


@pytest.mark.parametrize("text, score", TRICKY)
def test_reference_parse_matches_the_pinned_scripts(text, score):
    assert reference_rating(text) == score


def test_strict_and_reference_disagree_exactly_where_the_strict_parse_finds_no_single_rating():
    assert PARSES == ("strict", "reference")
    for text, score in TRICKY:
        strict = parse_rating(text)
        assert strict is None or strict == score, text


def run(server, questions, tmp_path, *, parse="strict", max_concurrency=16):
    return judge_pairs(JudgeInputs(predictions=["mine"] * len(questions), references=["theirs"] * len(questions),
                                   questions=questions), judge=JudgeConfig("openai:j", parse=parse),
                       run=RunConfig(base_url=server.base_url, api_key="sk-test", retry=FAST_RETRY,
                                     cache_dir=tmp_path / "cache", max_concurrency=max_concurrency))


# Two-word questions: the paper's order rule shows the prediction first (a_position 1).
REPLIES = {"tagless two": "Answer 2 is better.", "valid two": "<rating>1</rating>", "nothing two": "Both fine.",
           "double two": "<rating>1</rating><rating>2</rating>"}


def reply(body, attempt):
    return next(text for question, text in REPLIES.items() if question in body["messages"][-1]["content"])


def test_reference_parse_never_reasks_and_records_what_strict_would_change(tmp_path):
    questions = list(REPLIES)
    with OpenAIServer(reply) as server:
        ref = run(server, questions, tmp_path, parse="reference")
        assert len(server.requests) == 4  # one request per pair: nothing re-asked
    outcomes = {v["qid"]: v["outcome"] for v in ref["verdicts"]}
    assert [v["outcome"] for v in ref["verdicts"]] == ["loss", "win", "tie", "loss"], outcomes
    assert [v["outcome_strict"] for v in ref["verdicts"]] == [None, "win", None, None]
    assert ref["parse"] == "reference" and ref["n_differ_from_strict"] == 3 and ref["n_failed_if_strict"] == 3
    assert ref["n_failed"] == 0 and ref["win_rate"] == 0.25 and ref["tie_rate"] == 0.25

    with OpenAIServer(reply) as server:
        strict = run(server, questions, tmp_path / "strict")
        assert len(server.requests) == 4 + 3  # the three replies without one valid rating are asked again
    assert strict["parse"] == "strict" and "n_differ_from_strict" not in strict
    assert [v["outcome"] for v in strict["verdicts"]] == [None, "win", None, None]
    assert all("outcome_strict" not in v for v in strict["verdicts"])


def test_the_cache_serves_both_parses_without_mixing_them(tmp_path):
    questions = list(REPLIES)
    with OpenAIServer(reply) as server:
        run(server, questions, tmp_path, parse="reference")
        server.clear()
        again = run(server, questions, tmp_path, parse="reference")
        assert server.requests == []  # the first replies, invalid ones included, come from the cache
        strict = run(server, questions, tmp_path)
        assert len(server.requests) == 3  # strict re-asks the invalid ones: the cache kept them invalid
        server.clear()
        ref = run(server, questions, tmp_path, parse="reference")
        assert server.requests == []  # the strict run's re-asks do not change the reference's first reply
    assert [v["outcome"] for v in ref["verdicts"]] == [v["outcome"] for v in again["verdicts"]]
    assert strict["n_failed"] == 3


def test_a_request_without_any_reply_is_a_tie_under_the_reference_parse_and_still_counted_failed(tmp_path):
    from tests.openai_server import Reply

    with OpenAIServer(lambda body, attempt: Reply(status=500)) as server:
        res = run(server, ["one two"], tmp_path, parse="reference")
        strict = run(server, ["one two"], tmp_path)
    [verdict] = res["verdicts"]
    assert verdict["outcome"] == "tie" and verdict["failed"] and verdict["failed_as_tie"]  # the reference scores 0
    assert res["n_failed"] == 1 and res["n_failed_as_tie"] == 1 and res["tie_rate"] == 1.0
    assert res["n_differ_from_strict"] == 1 and res["n_failed_if_strict"] == 1
    assert strict["verdicts"][0]["outcome"] is None and strict["n_failed"] == 1  # strict: failed, in no rate


def test_unknown_parse_is_named(tmp_path):
    with pytest.raises(ValueError, match="Unknown parse 'loose'. Available: strict, reference"):
        judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["q"]),
                    judge=JudgeConfig("openai:j", parse="loose"), run=RunConfig(cache_dir=tmp_path))


def test_batch_plan_has_no_reasks_under_the_reference_parse(tmp_path):
    questions = list(REPLIES)
    with OpenAIServer(lambda body, attempt: "Answer 2 is better.") as server:
        run(server, questions[:2], tmp_path, max_concurrency=1)  # strict: both pairs failed, first replies cached
        base_url = server.base_url
    run_config = RunConfig(base_url=base_url, api_key="sk-test", cache_dir=tmp_path / "cache")
    [strict] = judge_batch_requests(["mine"] * 4, ["theirs"] * 4, questions, judge="openai:j",
                                    run=run_config).values()
    [ref] = judge_batch_requests(["mine"] * 4, ["theirs"] * 4, questions,
                                 judge=JudgeConfig("openai:j", parse="reference"), run=run_config).values()
    assert (strict["n_cached"], strict["n_failed"], len(strict["requests"])) == (0, 2, 4)  # the failed re-asks again
    assert (ref["n_cached"], ref["n_reasks"], len(ref["requests"])) == (2, 0, 2)  # first replies are answers


def test_cli_records_the_parse_in_the_summary(tmp_path, capsys):
    rows = [{**row, "question": question} for row, question in zip(prediction_rows(4), REPLIES)]
    mine, theirs = write_jsonl(tmp_path / "a.jsonl", rows), write_jsonl(tmp_path / "b.jsonl", prediction_rows(4))
    with OpenAIServer(reply) as server:
        code, stdout, err = cli(["judge", "--predictions", mine, "--versus", theirs, "--judge", "openai:j",
                                 "--base-url", server.base_url, "--cache-dir", tmp_path / "cache", "--out",
                                 tmp_path / "run", "--parse", "reference", "--no-progress"], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["parse"] == "reference" and summary["n_differ_from_strict"] == 3
    assert "3 verdict(s) differ from strict parsing" in stdout
