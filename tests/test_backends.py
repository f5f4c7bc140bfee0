"""LLM backends: spec parsing, the OpenAI backend's error mapping (real local server), and the
hf backend with a tiny random Llama saved under tmp_path."""

from __future__ import annotations

import asyncio
import json

import pytest

from metric_arena import JudgeConfig, RunConfig, judge_pairs
from metric_arena.llm import make_backend
from metric_arena.llm import (
    AuthenticationFailed,
    Backend,
    ChatRequest,
    Completion,
    ModelNotFound,
    parse_spec,
)
from metric_arena.llm._types import BadReply, TransientBackendError
from metric_arena.llm._openai import OpenAIBackend, redact
from tests.openai_server import OpenAIServer, Reply
from metric_arena.judge import JudgeInputs

KEY = "sk-proj-SECRETSECRET123"
HELLO = ChatRequest([{"role": "user", "content": "hello"}], max_tokens=7)


def test_parse_spec():
    assert parse_spec("openai:gpt-4o") == ("openai", "gpt-4o")
    assert parse_spec("openai:ft:gpt-4o-mini:org::id") == ("openai", "ft:gpt-4o-mini:org::id")
    assert parse_spec("HF:/models/llama") == ("hf", "/models/llama")
    for bad, match in [("gpt-4o", "'<backend>:<model>'"), ("anthropic:claude", "Unknown backend 'anthropic'"),
                       ("openai:", "No model name"), (None, "Invalid")]:
        with pytest.raises(ValueError, match=match):
            parse_spec(bad)


def test_make_backend_builds_each_kind_lazily():
    backend = make_backend("openai:m", base_url="http://127.0.0.1:1/v1", api_key="k")
    assert isinstance(backend, OpenAIBackend) and backend.spec == "openai:m"
    hf = make_backend("hf:/nowhere/model", options={"batch_size": 4})
    assert hf.spec == "hf:/nowhere/model" and hf.batch_size == 4 and hf.trust_remote_code is False
    assert hf.batched and not backend.batched
    with pytest.raises(ValueError, match="openai backend only"):
        make_backend("hf:x", base_url="http://h/v1")


def test_openai_identity_has_no_secret_and_needs_a_key_for_openai(monkeypatch):
    backend = OpenAIBackend("gpt-4o", base_url="https://api.example.com:8443/v1/", api_key=KEY)
    assert backend.identity() == {"backend": "openai", "model": "gpt-4o", "url": "https://api.example.com:8443/v1"}
    assert KEY not in json.dumps(backend.identity()) and KEY not in repr(backend)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o")
    assert OpenAIBackend("m", base_url="http://LocalHost/v1").identity()["url"] == "http://localhost:80/v1"
    assert OpenAIBackend("m", base_url="https://me:pw@h.example/v1").identity()["url"] == "https://h.example:443/v1"
    with pytest.raises(ValueError, match="Invalid base URL"):
        OpenAIBackend("m", base_url="localhost:8000")


def complete(server: OpenAIServer, request: ChatRequest = HELLO, model: str = "m"):
    async def main():
        backend = OpenAIBackend(model, base_url=server.base_url, api_key=KEY, timeout=1.0)
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    return asyncio.run(main())


def test_openai_backend_sends_the_request_as_given():
    with OpenAIServer(lambda body, attempt: Reply(content="hi there", finish_reason="length")) as server:
        completion = complete(server)
        body = server.requests[0]
        headers = server.headers[0]
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 7,
                    "temperature": 0.0, "top_p": 1.0}
    assert completion.text == "hi there" and completion.finish_reason == "length"
    assert completion.usage["completion_tokens"] >= 1
    assert headers.get("authorization") == f"Bearer {KEY}"  # sent to the server, and only there


@pytest.mark.parametrize(
    "reply, error, kind",
    [
        (Reply(status=401), AuthenticationFailed, "auth"),
        (Reply(status=403), AuthenticationFailed, "auth"),
        (Reply(status=404), ModelNotFound, "404"),
        (Reply(status=429, headers={"Retry-After": "7"}), TransientBackendError, "429"),
        (Reply(status=500), TransientBackendError, "500"),
        (Reply(status=503), TransientBackendError, "503"),
        (Reply(status=-1), TransientBackendError, "connection"),
        (Reply(delay=2.0), TransientBackendError, "timeout"),
        (Reply.malformed(), BadReply, "malformed"),
        (Reply.empty_choices(), BadReply, "empty_choices"),
    ],
)
def test_openai_errors_are_sorted_by_kind(reply, error, kind):
    with OpenAIServer(lambda body, attempt: reply) as server:
        base_url = server.base_url
        with pytest.raises(error) as caught:
            complete(server)
    assert caught.value.kind == kind
    assert KEY not in str(caught.value)
    if kind == "429":
        assert caught.value.retry_after == 7.0
    if error in (AuthenticationFailed, ModelNotFound):
        assert base_url in str(caught.value) and "'m'" in str(caught.value)


def test_retry_after_ms_and_dates():
    from metric_arena.llm._openai._http import retry_after_seconds as _retry_after

    class R:
        def __init__(self, headers):
            self.headers = headers

    assert _retry_after(R({"retry-after-ms": "250"})) == 0.25
    assert _retry_after(R({"retry-after": "3"})) == 3.0
    assert _retry_after(R({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0  # in the past
    assert _retry_after(R({})) is None


def test_server_messages_areredacted():
    assert redact(f"Incorrect API key provided: {KEY}.", KEY) == "Incorrect API key provided: ***."
    assert "sk-abcd" not in redact("key sk-abcdefgh1234 here", None)


# --------------------------------------------------------------------------------------------
# hf backend: a tiny random Llama built offline
# --------------------------------------------------------------------------------------------
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<unk>", "<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>", "<rating>", "</rating>",
             "0", "1", "2", "answer", "the", "is", "query", "<thinking>", "</thinking>"]
    vocab = {w: i for i, w in enumerate(words)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    config = transformers.LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=3)
    import torch

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_hf_backend_generates_batched_left_padded(tiny_llama):
    backend = make_backend(f"hf:{tiny_llama}", options={"batch_size": 4, "device": "cpu"})
    requests = [
        ChatRequest([{"role": "user", "content": "the query"}], max_tokens=5),
        ChatRequest([{"role": "system", "content": "is"}, {"role": "user", "content": "the answer is 1 2 0"}],
                    max_tokens=5),
        ChatRequest([{"role": "user", "content": "x"}], max_tokens=3),
    ]
    completions = asyncio.run(backend.complete_many(requests))
    assert len(completions) == 3
    for request, completion in zip(requests, completions):
        assert isinstance(completion.text, str)
        assert completion.usage["completion_tokens"] <= request.max_tokens
        assert completion.finish_reason in ("stop", "length")
    # greedy decoding is deterministic, and a request alone gives what it gave inside the batch
    alone = asyncio.run(backend.complete(requests[0]))
    assert alone.text == completions[0].text


def test_hf_backend_explains_a_missing_model(tmp_path):
    backend = make_backend(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(ModelNotFound, match="missing"):
        asyncio.run(backend.complete(HELLO))


@pytest.mark.slow
def test_hf_judge_pipeline_counts_failures(tiny_llama, tmp_path):
    res = judge_pairs(JudgeInputs(predictions=["pred one", "pred two"], references=["ref one", "ref two"],
                                  questions=["q one", "q two words"]),
                      judge=JudgeConfig(f"hf:{tiny_llama}", options={"device": "cpu", "batch_size": 4}),
                      run=RunConfig(cache_dir=tmp_path))
    # a random model writes no valid <rating>: every pair is failed (never a tie), after one re-ask each
    assert res["n"] == 2 and res["n_failed"] == 2
    assert res["errors"]["invalid_reply"] == 4 and res["n_sent"] == 4
    assert all(v["judgments"][0]["attempts"] == 2 for v in res["verdicts"])


@pytest.mark.gpu
def test_hf_backend_on_cuda(tiny_llama):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    backend = make_backend(f"hf:{tiny_llama}", options={"device": "cuda", "dtype": "bfloat16", "batch_size": 8})
    requests = [ChatRequest([{"role": "user", "content": "the query " * k}], max_tokens=8) for k in range(1, 12)]
    completions = asyncio.run(backend.complete_many(requests))
    assert len(completions) == 11 and all(c.usage["completion_tokens"] <= 8 for c in completions)
    assert next(backend._model.parameters()).device.type == "cuda"


def test_templates_without_a_system_role_fold_it_into_a_first_turn():
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models

    from metric_arena.llm._hf import _chat_prompt

    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")))
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
        "[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
    )
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert _chat_prompt(tokenizer, messages) == ("[user]S[assistant]I understand.[user]U", True)
    assert _chat_prompt(tokenizer, messages[1:]) == ("[user]U", False)
    with pytest.raises(Exception, match="no system role"):
        _chat_prompt(tokenizer, [{"role": "user", "content": "U"}, {"role": "system", "content": "S"}])


class _EchoDevice(Backend):
    """A tiny in-process batched backend: answers each request with a rating, records batch sizes."""

    name = "echo"

    def __init__(self, batch_size: int):
        self.model = "echo"
        self.batch_size = batch_size
        self.calls: list[int] = []

    async def complete(self, request):
        raise AssertionError("a batched backend is called through complete_many")

    async def complete_many(self, requests):
        self.calls.append(len(requests))
        await asyncio.sleep(0.01)
        return [Completion(f"<rating>{len(r.messages[-1]['content']) % 3}</rating>") for r in requests]


def test_runner_groups_requests_for_batched_backends(tmp_path):
    from metric_arena.llm import CompletionCache
    from metric_arena.llm._runner import Runner

    device = _EchoDevice(batch_size=4)
    requests = [ChatRequest([{"role": "user", "content": "x" * k}]) for k in range(10)]

    async def main():
        runner = Runner(CompletionCache(tmp_path), max_concurrency=2)
        return await runner.run_many(device, requests), runner

    results, runner = asyncio.run(main())
    assert device.batched and device.calls == [4, 4, 2]  # batch_size, not max_concurrency, sets the group size
    assert [r.text for r in results] == [f"<rating>{k % 3}</rating>" for k in range(10)]
    assert runner.n_sent == 10


def test_a_backend_option_it_does_not_take_is_named_with_the_ones_it_does():
    with pytest.raises(ValueError, match=r"'hf:x' takes no option 'tensor_parallel_size'\. Its options: .*batch_size"):
        make_backend("hf:x", options={"tensor_parallel_size": 2})
    with pytest.raises(ValueError, match=r"takes no option 'device'"):
        make_backend("openai:m", base_url="http://127.0.0.1:1/v1", api_key="k", options={"device": "cpu"})
    assert make_backend("openai:m", base_url="http://127.0.0.1:1/v1", api_key="k", options={"timeout": 3}).timeout == 3
