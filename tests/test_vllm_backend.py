"""The vLLM backend: install hint, request -> SamplingParams, one batched LLM.chat call.

vLLM needs a CUDA GPU and cannot be installed on the CPU test machines. The CPU tests below
therefore put a small stand-in module under the name ``vllm`` in ``sys.modules`` (and only
that module: the backend, the base classes and ``make_backend`` are the real ones). The stand-in
records what the backend hands to ``vllm.LLM``, ``LLM.chat`` and ``vllm.SamplingParams``.
The real engine runs in ``test_real_vllm_engine`` (marked ``gpu``).
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import sys
import types

import pytest

from metric_arena.llm import make_backend
from metric_arena.llm import BackendError, ChatRequest, Completion, ModelNotFound
from metric_arena.llm._vllm import VLLMBackend


# -- stand-in for the vllm package (NOT the real library) -----------------------------------
def _fake_vllm(fail_load: Exception | None = None, fail_chat: Exception | None = None) -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.engines = []

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    class LLM:
        def __init__(self, **kwargs):
            if fail_load is not None:
                raise fail_load
            self.kwargs = kwargs
            self.calls = []
            module.engines.append(self)

        def chat(self, messages, sampling_params, use_tqdm=True):
            if fail_chat is not None:
                raise fail_chat
            self.calls.append((messages, sampling_params, use_tqdm))
            outputs = []
            for i, conversation in enumerate(messages):
                params = sampling_params[i] if isinstance(sampling_params, list) else sampling_params
                text = f"reply to {conversation[-1]['content']}"
                n_new = min(3, params.kwargs["max_tokens"])
                completion = types.SimpleNamespace(
                    text=text, token_ids=list(range(n_new)), finish_reason="length" if n_new < 3 else "stop")
                outputs.append(types.SimpleNamespace(prompt_token_ids=list(range(10 + i)), outputs=[completion]))
            return outputs

    module.LLM = LLM
    module.SamplingParams = SamplingParams
    return module


@pytest.fixture
def fake_vllm(monkeypatch):
    module = _fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", module)  # stand-in, removed after the test
    return module


def _request(text: str, **params) -> ChatRequest:
    return ChatRequest([{"role": "system", "content": "judge"}, {"role": "user", "content": text}], **params)


# -- without vllm ------------------------------------------------------------------------------
def test_missing_vllm_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # "not installed", also where it is
    with pytest.raises(ImportError, match=r'pip install "rag-qa-arena\[vllm\]"'):
        VLLMBackend("some/model")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_through_make_backend():
    with pytest.raises(ImportError, match=r'pip install "rag-qa-arena\[vllm\]"'):
        make_backend("vllm:Qwen/Qwen2.5-7B-Instruct")


# -- with the stand-in -------------------------------------------------------------------------
def test_requests_become_sampling_params_in_one_chat_call(fake_vllm):
    backend = make_backend("vllm:org/judge-model", options={
        "tensor_parallel_size": 2, "engine_options": {"max_model_len": 8192, "gpu_memory_utilization": 0.8}})
    assert isinstance(backend, VLLMBackend)
    requests = [_request("a"), _request("b", max_tokens=2, temperature=0.7, top_p=0.9), _request("c", max_tokens=64)]
    completions = asyncio.run(backend.complete_many(requests))

    [engine] = fake_vllm.engines
    assert engine.kwargs == {"model": "org/judge-model", "tensor_parallel_size": 2, "trust_remote_code": False,
                             "max_model_len": 8192, "gpu_memory_utilization": 0.8}
    [(conversations, params, use_tqdm)] = engine.calls  # a single batched call
    assert conversations == [r.messages for r in requests] and use_tqdm is False
    assert [p.kwargs for p in params] == [
        {"temperature": 0.0, "top_p": 1.0, "max_tokens": 256},
        {"temperature": 0.7, "top_p": 0.9, "max_tokens": 2},
        {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64},
    ]
    assert completions == [
        Completion("reply to a", "stop", {"prompt_tokens": 10, "completion_tokens": 3}),
        Completion("reply to b", "length", {"prompt_tokens": 11, "completion_tokens": 2}),
        Completion("reply to c", "stop", {"prompt_tokens": 12, "completion_tokens": 3}),
    ]


def test_same_params_share_one_sampling_params_and_engine_loads_once(fake_vllm):
    backend = VLLMBackend("org/m")
    asyncio.run(backend.complete_many([_request("a"), _request("b")]))
    one = asyncio.run(backend.complete(_request("c", max_tokens=5)))
    assert one.text == "reply to c"
    [engine] = fake_vllm.engines  # loaded on first use, then reused
    (_, shared, _), (_, single, _) = engine.calls
    assert not isinstance(shared, list) and shared.kwargs == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 256}
    assert single.kwargs["max_tokens"] == 5
    assert asyncio.run(backend.complete_many([])) == []
    assert len(engine.calls) == 2


def test_trust_remote_code_only_when_asked(fake_vllm):
    asyncio.run(VLLMBackend("org/m", trust_remote_code=True).complete(_request("x")))
    assert fake_vllm.engines[0].kwargs["trust_remote_code"] is True


def test_identity_holds_what_changes_answers(fake_vllm):
    backend = VLLMBackend("org/m", tensor_parallel_size=4, engine_options={
        "dtype": "bfloat16", "revision": "abc123", "seed": 1, "gpu_memory_utilization": 0.9})
    assert backend.identity() == {"backend": "vllm", "model": "org/m", "revision": "abc123", "dtype": "bfloat16"}
    assert VLLMBackend("org/m", engine_options={"dtype": "auto"}).identity() == {"backend": "vllm", "model": "org/m"}
    assert backend.spec == "vllm:org/m" and backend.batched


def test_load_and_chat_errors_are_sorted(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(fail_load=OSError("org/nope is not a local folder")))
    with pytest.raises(ModelNotFound, match="org/nope"):
        asyncio.run(VLLMBackend("org/nope").complete(_request("x")))
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(fail_chat=ValueError("prompt longer than max_model_len")))
    with pytest.raises(BackendError, match="max_model_len") as err:
        asyncio.run(VLLMBackend("org/m").complete(_request("x")))
    assert err.value.kind == "bad_request"


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (("",), {}, "model name is empty"),
        (("org/m",), {"tensor_parallel_size": 0}, "tensor_parallel_size must be a positive integer .*got 0"),
        (("org/m",), {"tensor_parallel_size": "2"}, "tensor_parallel_size must be a positive integer .*got '2'"),
        (("org/m",), {"batch_size": 0}, "batch_size must be a positive integer, got 0"),
    ],
)
def test_bad_settings_are_named(fake_vllm, args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        VLLMBackend(*args, **kwargs)


# -- the real engine -----------------------------------------------------------------------------
def _tiny_chat_model(folder) -> str:
    """A random 2-layer Llama with a word-level tokenizer and a chat template, saved offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<unk>", "<s>", "</s>", "<pad>", "system", "user", "assistant", ":"] + [f"w{i}" for i in range(120)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>")
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant : {% endif %}"
    )
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(words), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                         bos_token_id=1, eos_token_id=2, pad_token_id=3)
    LlamaForCausalLM(config).save_pretrained(folder)
    return str(folder)


@pytest.mark.gpu  # only: `-m slow` on a CPU machine would just skip it; run with `-m gpu`
def test_real_vllm_engine(tmp_path):
    pytest.importorskip("vllm")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    model = _tiny_chat_model(tmp_path / "tiny")
    backend = VLLMBackend(model, max_model_len=256, gpu_memory_utilization=0.2, enforce_eager=True, seed=0)
    requests = [_request("w1 w2 w3", max_tokens=8), _request("w4 w5", max_tokens=8),
                _request("w6", max_tokens=4, temperature=0.8, top_p=0.9)]
    completions = asyncio.run(backend.complete_many(requests))
    assert len(completions) == 3
    for completion, request in zip(completions, requests):
        assert isinstance(completion.text, str)
        assert completion.finish_reason in ("stop", "length")
        assert 1 <= completion.usage["completion_tokens"] <= request.max_tokens
        assert completion.usage["prompt_tokens"] > 3
    again = asyncio.run(backend.complete_many(requests[:2]))  # greedy: the same answers
    assert [c.text for c in again] == [c.text for c in completions[:2]]
    asyncio.run(backend.aclose())
