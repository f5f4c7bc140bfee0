"""Style features by name: ``--style-features fastchat`` rates as FastChat's ``compute_style_control``
would rate the battles file (its formula written out here independently: FastChat's features and
normalisation, a logistic MLE with its L2 penalty on its design matrix, read in
lm-sys/FastChat ``fastchat/serve/monitor/rating_systems.py``, not copied), and a constant feature is
dropped with a note instead of turning every rating into NaN."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re

import numpy as np
import pytest

from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.llm import RetryPolicy
from metric_arena.report import build_leaderboard, load_run, write_battles
from metric_arena.stats import style_controlled_ratings
from tests.openai_server import OpenAIServer
from tests.robustness.helpers import cli, read_jsonl
from metric_arena.judge import JudgeInputs

NO_RETRY = RetryPolicy(max_retries=0, initial=0.0, fail_fast_after=None)
N = 160
_ANSWER = re.compile(r"<answer ([12])>\n(.*?)\n</answer \1>", re.S)
_QUALITY = re.compile(r"Q(-?\d+\.\d+)")


def styled_answer(rng: random.Random, quality: float, *, headers: bool = True) -> str:
    """An answer with a hidden quality, a random length and random markdown."""
    lines = [f"Q{quality + rng.gauss(0, 0.3):.3f} " + " ".join(rng.choice(["fund", "rate", "tax", "cost"])
                                                              for _ in range(rng.randint(5, 60)))]
    if headers and rng.random() < 0.4:
        lines.insert(0, "## Summary")
    lines += [f"- point {k} about it" for k in range(rng.choice([0, 0, 2, 4]))]
    if rng.random() < 0.5:
        lines.append("This is **important** to note.")
    return "\n".join(lines)


def style_judge(body: dict, attempt: int) -> str:
    """A judge that weighs quality, length, lists and bold, with seeded noise."""
    text = body["messages"][-1]["content"]
    answers = dict(_ANSWER.findall(text))
    quality = [float(_QUALITY.search(answers[k]).group(1)) for k in "12"]
    words = [len(answers[k].split()) for k in "12"]
    lists = [answers[k].count("\n- ") for k in "12"]
    bold = [answers[k].count("**") // 2 for k in "12"]
    u = random.Random(hashlib.sha256(text.encode()).hexdigest()).random()
    score = (quality[0] - quality[1] + 1.5 * (words[0] - words[1]) / (sum(words) + 1)
             + 0.8 * (lists[0] - lists[1]) / (sum(lists) + 1) + 0.5 * (bold[0] - bold[1]) / (sum(bold) + 1)
             + math.log(u / (1 - u)))
    return f"<rating>{1 if score > 0.5 else 2 if score < -0.5 else 0}</rating>"


def _judge(tmp_path, name: str, mine: list[str], theirs: list[str], questions: list[str], opponent: str, server):
    judge_pairs(JudgeInputs(predictions=mine, references=theirs, questions=questions,
                            ids=[f"q{i}" for i in range(len(questions))], system=name.split("__")[0],
                            opponent=opponent), judge=JudgeConfig("openai:style"),
                run=RunConfig(base_url=server.base_url, api_key="k", cache_dir=tmp_path / "cache", retry=NO_RETRY),
                out=tmp_path / "runs" / name)


def make_runs(tmp_path, *, headers: bool = True) -> list:
    rng = random.Random(7)
    questions = [f"question {i} about money" + " and more" * (i % 3) for i in range(N)]
    answers = {name: [styled_answer(rng, quality, headers=headers) for _ in range(N)]
               for name, quality in (("LFRQA", 0.0), ("alpha", 0.4), ("beta", -0.1), ("gamma", 0.1))}
    with OpenAIServer(style_judge) as server:
        for name in ("alpha", "beta", "gamma"):
            _judge(tmp_path, name, answers[name], answers["LFRQA"], questions, "LFRQA", server)
        _judge(tmp_path, "alpha__vs__gamma", answers["alpha"], answers["gamma"], questions, "gamma", server)
    return sorted((tmp_path / "runs").glob("*/"))


def fastchat_ratings(rows: list[dict], anchor: str = "LFRQA") -> dict[str, float]:
    """FastChat's style control on battles-file rows, written out: features (tokens, headers, lists, bold),
    each (a - b) / (a + b + 1), centred and divided by its (population) SD; logits ln(10) * (r_a - r_b) +
    features . beta; soft labels 1 / 0.5 / 0; loss = log loss + 0.25 * |params|^2 (its reg=0.5 halved);
    ratings 400 * r + 1000, shifted so that ``anchor`` is at 1000."""
    from scipy.optimize import minimize

    models = sorted({r[k] for r in rows for k in ("model_a", "model_b")})
    index = {m: i for i, m in enumerate(models)}
    columns = []
    for name in ("tokens", "headers", "list_items", "bold"):
        a = np.array([r[f"{name}_a"] for r in rows], dtype=float)
        b = np.array([r[f"{name}_b"] for r in rows], dtype=float)
        diff = (a - b) / (a + b + 1.0)
        columns.append((diff - diff.mean()) / diff.std())
    features = np.column_stack(columns)
    players = np.zeros((len(rows), len(models)))
    for k, r in enumerate(rows):
        players[k, index[r["model_a"]]] += math.log(10.0)
        players[k, index[r["model_b"]]] -= math.log(10.0)
    design = np.hstack([players, features])
    y = np.array([{"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[r["winner"]] for r in rows])

    def loss(params):
        logits = design @ params
        value = np.sum(np.logaddexp(0.0, logits) - y * logits) + 0.25 * params @ params
        grad = design.T @ (1.0 / (1.0 + np.exp(-logits)) - y) + 0.5 * params
        return value, grad

    params = minimize(loss, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B",
                      options={"maxiter": 1000, "gtol": 1e-10}).x
    elo = 400.0 * params[:len(models)] + 1000.0
    return {m: float(elo[i] - elo[index[anchor]] + 1000.0) for m, i in index.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory.mktemp("style"))


def test_fastchat_style_features_rate_as_fastchats_formula_on_the_battles_file(runs, tmp_path):
    n = write_battles([load_run(r) for r in runs], tmp_path / "battles.jsonl")
    rows = read_jsonl(tmp_path / "battles.jsonl")
    assert n == len(rows) == 4 * N and all(r["tokens_a"] is not None for r in rows)
    theirs = fastchat_ratings(rows)
    board = build_leaderboard(runs, style_features="fastchat", n_boot=20)
    ours = {e["system"]: e["style_controlled_rating"] for e in board.entries}
    assert ours["LFRQA"] == 1000.0
    for name in ("alpha", "beta", "gamma"):
        assert ours[name] == pytest.approx(theirs[name], abs=1.0), (name, ours[name], theirs[name])
    assert board.length["style_feature_set"] == "fastchat"
    assert board.length["style_features"] == ["tokens", "headers", "lists", "bold"]
    assert board.length["style_features_dropped"] == []
    assert board.length["n_battles_with_lengths"] == 4 * N
    # the words set is another fit: the feature sets move the ratings
    words = {e["system"]: e["style_controlled_rating"] for e in build_leaderboard(runs, n_boot=20).entries}
    assert max(abs(words[s] - ours[s]) for s in ("alpha", "beta", "gamma")) > 1.0


def test_a_constant_feature_is_dropped_with_a_note(tmp_path):
    runs = make_runs(tmp_path, headers=False)  # no answer has a header: the headers feature is 0 in every battle
    board = build_leaderboard(runs, style_features="fastchat", n_boot=20)
    assert board.length["style_features"] == ["tokens", "lists", "bold"]
    assert board.length["style_features_dropped"] == ["headers"]
    assert "headers: the same in every battle" in board.length["style_features_note"]
    ratings = [e["style_controlled_rating"] for e in board.entries]
    assert all(r is not None and math.isfinite(r) for r in ratings)
    assert set(board.length["style_coefficients"]) == {"tokens", "lists", "bold"}
    assert all(math.isfinite(v) for v in board.length["style_coefficients"].values())


def test_with_every_feature_constant_the_ratings_are_the_plain_fit():
    battles = [("A", "B", "win")] * 30 + [("A", "B", "loss")] * 20 + [("B", "C", "tie")] * 10 + [("C", "A", "win")] * 5
    fit = style_controlled_ratings(battles, np.ones((len(battles), 2)), feature_names=["x", "y"], center=True,
                                   anchor="B", n_boot=10)
    from metric_arena.stats import BattleCounts, fit_bradley_terry

    plain = fit_bradley_terry(BattleCounts.from_battles(battles), anchor="B")
    assert fit["features"] == [] and fit["dropped"] == ["x", "y"] and fit["coefficients"] == {}
    for player, rating in plain.items():
        assert fit["ratings"][player]["rating"] == pytest.approx(rating, abs=0.05)


def test_the_cli_takes_a_style_feature_set_and_names_a_bad_one(runs, tmp_path, capsys):
    code, _, err = cli(["report", *runs, "--out", tmp_path / "lb", "--style-features", "fastchat", "--n-boot", "20",
                        "--no-plots"], capsys)
    assert code == 0, err
    report = json.loads((tmp_path / "lb" / "report.json").read_text())
    assert report["length"]["style_feature_set"] == "fastchat"
    code, out, err = cli(["report", *runs, "--out", tmp_path / "lb2", "--style-features", "chatbot"], capsys)
    assert code == 2 and "'chatbot'" in err and "words, fastchat" in err and "Traceback" not in err
    assert not (tmp_path / "lb2").exists()


def test_answer_style_counts_what_the_patterns_find_on_every_text():
    """Texts without the characters a pattern needs are not scanned by it: the counts stay the patterns' own
    (markdown marks, ASCII and other scripts' digits, newlines and odd spaces, on 20,000 random texts)."""
    from metric_arena import style

    rng = random.Random(7)
    alphabet = ["word", " ", " ", "\n", "\n  ", "#", "## ", "- ", "* ", "+ ", "1. ", "12) ", "٣. ", "３) ", "**",
                "__", "b", "[1]", "[2, 3]", "[", "]", "\u00a0", "\t", ".", ")", "é"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        found = style.answer_style(text)
        assert (found["headers"], found["list_items"], found["bold"], found["citations"]) == (
            len(style._HEADER.findall(text)), len(style._LIST_ITEM.findall(text)), len(style._BOLD.findall(text)),
            len(style._CITATION.findall(text))), text
