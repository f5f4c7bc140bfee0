"""ArenaCallback inside a real transformers Trainer (tiny random model, offline): generation with the
model being trained, judging on the local server, figures in the log history and the other callbacks,
the cache on re-evaluation; and the evaluation sample (seeded, stratified, passages)."""

from __future__ import annotations

import json

import pytest

from metric_arena.train import arena_sample
from tests.openai_server import OpenAIServer
from tests.tiny_chat import build_tiny_chat_model


def lfrqa_rows(data_dir, domain, n):
    import lfrqa

    ds = lfrqa.load(domain, data_dir=str(data_dir))
    return [ds[i] for i in range(n)]


def write_retrieved(path, rows):
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            passages = [{"pid": f"{row['qid']}-{k}", "text": f"passage {k} about {row['question']}", "rank": k + 1}
                        for k in range(3)]
            out.write(json.dumps({"qid": row["qid"], "domain": row["domain"], "question": row["question"],
                                  "passages": passages}) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# The evaluation sample
# --------------------------------------------------------------------------------------------
def test_sample_is_seeded_stratified_and_uses_the_retrieved_passages(tmp_path, lfrqa_data_dir):
    rows = lfrqa_rows(lfrqa_data_dir, "fiqa", 12) + lfrqa_rows(lfrqa_data_dir, "science", 12)
    retrieved = write_retrieved(tmp_path / "r.jsonl", rows)
    options = dict(n=6, domains=["fiqa", "science"], retrieved=retrieved, n_passages=2, data_dir=lfrqa_data_dir)
    sample = arena_sample(seed=1, **options)
    assert sorted(r["domain"] for r in sample) == ["fiqa"] * 3 + ["science"] * 3
    assert [r["qid"] for r in arena_sample(seed=1, **options)] == [r["qid"] for r in sample]
    assert [r["qid"] for r in arena_sample(seed=2, **options)] != [r["qid"] for r in sample]
    by_qid = {r["qid"]: r for r in rows}
    for row in sample:
        assert row["answer"] == by_qid[row["qid"]]["answer"] and row["question"] == by_qid[row["qid"]]["question"]
        assert [p["pid"] for p in row["passages"]] == [f"{row['qid']}-0", f"{row['qid']}-1"]


def test_gold_passages_come_from_the_corpus_or_the_error_names_retrieved(tmp_path, lfrqa_data_dir):
    import lfrqa

    from metric_arena.stats import stratified_sample

    fiqa = lfrqa.load("fiqa", data_dir=str(lfrqa_data_dir))
    chosen = set(stratified_sample(fiqa["qid"], fiqa["domain"], 3, seed=0))  # what arena_sample draws
    rows = [row for row in fiqa if row["qid"] in chosen]
    corpus = tmp_path / "corpora" / "fiqa"
    corpus.mkdir(parents=True)
    with open(corpus / "corpus.jsonl", "w", encoding="utf-8") as out:
        out.write(json.dumps({"_id": "unrelated", "title": "", "text": "not a gold document"}) + "\n")
        for row in rows:
            for k, doc_id in enumerate(row["gold_doc_ids"]):
                words = " ".join(f"d{doc_id}w{i}" for i in range(150 if k == 0 else 20))  # the first: 2 passages
                out.write(json.dumps({"_id": doc_id, "title": "", "text": words}) + "\n")
    sample = arena_sample(n=3, domains="fiqa", n_passages=4, data_dir=lfrqa_data_dir, corpus_dir=tmp_path / "corpora")
    for row in sample:
        gold = row["gold_doc_ids"]
        expected = [f"{d}-0" for d in gold][:4]  # first passages of each gold document in turn
        if len(gold) < 4:
            expected += [f"{gold[0]}-1"]
        assert [p["pid"] for p in row["passages"]] == expected[:4]
        assert [p["rank"] for p in row["passages"]] == list(range(1, len(expected[:4]) + 1))
    with pytest.raises(ValueError, match=r"RobustQA fiqa corpus, which is not available.*Pass retrieved="):
        arena_sample(n=2, domains="fiqa", data_dir=lfrqa_data_dir, corpus_dir=tmp_path / "empty")


# --------------------------------------------------------------------------------------------
# In a Trainer
# --------------------------------------------------------------------------------------------
def test_callback_is_explicit_and_its_dependency_is_named():
    import inspect
    import subprocess
    import sys

    pytest.importorskip("transformers")
    import metric_arena

    parameters = inspect.signature(metric_arena.ArenaCallback.__init__).parameters.values()
    assert all(p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)  # self + keywords
    with pytest.raises(ValueError, match="every_n_steps must be a positive integer, got 0"):
        metric_arena.ArenaCallback(judge="openai:m", every_n_steps=0, run=metric_arena.RunConfig(api_key="x"))
    probe = ("import sys; sys.modules['transformers'] = None\nimport metric_arena\n"
             "try:\n    metric_arena.ArenaCallback\nexcept ImportError as e:\n    print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("MissingDependency") and 'pip install "rag-qa-arena[hf]"' in out


@pytest.mark.slow
def test_callback_logs_win_rates_and_reuses_the_cache(tmp_path, lfrqa_data_dir):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    import datasets

    import metric_arena

    model_dir = build_tiny_chat_model(tmp_path / "model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    ids = tokenizer("the passage is a query answer", add_special_tokens=False)["input_ids"]
    train = datasets.Dataset.from_dict({"input_ids": [ids] * 8, "labels": [ids] * 8})
    retrieved = write_retrieved(tmp_path / "r.jsonl", lfrqa_rows(lfrqa_data_dir, "fiqa", 6)
                                + lfrqa_rows(lfrqa_data_dir, "science", 6))

    class Recorder(transformers.TrainerCallback):
        def __init__(self):
            self.logs = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.logs.append(dict(logs or {}))

    recorder = Recorder()
    with OpenAIServer() as server:
        args = transformers.TrainingArguments(
            output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4, learning_rate=0.0,
            logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", seed=0,
        )
        trainer = transformers.Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                                       callbacks=[recorder])
        from metric_arena.generate import GenerationConfig

        callback = metric_arena.ArenaCallback(
            trainer=trainer, judge="openai:judge",
            run=metric_arena.RunConfig(base_url=server.base_url, api_key="sk-local", cache_dir=tmp_path / "cache"),
            schedule=metric_arena.train.ArenaSchedule(every_n_steps=1),
            questions=metric_arena.train.ArenaQuestions(n=4, domains=["fiqa", "science"], retrieved=retrieved,
                                                        data_dir=lfrqa_data_dir),
            generation=GenerationConfig(n_passages=2, max_tokens=4), batch_size=4,
        )
        trainer.add_callback(callback)
        trainer.train()
        judged = list(server.requests)

    entries = [e for e in trainer.state.log_history if "arena/win_rate" in e]
    assert [e["step"] for e in entries] == [1, 2]  # every step; the end (step 2) was already evaluated
    first, second = entries
    for entry in entries:
        assert entry["arena/n"] == 4 and entry["arena/n_failed"] == 0
        assert entry["arena/win_rate_ci_low"] <= entry["arena/win_rate"] <= entry["arena/win_rate_ci_high"]
        assert 0.0 <= entry["arena/win_tie_rate"] <= 1.0 and "arena/fiqa/win_rate" in entry
        assert "arena/science/win_tie_rate" in entry
    # unchanged weights (lr 0), greedy decoding: the same answers, judged from the cache
    assert first["arena/n_sent"] == 4 and second["arena/n_sent"] == 0 and second["arena/n_cached"] == 4
    assert len(judged) == 4
    assert callback.results[0]["answers"] == callback.results[1]["answers"]
    # the judge compared the model's answers with LFRQA's references
    references = {row["qid"]: row["answer"] for row in callback.rows}
    assert all(any(ref.strip() in body["messages"][-1]["content"] for ref in references.values()) for body in judged)
    # the other callbacks (TensorBoard, W&B...) received the same figures
    assert [log["arena/win_rate"] for log in recorder.logs if "arena/win_rate" in log] == [e["arena/win_rate"]
                                                                                          for e in entries]
    assert model.training  # set back to train mode after generating
