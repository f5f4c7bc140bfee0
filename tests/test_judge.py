"""The pairwise judge against a real local OpenAI-compatible server (no mocks of our code)."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import time
from collections import Counter

import pytest

from lfrqa.errors import RagQaArenaError
from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.judge import parse_rating
from metric_arena.llm import AuthenticationFailed, ModelNotFound
from metric_arena.judge import answer_positions
from metric_arena.stats import majority_vote
from metric_arena.llm import RetryPolicy
from tests.openai_server import OpenAIServer, Reply
from metric_arena.judge import JudgeInputs

INPUT_FIELDS = {field.name for field in dataclasses.fields(JudgeInputs)}  # a call's keywords that go into JudgeInputs

FAST_RETRY = RetryPolicy(max_retries=4, initial=0.01, multiplier=1.0, jitter=0.0)
KEY = "sk-test-SECRET-0123456789"


JUDGE = "openai:judge-model"


def run(server, predictions, references, questions, tmp_path, *, judge=JUDGE, retry=FAST_RETRY, max_concurrency=16,
        **kwargs):
    config = RunConfig(base_url=server.base_url, api_key=KEY, cache_dir=tmp_path / "cache", retry=retry,
                       max_concurrency=max_concurrency)
    fields = {name: kwargs.pop(name) for name in list(kwargs) if name in INPUT_FIELDS}
    return judge_pairs(JudgeInputs(predictions=predictions, references=references, questions=questions, **fields),
                       judge=judge, run=config, **kwargs)


def user_turn(body: dict) -> str:
    return body["messages"][-1]["content"]


def rating_reply(rating: int) -> str:
    return f"<thinking>Scripted.</thinking><rating>{rating}</rating>"


# --------------------------------------------------------------------------------------------
# Byte-identical requests, built independently of the package (configobj + plain string ops)
# --------------------------------------------------------------------------------------------
def reference_messages(data_dir, question: str, response1: str, response2: str) -> list[dict]:
    configobj = pytest.importorskip("configobj")
    with open(data_dir / "templates/pairwise_lfrqa_system.txt", encoding="utf-8") as handle:
        system = "".join(handle.readlines())
    template = configobj.ConfigObj(str(data_dir / "templates/pairwise_lfrqa.cfg"))["templateStr"]
    with open(data_dir / "templates/pairwise_lfrqa_examples.json", encoding="utf-8") as handle:
        examples = json.load(handle)

    def fill(q, r1, r2):
        # split on the placeholders so inserted values are never substituted again
        head, rest = template.split("{x.question}")
        middle, tail = rest.split("{x.response1}")
        middle2, tail2 = tail.split("{x.response2}")
        return head + q + middle + r1 + middle2 + r2 + tail2

    messages = [{"role": "system", "content": system}]
    for ex in examples:
        messages.append({"role": "user", "content": fill(ex["query"], ex["response_1"], ex["response_2"])})
        messages.append({"role": "assistant", "content": f"<thinking>{ex['thinking']}</thinking><rating>{ex['label']}</rating>"})
    messages.append({"role": "user", "content": fill(question, response1, response2)})
    return messages


# prediction as a system wrote it, the same after the reference's cleanup, and the reference answer
PAIRS = [
    ("q1", "What is the capital of France?", "<thinking>Passage 1.</thinking>\nAnswer: Paris.", "Paris.",
     "The capital of France is Paris."),
    ("q2", "Why is the sky blue?", "Thinking: scattering. Answer: Rayleigh scattering {x.response2}.",
     "Rayleigh scattering {x.response2}.", "<answer>Because of Rayleigh scattering.</answer>"),
    ("q3", "How do I  fix a flat tire?", "  Patch it. ", "Patch it.", "Answer: Remove the wheel and patch the tube."),
    ("q4", "best index fund", "FAIL TO GENERATE ANS.", "I couldn't find an answer.", "A broad, low-fee index fund."),
]
CLEAN_REFS = {"q1": "The capital of France is Paris.", "q2": "Because of Rayleigh scattering.",
              "q3": "Remove the wheel and patch the tube.", "q4": "A broad, low-fee index fund."}


@pytest.mark.parametrize("order", ["paper", "random", "both"])
def test_requests_are_byte_identical_to_the_reference(lfrqa_data_dir, tmp_path, order):
    seed = 7
    with OpenAIServer() as server:
        run(server, [p[2] for p in PAIRS], [p[4] for p in PAIRS], [p[1] for p in PAIRS], tmp_path,
            ids=[p[0] for p in PAIRS], judge=JudgeConfig(JUDGE, order=order, seed=seed))
        received = server.requests
    expected = []
    for qid, question, _, pred, _ in PAIRS:
        ref = CLEAN_REFS[qid]
        if order == "paper":
            orders = [len(question.split(" ")) % 2 == 0]
        elif order == "random":
            orders = [random.Random(f"{seed}:{qid}").random() < 0.5]
        else:
            orders = [True, False]
        for prediction_first in orders:
            r1, r2 = (pred, ref) if prediction_first else (ref, pred)
            expected.append({"model": "judge-model", "messages": reference_messages(lfrqa_data_dir, question, r1, r2),
                             "max_tokens": 256, "temperature": 0.0, "top_p": 1.0})
    canon = lambda body: json.dumps(body, sort_keys=True)  # noqa: E731
    assert Counter(map(canon, received)) == Counter(map(canon, expected))


def test_paper_order_rule():
    assert answer_positions("paper", "x", "two words") == [1]
    assert answer_positions("paper", "x", "three words here") == [2]
    assert answer_positions("paper", "x", "two  spaces") == [2]  # split(' ') counts the empty string
    assert answer_positions("both", "x", "q") == [1, 2]
    with pytest.raises(ValueError, match="'first'.*paper, random, both"):
        answer_positions("first", "x", "q")


def test_random_order_is_seeded_per_id_and_recorded(tmp_path):
    ids = [f"id{i}" for i in range(40)]
    with OpenAIServer() as server:
        res = run(server, ["a"] * 40, ["b"] * 40, ["q"] * 40, tmp_path, ids=ids,
                  judge=JudgeConfig(JUDGE, order="random", seed=3))
    positions = [v["judgments"][0]["a_position"] for v in res["verdicts"]]
    assert positions == [1 if random.Random(f"3:{i}").random() < 0.5 else 2 for i in ids]
    assert 5 < positions.count(1) < 35
    # default reply rates answer 1 best: the prediction wins exactly where it was shown first
    assert [v["outcome"] for v in res["verdicts"]] == ["win" if p == 1 else "loss" for p in positions]


# --------------------------------------------------------------------------------------------
# Strict parsing
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, rating",
    [
        ("<thinking>x</thinking><rating>1</rating>", 1),
        ("<rating>0</rating>", 0),
        ("<rating> 2\n</rating>", 2),
        ("<rating>2</rating> and again <rating>2</rating>", 2),
        ("no tag, but answer 2 is better", None),
        ("<thinking>answer 1 is better</thinking>", None),
        ("<rating>3</rating>", None),
        ("<rating>1</rating><rating>2</rating>", None),
        ("<rating>1 or 2</rating>", None),
        ("<rating>1.</rating>", None),
        ("<rating></rating>", None),
        ("<rating>1", None),
        ("<Rating>1</Rating>", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_rating_is_strict(text, rating):
    assert parse_rating(text) == rating


def test_invalid_reply_is_asked_once_more_then_the_pair_fails(tmp_path):
    def reply(body, attempt):
        question = user_turn(body)
        if "retry-me" in question:
            return "I prefer answer 2." if attempt == 1 else rating_reply(0)
        if "hopeless" in question:
            return "<rating>3</rating> maybe 2"
        return rating_reply(1)

    with OpenAIServer(reply) as server:
        res = run(server, ["a", "a", "a"], ["b", "b", "b"], ["retry-me now", "hopeless one", "fine ok"], tmp_path)
        bodies = server.requests
    by_q = Counter(user_turn(b).split("<query>\n")[1].split("\n")[0] for b in bodies)
    assert by_q == {"retry-me now": 2, "hopeless one": 2, "fine ok": 1}
    retry, hopeless, fine = res["verdicts"]
    assert retry["outcome"] == "tie" and retry["judgments"][0]["attempts"] == 2
    assert hopeless["outcome"] is None and hopeless["failed"] is True
    assert hopeless["judgments"][0]["rating"] is None and hopeless["judgments"][0]["attempts"] == 2
    assert hopeless["judgments"][0]["raw"] == "<rating>3</rating> maybe 2"
    assert res["n"] == 3 and res["n_failed"] == 1 and res["n_judged"] == 2
    assert res["tie_rate"] == 0.5  # the failed pair is in no rate
    assert res["errors"]["invalid_reply"] == 3
    # the re-ask is the same request (attempt lives in the cache key only)
    retry_bodies = [b for b in bodies if "retry-me" in user_turn(b)]
    assert retry_bodies[0] == retry_bodies[1]


def test_resumed_run_skips_answered_pairs_and_reasks_failed_ones(tmp_path):
    def reply(body, attempt):
        return "no rating" if "hopeless" in user_turn(body) else rating_reply(2)

    questions = ["hopeless one", "fine ok", "also fine"]
    with OpenAIServer(reply) as server:
        first = run(server, ["a"] * 3, ["b"] * 3, questions, tmp_path)
        server.clear()
        second = run(server, ["a"] * 3, ["b"] * 3, questions, tmp_path)
        assert len(server.requests) == 1  # only the re-ask of the failed pair; its first attempt is known
        assert "hopeless" in user_turn(server.requests[0])
    assert [v["outcome"] for v in first["verdicts"]] == [v["outcome"] for v in second["verdicts"]]
    assert second["n_cached"] == 3 and second["n_sent"] == 1


def test_second_run_is_answered_from_the_cache(tmp_path):
    n = 30
    with OpenAIServer(latency=0.01) as server:
        first = run(server, [f"p{i}" for i in range(n)], [f"r{i}" for i in range(n)], [f"q {i}" for i in range(n)],
                    tmp_path, judge=JudgeConfig(JUDGE, order="both"))
        assert len(server.requests) == 2 * n
        server.clear()
        second = run(server, [f"p{i}" for i in range(n)], [f"r{i}" for i in range(n)], [f"q {i}" for i in range(n)],
                     tmp_path, judge=JudgeConfig(JUDGE, order="both"))
        assert server.requests == []
    assert second["n_sent"] == 0 and second["n_cached"] == 2 * n
    assert all(j["cached"] for v in second["verdicts"] for j in v["judgments"])
    strip = lambda vs: [{**v, "judgments": [{**j, "cached": None} for j in v["judgments"]]} for v in vs]  # noqa: E731
    assert strip(first["verdicts"]) == strip(second["verdicts"])


# --------------------------------------------------------------------------------------------
# Errors and retries
# --------------------------------------------------------------------------------------------
def test_429_and_500_are_retried_and_counted(tmp_path):
    def reply(body, attempt):
        question = user_turn(body)
        if "limit-after" in question and attempt == 1:
            return Reply(status=429, headers={"Retry-After": "0"})
        if "limit-plain" in question and attempt <= 2:
            return Reply(status=429)
        if "server" in question and attempt == 1:
            return Reply(status=500)
        if "drop" in question and attempt == 1:
            return Reply(status=-1)
        if "broken" in question and attempt == 1:
            return Reply.malformed()
        if "empty" in question and attempt == 1:
            return Reply.empty_choices()
        return rating_reply(1)

    questions = ["limit-after a", "limit-plain a", "server a", "drop a", "broken a", "empty a", "ok a"]
    with OpenAIServer(reply) as server:
        res = run(server, ["p"] * 7, ["r"] * 7, questions, tmp_path)
    assert res["n_failed"] == 0
    assert res["errors"]["429"] == 3 and res["errors"]["500"] == 1 and res["errors"]["connection"] == 1
    assert res["errors"]["malformed"] == 1 and res["errors"]["empty_choices"] == 1
    attempts = {q: v["judgments"][0]["attempts"] for q, v in zip(questions, res["verdicts"])}
    # transport retries are not re-asks; a malformed/empty body is a failed attempt and is re-asked
    assert attempts == {"limit-after a": 1, "limit-plain a": 1, "server a": 1, "drop a": 1,
                        "broken a": 2, "empty a": 2, "ok a": 1}


def test_retry_after_is_honoured(tmp_path):
    def reply(body, attempt):
        return Reply(status=429, headers={"Retry-After": "1"}) if attempt == 1 else rating_reply(1)

    with OpenAIServer(reply) as server:
        start = time.monotonic()
        res = run(server, ["p"], ["r"], ["q q"], tmp_path, retry=RetryPolicy(initial=0.0, jitter=0.0))
        elapsed = time.monotonic() - start
    assert res["n_failed"] == 0 and res["errors"] == {"429": 1}
    assert 0.95 <= elapsed < 5


def test_exhausted_retries_fail_the_pair_not_the_run(tmp_path):
    def reply(body, attempt):
        return Reply(status=503) if "down" in user_turn(body) else rating_reply(1)

    with OpenAIServer(reply) as server:
        res = run(server, ["p", "p"], ["r", "r"], ["down now", "up now"], tmp_path,
                  retry=RetryPolicy(max_retries=2, initial=0.0, jitter=0.0))
    assert [v["failed"] for v in res["verdicts"]] == [True, False]
    assert res["errors"]["503"] == 3
    assert "503" in res["verdicts"][0]["judgments"][0]["error"]


@pytest.mark.parametrize("status, error", [(401, AuthenticationFailed), (403, AuthenticationFailed), (404, ModelNotFound)])
def test_auth_and_missing_model_fail_fast_without_the_key(tmp_path, status, error):
    with OpenAIServer(lambda body, attempt: Reply(status=status)) as server:
        start = time.monotonic()
        with pytest.raises(error) as caught:
            run(server, ["p"] * 200, ["r"] * 200, [f"q{i}" for i in range(200)], tmp_path, max_concurrency=4)
        assert time.monotonic() - start < 5
        assert len(server.requests) <= 4  # stopped at once: the other 196 pairs were never sent
        message = str(caught.value)
        assert server.base_url in message and "judge-model" in message
        assert KEY not in message
    with sqlite3.connect(tmp_path / "cache" / "completions.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] == 0


def test_fatal_error_keeps_the_verdicts_written_so_far(tmp_path):
    state = {"healthy": False}

    def reply(body, attempt):
        if not state["healthy"] and "q5" in user_turn(body):
            return Reply(status=401)
        return rating_reply(1)

    questions = [f"q{i} x" for i in range(10)]
    out = tmp_path / "run"
    with OpenAIServer(reply) as server:
        with pytest.raises(AuthenticationFailed):
            run(server, ["p"] * 10, ["r"] * 10, questions, tmp_path, out=out, max_concurrency=1)
        lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
        assert [v["qid"] for v in lines] == ["0", "1", "2", "3", "4"]
        assert not (out / "summary.json").exists()
        state["healthy"] = True
        server.clear()
        res = run(server, ["p"] * 10, ["r"] * 10, questions, tmp_path, out=out, max_concurrency=1)
        assert len(server.requests) == 5  # only the pairs not answered before
    lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [v["qid"] for v in lines] == [str(i) for i in range(10)]  # no duplicates, input order
    assert json.loads((out / "summary.json").read_text())["n"] == 10 == res["n"]


# --------------------------------------------------------------------------------------------
# Verdicts, several judges, order "both"
# --------------------------------------------------------------------------------------------
def test_run_folder_follows_the_contract(tmp_path):
    out = tmp_path / "runs" / "my-system"
    with OpenAIServer() as server:
        res = run(server, ["p1", "I couldn't find an answer.", "p3"], ["r1", "r2", "r3"], ["a b", "a b c", "a b"],
                  tmp_path, ids=["x1", "x2", "x3"], domains=["fiqa", "fiqa", "science"], out=out)
    lines = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert lines == res["verdicts"]
    first = lines[0]
    assert set(first) == {"qid", "domain", "system_a", "system_b", "outcome", "failed", "flipped", "no_answer_a",
                          "judgments", "style_a", "style_b"}
    assert first["system_a"] == "my-system" and first["system_b"] == "LFRQA" and first["flipped"] is None
    assert set(first["judgments"][0]) == {"judge", "a_position", "rating", "outcome", "raw", "attempts", "cached"}
    assert [v["no_answer_a"] for v in lines] == [False, True, False]
    summary = json.loads((out / "summary.json").read_text())
    for field in ("system", "opponent", "judges", "order", "seed", "n", "n_failed", "win_rate", "tie_rate", "loss_rate",
                  "win_tie_rate", "win_rate_ci", "win_tie_rate_ci", "no_answer_rate", "per_domain", "created_at",
                  "package_version", "errors"):
        assert field in summary
    assert summary["judges"] == ["openai:judge-model"] and summary["system"] == "my-system"
    assert summary["no_answer_rate"] == pytest.approx(1 / 3)
    assert set(summary["per_domain"]) == {"fiqa", "science"} and summary["per_domain"]["fiqa"]["n"] == 2
    # paper order: 2 words -> prediction first -> rating 1 is a win; 3 words -> a loss
    assert [v["outcome"] for v in lines] == ["win", "loss", "win"]
    assert "api_key" not in json.dumps(summary) and KEY not in (out / "verdicts.jsonl").read_text()


def test_order_both_counts_position_flips(tmp_path):
    def reply(body, attempt):
        question = user_turn(body)
        if "biased" in question:
            return rating_reply(1)  # always the first answer: flips with the order
        if "steady" in question:  # always the prediction, wherever it is
            return rating_reply(1 if "<answer 1>\nPRED\n" in question else 2)
        return rating_reply(0)

    with OpenAIServer(reply) as server:
        res = run(server, ["PRED"] * 4, ["REF"] * 4, ["biased a", "steady a", "tied a", "steady b"], tmp_path,
                  judge=JudgeConfig(JUDGE, order="both"), domains=["d1", "d1", "d2", "d2"])
    assert [v["outcome"] for v in res["verdicts"]] == ["tie", "win", "tie", "win"]
    assert [v["flipped"] for v in res["verdicts"]] == [True, False, False, False]
    assert sorted(j["a_position"] for j in res["verdicts"][0]["judgments"]) == [1, 2]
    assert res["position_flip_rate"] == 0.25
    assert res["per_domain"]["d1"]["position_flip_rate"] == 0.5


def test_several_judges_vote_and_keep_their_verdicts(tmp_path):
    def reply(body, attempt):
        model, question = body["model"], user_turn(body)
        if model == "broken":
            return "no rating at all"
        if "split" in question:
            return rating_reply({"j1": 1, "j2": 2, "j3": 0}[model])
        return rating_reply(2 if model == "j3" else 1)  # j1, j2 say answer 1; j3 says answer 2

    with OpenAIServer(reply) as server:
        res = run(server, ["p"] * 3, ["r"] * 3, ["majority a", "split a", "majority b c"], tmp_path,
                  judge=["openai:j1", "openai:j2", "openai:j3", "openai:broken"])
    majority, split, majority_b = res["verdicts"]
    assert majority["outcome"] == "win"  # prediction first (2 words): j1, j2 win, j3 loss, broken excluded
    assert majority_b["outcome"] == "loss"  # prediction second: j1, j2 loss, j3 win
    assert split["outcome"] == "tie"  # win, loss, tie: no majority
    assert [j["judge"] for j in majority["judgments"]] == ["openai:j1", "openai:j2", "openai:j3", "openai:broken"]
    assert majority["judgments"][3]["outcome"] is None and majority["judgments"][3]["attempts"] == 2
    assert res["judges"] == ["openai:j1", "openai:j2", "openai:j3", "openai:broken"]
    assert res["per_judge"]["openai:broken"]["n_failed"] == 3
    assert res["per_judge"]["openai:j3"]["win_rate"] == pytest.approx(1 / 3)


def test_all_judges_failed_means_a_failed_pair(tmp_path):
    with OpenAIServer(lambda body, attempt: "nothing") as server:
        res = run(server, ["p"], ["r"], ["q"], tmp_path, judge=["openai:a", "openai:b"])
    assert res["verdicts"][0]["failed"] and res["n_failed"] == 1
    assert res["win_rate"] != res["win_rate"]  # nan: no judged pair


def test_majority_vote_rules():
    assert majority_vote(["win"]) == "win"
    assert majority_vote(["win", "loss"]) == "tie"
    assert majority_vote(["win", None, "win", "loss"]) == "win"
    assert majority_vote(["tie", "tie", "win"]) == "tie"
    assert majority_vote([None]) is None


# --------------------------------------------------------------------------------------------
# Concurrency and input checks
# --------------------------------------------------------------------------------------------
def test_requests_run_concurrently(tmp_path):
    n = 40
    with OpenAIServer(latency=0.2) as server:
        start = time.monotonic()
        res = run(server, ["p"] * n, ["r"] * n, [f"q{i}" for i in range(n)], tmp_path, max_concurrency=20)
        elapsed = time.monotonic() - start
    assert res["n_failed"] == 0 and res["n_sent"] == n
    assert elapsed < 2.5  # one at a time would take 8 s


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"predictions": ["a"], "references": ["b", "c"]}, ValueError, "references has 2 entries"),
        ({"predictions": [None]}, TypeError, r"predictions\[0\] is NoneType"),
        ({"ids": ["x", "x"], "predictions": ["a", "b"], "references": ["c", "d"], "questions": ["q", "r"]},
         ValueError, "Duplicate id 'x'"),
        ({"judge": "gpt-4o"}, ValueError, "'<backend>:<model>'"),
        ({"judge": "claude:x"}, ValueError, "Unknown backend 'claude'"),
        ({"domains": ["d", None]}, ValueError, "domains has 2 entries"),
    ],
)
def test_bad_input_is_named(tmp_path, kwargs, error, match):
    args = {"predictions": ["a"], "references": ["b"], "questions": ["q"]}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        judge_pairs(JudgeInputs(**{name: args.pop(name) for name in list(args) if name in INPUT_FIELDS}),
                    run=RunConfig(base_url="http://127.0.0.1:9/v1", api_key="x", cache_dir=tmp_path), **args)


def test_an_unknown_order_is_named_when_the_judge_config_is_built():
    with pytest.raises(ValueError, match="Unknown order policy 'sideways'"):
        JudgeConfig(JUDGE, order="sideways")


def test_empty_answer_is_judged(tmp_path):
    with OpenAIServer() as server:
        res = run(server, [""], ["r"], ["q q"], tmp_path)
        assert "<answer 1>\n\n</answer 1>" in user_turn(server.requests[0])
    assert res["n_failed"] == 0 and res["verdicts"][0]["no_answer_a"] is False


def test_unwritable_run_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with OpenAIServer() as server:
        with pytest.raises(RagQaArenaError, match="cannot write to .*a-file/run: .*a-file is a file, not a folder"):
            run(server, ["p"], ["r"], ["q"], tmp_path, out=blocker / "run")
        assert server.requests == []
