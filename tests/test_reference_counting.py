"""``parse="reference"`` counts as the authors' scripts count: a failed request scores 0 (a tie, kept in
every rate), several judges vote as the authors' ``get_majority_vote`` (votes that all differ are a tie,
else ``Counter.most_common()[0]``, the first value seen winning a tie of counts; a failed judge votes 0;
every split of 2 to 5 judges in ``tests/test_reference_vote.py``), and the battles file puts the answer shown first as ``model_a``.

The authors' counting is written out here independently (from ``code/compute_correlation.py`` and
``code/report_results.py`` at the pinned commit, read, not copied) and compared with the package's."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.judge import answer_positions, reference_rating
from metric_arena.llm import RetryPolicy
from metric_arena.report import battle_rows, load_run
from tests.openai_server import OpenAIServer, Reply
from metric_arena.judge import JudgeInputs

NO_RETRY = RetryPolicy(max_retries=0, initial=0.0, fail_fast_after=None)
N = 24
JUDGES = ["openai:j1", "openai:j2", "openai:j3", "openai:j4"]


def _pair_index(body: dict) -> int:
    return int(re.search(r"question number (\d+)", body["messages"][-1]["content"]).group(1))


def scripted(body: dict, attempt: int):
    """Each judge's reply for each pair: ratings 1,1,2,2 (a tie of counts), refusals, replies without a
    tag, a judge that fails outright, and replies with the rating after long reasoning."""
    i, judge = _pair_index(body), body["model"]
    kind = i % 6
    if kind == 0:  # 1,1,2,2: the authors take the first value seen (1)
        return {"j1": "<rating>1</rating>", "j2": "<rating>1</rating>", "j3": "<rating>2</rating>",
                "j4": "<rating>2</rating>"}[judge]
    if kind == 1:  # every judge fails: "FAIL TO GENERATE ANS." scores 0, a tie
        return Reply(status=400)
    if kind == 2:  # one judge fails (votes 0), two say 2, one says 1
        return {"j1": Reply(status=400), "j2": "<rating>2</rating>", "j3": "<rating>2</rating>",
                "j4": "<rating>1</rating>"}[judge]
    if kind == 3:  # no tag: digits in the text vote
        return "I prefer answer 2." if judge in ("j1", "j2") else "Both fine."
    if kind == 4:  # 0,0,1,1 with the failure-free judges: first seen (0)
        return {"j1": "<rating>0</rating>", "j2": "<rating>0</rating>", "j3": "<rating>1</rating>",
                "j4": "<rating>1</rating>"}[judge]
    return "<thinking>" + "reasoning " * 300 + "</thinking><rating>2</rating>"  # long: rating at the end


def authors_outcomes(questions: list[str]) -> list[str]:
    """The authors' counting, written out: each judge's score (0 for a failed request), the vote as
    a tie when every score differs, else ``Counter(scores).most_common()[0][0]``, then the outcome by where the system's answer was shown."""
    outcomes = []
    for i, question in enumerate(questions):
        scores = []
        for judge in JUDGES:
            reply = scripted({"model": judge.split(":")[1],
                              "messages": [{"content": f"question number {i}"}]}, 1)
            scores.append(0 if isinstance(reply, Reply) else reference_rating(reply))
        vote = 0 if len(set(scores)) == len(scores) else Counter(scores).most_common()[0][0]
        [position] = answer_positions("paper", f"q{i}", question)
        outcomes.append("tie" if vote == 0 else "win" if vote == position else "loss")
    return outcomes


@pytest.fixture
def run_dir(tmp_path):
    questions = [f"question number {i}" + " more" * (i % 2) for i in range(N)]
    with OpenAIServer(scripted) as server:
        result = judge_pairs(JudgeInputs(predictions=[f"answer {i}" for i in range(N)],
                                         references=[f"reference {i}" for i in range(N)], questions=questions,
                                         ids=[f"q{i}" for i in range(N)], system="sys"),
                             judge=JudgeConfig(JUDGES, parse="reference"),
                             run=RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=tmp_path / "c",
                                           retry=NO_RETRY), out=tmp_path / "run")
    return result, questions, tmp_path / "run"


def test_reference_counting_equals_the_authors(run_dir):
    result, questions, _ = run_dir
    expected = authors_outcomes(questions)
    assert [v["outcome"] for v in result["verdicts"]] == expected
    n = len(expected)
    assert result["win_rate"] == pytest.approx(expected.count("win") / n)  # failed pairs stay in the denominator
    assert result["win_tie_rate"] == pytest.approx((expected.count("win") + expected.count("tie")) / n)
    assert result["n_failed"] == N // 6 and result["n_failed_as_tie"] == N // 6  # still reported
    assert result["counting"].startswith("reference")
    failed = [v for v in result["verdicts"] if v.get("failed_as_tie")]
    assert len(failed) == N // 6 and all(v["outcome"] == "tie" and v["failed"] for v in failed)


def test_the_report_counts_the_same_way(run_dir):
    from metric_arena.report import build_leaderboard

    result, _, folder = run_dir
    board = build_leaderboard([folder], n_boot=20)
    row = next(e for e in board.entries if e["system"] == "sys")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["n_failed"] == N // 6 and summary["win_rate"] == pytest.approx(result["win_rate"])
    assert row["win_rate"] == pytest.approx(result["win_rate"]) and row["n_failed"] == N // 6
    assert row["win_tie_rate"] == pytest.approx(result["win_tie_rate"])


def test_battles_put_the_answer_shown_first_as_model_a_and_failed_pairs_as_ties(run_dir):
    result, questions, folder = run_dir
    rows = battle_rows([load_run(folder)])
    assert len(rows) == N  # failed pairs are tie rows under reference counting
    by_qid = {r["qid"]: r for r in rows}
    for verdict, question in zip(result["verdicts"], questions):
        [position] = answer_positions("paper", verdict["qid"], question)
        row = by_qid[verdict["qid"]]
        first = "sys" if position == 1 else "LFRQA"
        assert row["model_a"] == first and row["first_shown"] == "model_a"
        expected = {"tie": "tie", "win": "model_a" if position == 1 else "model_b",
                    "loss": "model_b" if position == 1 else "model_a"}[verdict["outcome"]]
        assert row["winner"] == expected
    assert {r["model_a"] for r in rows} == {"sys", "LFRQA"}  # both players appear as model_a


def test_strict_parsing_keeps_failed_pairs_out(tmp_path):
    questions = [f"question number {i}" for i in range(6)]
    with OpenAIServer(scripted) as server:
        result = judge_pairs(JudgeInputs(predictions=[f"a{i}" for i in range(6)],
                                         references=[f"r{i}" for i in range(6)], questions=questions,
                                         ids=[f"q{i}" for i in range(6)]), judge=JudgeConfig(JUDGES),
                             run=RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=tmp_path / "c",
                                           retry=NO_RETRY))
    assert "n_failed_as_tie" not in result and result["n_failed"] == 2  # every judge fails (1), no rating tag (3)
    assert result["verdicts"][0]["outcome"] == "tie"  # strict: 1,1,2,2 is a tie of top counts
    assert "counting" not in result


def test_the_battles_file_fits_as_fastchat_fits_it(tmp_path):
    """The battles file read as FastChat's 2024 ``compute_elo_mle_with_tie`` reads it (pivot tables of
    model_a wins, model_b wins and ties, indexed by model_a/model_b) has no missing cell, and an MLE on
    that design gives the package's Bradley–Terry ratings."""
    pd = pytest.importorskip("pandas")
    optimize = pytest.importorskip("scipy.optimize")
    import numpy as np

    from metric_arena.stats import BattleCounts, fit_bradley_terry

    questions = [f"question number {i}" + " more" * (i % 2) for i in range(40)]

    def lopsided(body, attempt):  # ties, first-shown wins and second-shown wins, each in both orders
        i = _pair_index(body)
        return f"<rating>{i % 3}</rating>" if i % 4 else "<rating>1</rating>"

    with OpenAIServer(lopsided) as server:
        judge_pairs(JudgeInputs(predictions=[f"a{i}" for i in range(40)], references=[f"r{i}" for i in range(40)],
                                questions=questions, ids=[f"q{i}" for i in range(40)], system="sys"),
                    judge=JudgeConfig("openai:j", order="both"),
                    run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "c", retry=NO_RETRY),
                    out=tmp_path / "run")
    rows = battle_rows([load_run(tmp_path / "run")])
    assert len(rows) == 80  # one row per order
    df = pd.DataFrame(rows)
    a_win = pd.pivot_table(df[df.winner == "model_a"], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
    b_win = pd.pivot_table(df[df.winner == "model_b"], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
    tie = pd.pivot_table(df[df.winner == "tie"], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
    tie = tie + tie.T
    table = a_win * 2 + b_win.T * 2 + tie  # FastChat's weighting: a win counts twice, a tie once each way
    assert not table.isna().any().any()  # both players appear as model_a: no cell silently dropped

    players = sorted(table.index)
    weights = table.reindex(index=players, columns=players).fillna(0).to_numpy()

    def loss(theta):
        diff = theta[:, None] - theta[None, :]
        return float(np.sum(weights * np.logaddexp(0.0, -diff)))

    theta = optimize.minimize(loss, np.zeros(len(players)), method="BFGS", options={"gtol": 1e-10}).x
    elo = 400.0 * theta / np.log(10.0)
    elo = dict(zip(players, elo - elo[players.index("LFRQA")] + 1000.0))
    ours = fit_bradley_terry(BattleCounts.from_battles(
        [(r["model_a"], r["model_b"], {"model_a": "win", "model_b": "loss", "tie": "tie"}[r["winner"]]) for r in rows]),
        anchor="LFRQA")
    assert ours["sys"] == pytest.approx(elo["sys"], abs=1.0)


def test_the_no_answer_view_states_its_rule_and_offers_the_reference_scripts_rule(tmp_path):
    from metric_arena.report import build_leaderboard

    long_refusal = "I couldn't find an answer in the passages. " + "Still, here is what they say about it. " * 6
    answers = ["I couldn't find an answer.", long_refusal, "I couldn’t find an answer.", "Paris."]
    with OpenAIServer() as server:
        result = judge_pairs(JudgeInputs(predictions=answers, references=["r"] * 4,
                                         questions=[f"question {i}" for i in range(4)],
                                         ids=[f"q{i}" for i in range(4)], system="sys"), judge="openai:j",
                             run=RunConfig(base_url=server.base_url, api_key="k",
                                                             cache_dir=tmp_path / "c"), out=tmp_path / "run")
    flags = [(v["no_answer_a"], bool(v.get("no_answer_a_reference"))) for v in result["verdicts"]]
    assert flags == [(True, True), (False, True), (True, False), (False, False)]
    view = build_leaderboard([tmp_path / "run"], n_boot=20).no_answer
    assert "at most 30 words" in view["rule"] and "failed pairs included" in view["denominator"]
    [system] = view["systems"]
    assert system["no_answer_rate"] == 0.5 and system["no_answer_rate_reference"] == 0.5
    assert system["n_no_answer_reference"] == 2


@pytest.mark.parametrize("parse", ["strict", "reference"])
def test_a_long_reply_is_read_whole_before_it_is_cut_for_storage(tmp_path, parse):
    reply = "<thinking>" + "the second answer cites more sources " * 243 + "</thinking><rating>2</rating>"
    assert 9_000 < len(reply) < 9_100  # longer than the 8,192 characters kept for a 256-token judgment
    with OpenAIServer(lambda body, attempt: reply) as server:
        run = RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "c", retry=NO_RETRY)
        first = judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["one two"], ids=["q"]),
                            judge=JudgeConfig("openai:j", parse=parse), run=run)
        again = judge_pairs(JudgeInputs(predictions=["a"], references=["b"], questions=["one two"], ids=["q"]),
                            judge=JudgeConfig("openai:j", parse=parse), run=run)
    for result in (first, again):  # fresh, then from the cache
        [judgment] = result["verdicts"][0]["judgments"]
        assert judgment["rating"] == 2 and judgment["oversized"] == len(reply) and len(judgment["raw"]) == 8192
    assert first["verdicts"][0]["outcome"] == "loss" and again["n_sent"] == 0  # "one two": the prediction is Answer 1
