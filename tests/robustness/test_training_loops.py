"""Training loops survive the judge: the reward scores None (never raises) when the judge is down at
the start of a call, dies in the middle of one or hangs, each call within a bounded wait; the
callback says a missing tokenizer when it is attached, and an evaluation that cannot run is a
warning while training goes on. Real local servers, a real transformers Trainer."""

from __future__ import annotations

import logging
import threading
import time

import pytest

import metric_arena
from metric_arena import RunConfig
from metric_arena.llm import RetryPolicy
from metric_arena.train import reward_function
from tests.openai_server import OpenAIServer, Reply

RATED = "<thinking>ok</thinking><rating>1</rating>"


def columns(n: int) -> dict:
    return {"question": [f"question {i}" for i in range(n)], "answer": [f"Reference {i}." for i in range(n)],
            "qid": [f"q{i}" for i in range(n)]}


def closed_url() -> str:
    """The URL of a port nothing listens on any more."""
    with OpenAIServer() as server:
        url = server.base_url
    return url


def reward_on(url: str, tmp_path, **run) -> metric_arena.train.ArenaReward:
    return reward_function(judge="openai:judge",
                           run=RunConfig(base_url=url, api_key="sk-local", cache_dir=tmp_path / "cache", **run))


def test_a_judge_down_at_the_start_of_a_call_scores_none_and_the_next_call_works(tmp_path, caplog):
    reward = reward_on(closed_url(), tmp_path, retry=RetryPolicy(fail_fast_after=1.0, initial=0.1))
    with caplog.at_level(logging.WARNING, logger="metric_arena.train"):
        scores = reward(["p"] * 4, [f"answer {i}" for i in range(4)], **columns(4))
    assert scores == [None] * 4
    assert reward.counts["failed"] == 4 and reward.errors["unreachable"] == 1
    assert "the judge could not be used" in caplog.text and "training goes on" in caplog.text

    down = threading.Event()
    down.set()
    with OpenAIServer(lambda body, attempt: Reply(status=-1) if down.is_set() else RATED) as server:
        reward = reward_on(server.base_url, tmp_path, retry=RetryPolicy(fail_fast_after=1.0, initial=0.1))
        assert reward(["p"] * 2, ["a", "b"], **columns(2)) == [None, None]  # connections dropped: down
        down.clear()
        assert reward(["p"] * 2, ["a", "b"], **columns(2)) == [1.0, 1.0]  # back: the next call scores


def test_a_refused_key_scores_none_instead_of_raising(tmp_path):
    with OpenAIServer(lambda body, attempt: Reply(status=401)) as server:
        reward = reward_on(server.base_url, tmp_path)
        assert reward(["p"], ["a"], **columns(1)) == [None]
    assert reward.errors["auth"] == 1


def test_a_judge_dying_mid_call_costs_a_bounded_wait(tmp_path):
    """The server answers a few requests, then dies (drops every connection, refuses new ones). With
    the training defaults (two quick retries) the call ends within seconds, not minutes."""
    dead = threading.Event()
    answered = []
    holder = {}

    def reply(body, attempt):
        if dead.is_set() or len(answered) >= 3:
            if not dead.is_set():
                dead.set()
                threading.Thread(target=holder["server"].stop).start()  # no new connections either
            return Reply(status=-1)
        answered.append(body)
        return RATED

    with OpenAIServer(reply, latency=0.3) as server:
        holder["server"] = server
        reward = reward_on(server.base_url, tmp_path, max_concurrency=2)
        start = time.monotonic()
        scores = reward(["p"] * 12, [f"answer {i}" for i in range(12)], **columns(12))
        took = time.monotonic() - start
    assert len([s for s in scores if s is not None]) >= 1 and scores.count(None) >= 6, scores
    # default retries: 1 s, 2 s (+ jitter) per request, seconds in all; it was 220 s. Half that is the bound: a
    # fraction of the wait being avoided, not a speed claim (a busy machine passes it many times over)
    assert took < 110, took


def test_a_judge_that_hangs_mid_call_is_cut_at_the_deadline(tmp_path):
    hang = threading.Event()

    def reply(body, attempt):
        if hang.is_set():
            time.sleep(20)  # accepts, never answers in time
        return RATED

    with OpenAIServer(reply) as server:
        reward = reward_on(server.base_url, tmp_path, deadline=2.0, timeout=60, max_concurrency=4)
        assert reward(["p"], ["first"], **columns(1)) == [1.0]
        hang.set()
        scores = reward(["p"] * 4, [f"answer {i}" for i in range(4)], **columns(4))
    # cut at the deadline: a call that waited for the replies (20 s later, within the 60 s timeout) would score them
    assert scores == [None] * 4, scores
    assert reward.errors["deadline"] == 4


def test_the_reward_bounds_each_call_by_default():
    from metric_arena.train import REWARD_DEADLINE

    reward = reward_function(judge="openai:judge", run=RunConfig(base_url="http://127.0.0.1:9/v1", api_key="k"))
    assert reward.judge.run.deadline == REWARD_DEADLINE == 120.0
    assert reward.judge.run.retry.max_retries == 2
    mine = reward_function(judge="openai:judge", run=RunConfig(base_url="http://127.0.0.1:9/v1", deadline=7.0,
                                                               retry=RetryPolicy(max_retries=5)))
    assert mine.judge.run.deadline == 7.0 and mine.judge.run.retry.max_retries == 5  # the user's settings win


# --------------------------------------------------------------------------------------------
# ArenaCallback in a real Trainer
# --------------------------------------------------------------------------------------------
def _trainer(tmp_path, *, tokenizer: bool, callbacks=()):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    import datasets

    from tests.tiny_chat import build_tiny_chat_model

    model_dir = build_tiny_chat_model(tmp_path / "model")
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    ids = tok("the passage is a query answer", add_special_tokens=False)["input_ids"]
    train = datasets.Dataset.from_dict({"input_ids": [ids] * 8, "labels": [ids] * 8})
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4,
                                          learning_rate=0.0, logging_steps=1, report_to=[], use_cpu=True,
                                          save_strategy="no", seed=0)
    return transformers.Trainer(model=model, args=args, train_dataset=train,
                                processing_class=tok if tokenizer else None, callbacks=list(callbacks))


def _callback(url, tmp_path, lfrqa_data_dir, trainer=None, **run):
    from metric_arena.generate import GenerationConfig
    from tests.test_train_callback import lfrqa_rows, write_retrieved

    retrieved = write_retrieved(tmp_path / "r.jsonl", lfrqa_rows(lfrqa_data_dir, "fiqa", 4))
    return metric_arena.ArenaCallback(
        trainer=trainer, judge="openai:judge",
        run=RunConfig(base_url=url, api_key="sk-local", cache_dir=tmp_path / "cache", **run),
        schedule=metric_arena.train.ArenaSchedule(every_n_steps=1),
        questions=metric_arena.train.ArenaQuestions(n=2, domains=["fiqa"], retrieved=retrieved, data_dir=lfrqa_data_dir),
        generation=GenerationConfig(n_passages=2, max_tokens=4), batch_size=2)


@pytest.mark.slow
def test_a_missing_tokenizer_is_said_when_the_callback_is_attached(tmp_path, lfrqa_data_dir):
    from lfrqa.errors import RagQaArenaError

    url = closed_url()
    trainer = _trainer(tmp_path, tokenizer=False)
    with pytest.raises(RagQaArenaError, match="processing_class=tokenizer"):
        _callback(url, tmp_path, lfrqa_data_dir, trainer=trainer)  # given the trainer: at once
    with pytest.raises(RagQaArenaError, match="processing_class=tokenizer"):
        _trainer(tmp_path, tokenizer=False, callbacks=[_callback(url, tmp_path, lfrqa_data_dir)])  # Trainer(...)
    trainer.add_callback(_callback(url, tmp_path, lfrqa_data_dir))  # added later: before the first step
    with pytest.raises(RagQaArenaError, match="processing_class=tokenizer"):
        trainer.train()
    assert trainer.state.global_step == 0


@pytest.mark.slow
def test_a_judge_outage_at_an_evaluation_step_is_a_warning_and_training_goes_on(tmp_path, lfrqa_data_dir, caplog):
    down = threading.Event()
    down.set()
    with OpenAIServer(lambda body, attempt: Reply(status=-1) if down.is_set() else RATED) as server:
        trainer = _trainer(tmp_path, tokenizer=True)
        callback = _callback(server.base_url, tmp_path, lfrqa_data_dir, trainer=trainer,
                             retry=RetryPolicy(fail_fast_after=1.0, initial=0.1))
        trainer.add_callback(callback)
        with caplog.at_level(logging.WARNING, logger="metric_arena.train"):
            trainer.train()
    assert trainer.state.global_step == 2  # training finished
    assert [f["step"] for f in callback.failures] == [1, 2] and callback.results == []
    assert all("ServerUnreachable" in f["error"] for f in callback.failures)
    assert "the evaluation at step 1 could not run" in caplog.text and "training goes on" in caplog.text
