"""A local model whose chat template refuses the system role: the system prompt is folded into the
first user turn, and the completion says so (``Completion.system_folded``), fresh and from the cache."""

from __future__ import annotations

import asyncio

import pytest

from metric_arena.llm import ChatRequest, make_backend
from metric_arena.llm._cache import CompletionCache
from metric_arena.llm._hf import _chat_prompt
from metric_arena.llm._runner import Runner

# Gemma-style: the template itself refuses a system message.
NO_SYSTEM_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}<|{{ m['role'] }}|> {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
WITH_SYSTEM = ChatRequest([{"role": "system", "content": "the answer is"}, {"role": "user", "content": "the query"}],
                          max_tokens=3)
WITHOUT_SYSTEM = ChatRequest([{"role": "user", "content": "the query is"}], max_tokens=3)


@pytest.fixture(scope="module")
def no_system_model(tmp_path_factory):
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>", "I", "understand.", "the",
             "answer", "is", "query"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>", pad_token="<pad>")
    fast.chat_template = NO_SYSTEM_TEMPLATE
    config = transformers.LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=3)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("no_system_model")
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    fast.save_pretrained(path)
    return path


def run(cache_dir, backend, requests):
    async def main():
        runner = Runner(CompletionCache(cache_dir), max_concurrency=4)
        try:
            return await asyncio.gather(*(runner.run_one(backend, r) for r in requests))
        finally:
            runner.cache.close()
    return asyncio.run(main())


def test_a_folded_system_prompt_is_recorded_fresh_and_cached(no_system_model, tmp_path):
    backend = make_backend(f"hf:{no_system_model}", options={"device": "cpu", "batch_size": 4})
    fresh = run(tmp_path, backend, [WITH_SYSTEM, WITHOUT_SYSTEM])
    assert [r.cached for r in fresh] == [False, False]
    assert [r.completion.system_folded for r in fresh] == [True, False]
    cached = run(tmp_path, backend, [WITH_SYSTEM, WITHOUT_SYSTEM])
    assert [r.cached for r in cached] == [True, True]
    assert [r.completion.system_folded for r in cached] == [True, False]
    assert [r.text for r in cached] == [r.text for r in fresh]


class Tokenizer:
    """A tokenizer whose chat template fails with ``error`` on every call."""

    def __init__(self, error):
        self.error = error
        self.calls = 0

    def apply_chat_template(self, messages, **kwargs):
        self.calls += 1
        raise self.error


def test_only_the_templates_own_error_folds_the_system_prompt():
    from jinja2.exceptions import TemplateError

    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    for bug in (TypeError("Chat messages should be dicts"), KeyError("content"), RuntimeError("boom")):
        tokenizer = Tokenizer(bug)
        with pytest.raises(type(bug)):
            _chat_prompt(tokenizer, messages)
        assert tokenizer.calls == 1  # no second try with the system prompt folded
    tokenizer = Tokenizer(TemplateError("System role not supported"))
    with pytest.raises(TemplateError):
        _chat_prompt(tokenizer, messages)  # the folded conversation fails too: the error is raised
    assert tokenizer.calls == 2
