"""``--parse reference`` votes as the authors' ``get_majority_vote`` (``code/compute_correlation.py``):
a failed judge scores 0; votes that all differ are a tie (three judges voting 1, 2, 0; two judges that
disagree); otherwise ``Counter(votes).most_common()[0][0]``, the first value seen winning a tie of counts.

The authors' rule is written out here independently (read at the pinned commit, not copied) and
compared with the package on every split of 2 to 5 judges, through the vote itself, the battles file
and the ``judge`` CLI."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from metric_arena.judge import answer_positions
from metric_arena.report import Run, battle_rows
from metric_arena.stats import majority_vote, reference_vote
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli, write_jsonl
from metric_arena.judge import JudgeInputs

FAILED = None  # a judge whose request failed: the authors store "FAIL TO GENERATE ANS.", which scores 0


def authors_vote(scores: list[int]) -> int:
    """The authors' vote on ratings 0/1/2 (0 a tie, 1 Answer 1 better, 2 Answer 2 better)."""
    distinct = set(scores)
    if len(distinct) == 1:  # all agree
        return scores[0]
    if len(distinct) == len(scores):  # no value repeats: no majority, a tie
        return 0
    counts: dict[int, int] = {}
    for s in scores:  # the most frequent; on a tie of counts, the value seen first
        counts[s] = counts.get(s, 0) + 1
    best = max(counts.values())
    return next(s for s in scores if counts[s] == best)


def outcome_of(rating: int | None, position: int) -> str | None:
    """A judge's outcome from the evaluated system's side when its answer was shown at ``position``."""
    if rating is None:
        return None
    return "tie" if rating == 0 else "win" if rating == position else "loss"


SPLITS = [votes for n in (2, 3, 4, 5) for votes in itertools.product((0, 1, 2, FAILED), repeat=n)]


def test_the_written_out_rule_is_the_authors_on_the_issues_examples():
    assert authors_vote([1, 2, 0]) == 0 and authors_vote([1, 1, 2]) == 1 and authors_vote([1, 2]) == 0
    assert authors_vote([1, 1, 2, 2]) == 1 and authors_vote([2, 2, 1, 1]) == 2 and authors_vote([0, 1, 2, 1]) == 1
    assert len(SPLITS) == 4 ** 2 + 4 ** 3 + 4 ** 4 + 4 ** 5


@pytest.mark.parametrize("position", [1, 2])
def test_reference_vote_equals_the_authors_on_every_split_of_2_to_5_judges(position):
    differ = []
    for votes in SPLITS:
        expected = outcome_of(authors_vote([0 if v is FAILED else v for v in votes]), position)
        got = reference_vote([outcome_of(v, position) for v in votes])
        if got != expected:
            differ.append((votes, got, expected))
    assert not differ, differ[:5]


def test_the_rates_over_every_split_equal_the_authors_counting():
    """Win and win+tie rates over all splits of each ensemble size (each split one pair)."""
    for n in (2, 3, 4, 5):
        splits = [s for s in SPLITS if len(s) == n]
        ours = [reference_vote([outcome_of(v, 1) for v in s]) for s in splits]
        theirs = [outcome_of(authors_vote([0 if v is FAILED else v for v in s]), 1) for s in splits]
        assert Counter(ours) == Counter(theirs)
        assert ours.count("win") / len(ours) == theirs.count("win") / len(theirs)


def test_strict_parsing_keeps_its_own_rule():
    assert majority_vote(["win", "loss", "tie"]) == "tie" and reference_vote(["win", "loss", "tie"]) == "tie"
    assert majority_vote(["win", "win", "loss", "loss"]) == "tie"  # strict: a tie of top counts is a tie
    assert reference_vote(["win", "win", "loss", "loss"]) == "win"  # the authors: the first seen
    assert majority_vote(["win", None]) == "win"  # strict: a failed judge does not vote
    assert reference_vote(["win", None]) == "tie"  # the authors: it votes 0, and 1, 0 all differ
    assert reference_vote([None]) == "tie" and majority_vote([None]) is None
    assert reference_vote([]) is None


def _verdict(k: int, by_position: dict[int, tuple]) -> dict:
    judgments = [{"judge": f"openai:j{i}", "a_position": position, "rating": rating,
                  "outcome": outcome_of(rating, position)}
                 for position, ratings in by_position.items() for i, rating in enumerate(ratings)]
    return {"qid": f"q{k}", "domain": "fiqa", "system_a": "sys", "system_b": "LFRQA", "outcome": "tie",
            "failed": False, "outcome_strict": None, "judgments": judgments}


def test_the_battles_file_votes_each_order_as_the_authors():
    """A pair judged in both orders gives one battle row per order, each that order's authors' vote."""
    three = [s for s in SPLITS if len(s) == 3]
    verdicts = [_verdict(k, {1: s, 2: three[-1 - k]}) for k, s in enumerate(three)]
    run = Run(path=Path("run"), system="sys", opponent="LFRQA", judges=["openai:j0", "openai:j1", "openai:j2"],
              summary={"parse": "reference"}, verdicts=verdicts)
    rows = battle_rows([run])
    assert len(rows) == 2 * len(verdicts)
    winner = {0: "tie", 1: "model_a", 2: "model_b"}  # rating 1: Answer 1 (model_a) is better
    for k, s in enumerate(three):
        for position, ratings in ((1, s), (2, three[-1 - k])):
            [row] = [r for r in rows if r["qid"] == f"q{k}" and r["model_a"] == ("sys" if position == 1 else "LFRQA")]
            assert row["winner"] == winner[authors_vote([0 if v is FAILED else v for v in ratings])], (k, ratings)


def _pair_index(body: dict) -> int:
    return int(re.search(r"question number (\d+)", body["messages"][-1]["content"]).group(1))


#: Ratings of judges j1, j2, j3 per pair: 1,2,0 (all differ: a tie) and 1,1,2 (a 1), and their mirror images.
RATINGS = [(1, 2, 0), (1, 1, 2), (2, 1, 0), (2, 2, 1), (0, 1, 2), (1, 2, 1)]


def test_the_judge_cli_votes_as_the_authors_with_three_judges(tmp_path, capsys):
    n = len(RATINGS)
    questions = [f"question number {i}" + " more" * (i % 3) for i in range(n)]
    mine = write_jsonl(tmp_path / "a.jsonl", [{"qid": f"q{i}", "question": q, "answer": f"mine {i}"}
                                              for i, q in enumerate(questions)])
    theirs = write_jsonl(tmp_path / "b.jsonl", [{"qid": f"q{i}", "question": q, "answer": f"theirs {i}"}
                                                for i, q in enumerate(questions)])

    def reply(body, attempt):
        return f"<rating>{RATINGS[_pair_index(body)][int(body['model'][1:]) - 1]}</rating>"

    with OpenAIServer(reply) as server:
        code, stdout, err = cli(["judge", "--predictions", mine, "--versus", theirs, "--judge", "openai:j1",
                                 "--judge", "openai:j2", "--judge", "openai:j3", "--base-url", server.base_url,
                                 "--cache-dir", tmp_path / "cache", "--out", tmp_path / "run", "--parse", "reference",
                                 "--no-progress"], capsys)
    assert code == 0, err
    verdicts = {v["qid"]: v for v in map(json.loads, (tmp_path / "run" / "verdicts.jsonl").read_text().splitlines())}
    for i, (ratings, question) in enumerate(zip(RATINGS, questions)):
        [position] = answer_positions("paper", f"q{i}", question)
        assert verdicts[f"q{i}"]["outcome"] == outcome_of(authors_vote(list(ratings)), position), ratings
    [p1] = answer_positions("paper", "q1", questions[1])
    assert verdicts["q0"]["outcome"] == "tie"  # 1, 2, 0: every vote differs
    assert verdicts["q1"]["outcome"] == ("win" if p1 == 1 else "loss")  # 1, 1, 2: a 1 (Answer 1 better)
    assert {answer_positions("paper", f"q{i}", q)[0] for i, q in enumerate(questions)} == {1, 2}, "both orders seen"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    expected = [outcome_of(authors_vote(list(r)), answer_positions("paper", f"q{i}", q)[0])
                for i, (r, q) in enumerate(zip(RATINGS, questions))]
    assert summary["win_rate"] == pytest.approx(expected.count("win") / n)
    assert summary["win_tie_rate"] == pytest.approx((expected.count("win") + expected.count("tie")) / n)


def test_run_folders_voted_by_the_older_rule_are_re_voted_when_read(tmp_path):
    """A folder written before the authors' rule (all-different votes took the first judge's) reads with the
    authors' vote in the report, the battles file and calibrate, and says so."""
    from metric_arena import JudgeConfig, RunConfig, judge_pairs
    from metric_arena.calibrate import build_card
    from metric_arena.report import build_leaderboard, load_run

    n = len(RATINGS)
    questions = [f"question number {i}" + " more" * (i % 3) for i in range(n)]

    def reply(body, attempt):
        return f"<rating>{RATINGS[_pair_index(body)][int(body['model'][1:]) - 1]}</rating>"

    with OpenAIServer(reply) as server:
        judge_pairs(JudgeInputs(predictions=[f"a{i}" for i in range(n)], references=[f"r{i}" for i in range(n)],
                                questions=questions, ids=[f"q{i}" for i in range(n)], system="sys"),
                    judge=JudgeConfig(["openai:j1", "openai:j2", "openai:j3"],
                                                                       parse="reference"),
                    run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "c"),
                    out=tmp_path / "run")
    path = tmp_path / "run" / "verdicts.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    authors = [row["outcome"] for row in rows]
    for row in rows:  # the older rule: Counter(votes).most_common()[0][0], with no tie for all-different votes
        row["outcome"] = Counter(j["outcome"] for j in row["judgments"]).most_common()[0][0]
    assert [row["outcome"] for row in rows] != authors  # the rules differ on these splits
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))

    run = load_run(tmp_path / "run")
    assert [v["outcome"] for v in run.verdicts] == authors
    assert any("re-voted as the authors' vote" in w for w in run.warnings)
    [entry] = [e for e in build_leaderboard([tmp_path / "run"], n_boot=20).entries if e["system"] == "sys"]
    assert entry["win_rate"] == pytest.approx(authors.count("win") / n)
    assert entry["win_tie_rate"] == pytest.approx((authors.count("win") + authors.count("tie")) / n)
    winners = {r["qid"]: r["winner"] for r in battle_rows([run])}
    assert [winners[f"q{i}"] == "tie" for i in range(n)] == [o == "tie" for o in authors]
    shutil.copytree(tmp_path / "run", tmp_path / "again")
    card, _ = build_card(reference=[tmp_path / "run"], candidate=[tmp_path / "again"], n_boot=20,
                         allow_same_judge=True)  # a copy of the run: the same judge on purpose
    assert card["agreement"] == 1.0
    assert card["win_rate_shift"]["sys"]["reference_win_rate"] == pytest.approx(authors.count("win") / n)
