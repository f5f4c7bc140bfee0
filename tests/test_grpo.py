"""One GRPOTrainer step end to end, offline: a tiny random chat model, LFRQA rows, and the arena
reward judged by the local OpenAI-compatible server; the rewards TRL logged are checked."""

from __future__ import annotations

import pytest

import metric_arena
from tests.openai_server import OpenAIServer
from tests.tiny_chat import build_tiny_chat_model

pytestmark = pytest.mark.slow


def test_one_grpo_step_logs_the_arena_rewards(tmp_path, lfrqa_data_dir):
    trl = pytest.importorskip("trl")
    transformers = pytest.importorskip("transformers")
    import lfrqa

    model_dir = build_tiny_chat_model(tmp_path / "model")
    fiqa = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    # one question with an even number of words (the completion is shown first: the server's
    # "Answer 1 is better" makes it a win) and one with an odd number (shown second: a loss)
    even = next(i for i, q in enumerate(fiqa["question"]) if len(q.split(" ")) % 2 == 0)
    odd = next(i for i, q in enumerate(fiqa["question"]) if len(q.split(" ")) % 2 == 1)
    rows = fiqa.select([even, odd]).select_columns(["qid", "question", "answer"])
    train = rows.map(lambda row: {"prompt": [{"role": "user", "content": row["question"]}]})

    with OpenAIServer() as server:
        run = metric_arena.RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache")
        reward = metric_arena.reward_function(judge="openai:judge", run=run, data_dir=lfrqa_data_dir)
        args = trl.GRPOConfig(
            output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, num_generations=2, max_steps=1,
            max_completion_length=4, logging_steps=1, report_to=[], use_cpu=True, save_strategy="no",
            learning_rate=1e-3, seed=0, dataloader_num_workers=0,
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
        trainer = trl.GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=train,
                                  processing_class=tokenizer)
        trainer.train()
        judged = list(server.requests)

    logged = next(entry for entry in trainer.state.log_history if "rewards/rag_qa_arena/mean" in entry)
    assert logged["rewards/rag_qa_arena/mean"] == pytest.approx(0.5)  # 2 wins, 2 losses
    assert logged["rag_qa_arena/win"] == pytest.approx(0.5) and logged["rag_qa_arena/failed"] == 0.0
    assert reward.counts["completions"] == 4 and reward.counts["failed"] == 0
    assert 1 <= len(judged) <= 4  # identical completions of a prompt are judged once
    references = set(rows["answer"])
    assert all(any(ref.strip() in body["messages"][-1]["content"] for ref in references) for body in judged)
