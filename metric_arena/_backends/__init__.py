"""LLM backends, picked by a ``"<backend>:<model>"`` spec.

>>> make_backend("openai:gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY").spec
'openai:gpt-4o-mini'
"""

from __future__ import annotations

from metric_arena._backends._base import (
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    TransientBackendError,
)

__all__ = [
    "BACKENDS",
    "AuthenticationFailed",
    "Backend",
    "BackendError",
    "BadReply",
    "ChatRequest",
    "Completion",
    "ModelNotFound",
    "TransientBackendError",
    "make_backend",
    "parse_spec",
]

#: Backend names accepted in a spec, with what they run.
BACKENDS = {
    "openai": "any OpenAI-compatible chat-completions server (OpenAI, vLLM/TGI/SGLang servers); base_url=, api_key=",
    "hf": "a local chat model through transformers (Hub id or save_pretrained folder)",
    "vllm": 'an in-process vLLM engine (pip install "rag-qa-arena[vllm]")',
}


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"<backend>:<model>"`` at the first colon (model names may hold colons)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(
            f"Invalid judge/model spec {spec!r}: write '<backend>:<model>', e.g. 'openai:gpt-4o' or "
            f"'hf:Qwen/Qwen2.5-7B-Instruct'. Backends: {', '.join(BACKENDS)}"
        )
    backend, model = spec.split(":", 1)
    backend = backend.strip().lower()
    if backend not in BACKENDS:
        raise ValueError(f"Unknown backend {backend!r} in {spec!r}. Available: {', '.join(BACKENDS)}")
    if not model.strip():
        raise ValueError(f"No model name in {spec!r}: write '<backend>:<model>', e.g. 'openai:gpt-4o'")
    return backend, model.strip()


def make_backend(spec: str, *, base_url: str | None = None, api_key: str | None = None, **options) -> Backend:
    """Build the backend a spec names.

    ``base_url``/``api_key`` apply to the ``openai`` backend (defaults: ``$OPENAI_BASE_URL``,
    ``$OPENAI_API_KEY``); other keyword options go to the backend's constructor
    (e.g. ``timeout=`` for openai, ``batch_size=``/``device=``/``trust_remote_code=`` for hf,
    ``tensor_parallel_size=`` for vllm).
    """
    backend, model = parse_spec(spec)
    if backend == "openai":
        from metric_arena._backends.openai import OpenAIBackend

        return OpenAIBackend(model, base_url=base_url, api_key=api_key, **options)
    if base_url is not None or api_key is not None:
        raise ValueError(f"base_url/api_key apply to the openai backend only, not to {spec!r}")
    if backend == "hf":
        from metric_arena._backends.hf import HFBackend

        return HFBackend(model, **options)
    from metric_arena._backends.vllm import VLLMBackend  # written separately; imports vllm lazily

    return VLLMBackend(model, **options)
