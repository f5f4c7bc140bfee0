"""LLM backends, picked by a ``"<backend>:<model>"`` spec: the one place where backends are built.

>>> make_backend("openai:gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY").spec
'openai:gpt-4o-mini'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lfrqa.errors import MissingDependency, RagQaArenaError
from metric_arena.llm._types import (
    HF,
    OPENAI,
    VLLM,
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
    "HF",
    "OPENAI",
    "VLLM",
    "AuthenticationFailed",
    "Backend",
    "BackendError",
    "BadReply",
    "ChatRequest",
    "Completion",
    "ModelNotFound",
    "TransientBackendError",
    "backend_identity",
    "make_backend",
    "make_backends",
    "model_backend",
    "parse_spec",
]

#: Backend names accepted in a spec, with what they run.
BACKENDS = {
    OPENAI: "any OpenAI-compatible chat-completions server (OpenAI, vLLM/TGI/SGLang servers); base_url=, api_key=",
    HF: "a local chat model through transformers (Hub id or save_pretrained folder)",
    VLLM: 'an in-process vLLM engine (pip install "rag-qa-arena[vllm]")',
}


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"<backend>:<model>"`` at the first colon (model names may hold colons)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise RagQaArenaError(
            f"Invalid judge/model spec {spec!r}: write '<backend>:<model>', e.g. 'openai:gpt-4o' or "
            f"'hf:Qwen/Qwen2.5-7B-Instruct'. Backends: {', '.join(BACKENDS)}"
        )
    backend, model = spec.split(":", 1)
    backend = backend.strip().lower()
    if backend not in BACKENDS:
        raise RagQaArenaError(f"Unknown backend {backend!r} in {spec!r}. Available: {', '.join(BACKENDS)}")
    if not model.strip():
        raise RagQaArenaError(f"No model name in {spec!r}: write '<backend>:<model>', e.g. 'openai:gpt-4o'")
    return backend, model.strip()


def make_backend(
    spec: str,
    *,
    base_url: str | Sequence[str] | None = None,
    api_key: str | None = None,
    options: Mapping | None = None,
    endpoint_name: str | None = None,
) -> Backend:
    """Build the backend a spec names.

    ``base_url``/``api_key`` apply to the ``openai`` backend (defaults: ``$OPENAI_BASE_URL``,
    ``$OPENAI_API_KEY``). ``options`` are the backend's own settings, e.g. ``{"timeout": 30}`` for
    openai, ``{"device": "cpu", "batch_size": 8, "dtype": "bfloat16"}`` for hf,
    ``{"tensor_parallel_size": 4, "engine_options": {"max_model_len": 8192}}`` for vllm; an option
    the backend does not take is named in the error with the ones it does.

    >>> make_backend("hf:Qwen/Qwen2.5-0.5B-Instruct", options={"batch_size": 4}).batch_size
    4
    """
    backend, model = parse_spec(spec)
    if backend != OPENAI and (base_url is not None or api_key is not None or endpoint_name is not None):
        raise RagQaArenaError(f"base_url/api_key/endpoint_name apply to the openai backend only, not to {spec!r}")
    if backend == OPENAI:
        from metric_arena.llm._openai import OpenAIBackend as cls

        fixed = {"base_url": base_url, "api_key": api_key, "endpoint_name": endpoint_name}
    elif backend == HF:
        from metric_arena.llm._hf import HFBackend as cls

        fixed = {}
    else:
        from metric_arena.llm._vllm import VLLMBackend as cls  # imports vllm lazily

        fixed = {}
    return cls(model, **fixed, **_checked_options(cls, dict(options or {}), spec))


def _checked_options(cls: type, options: dict, spec: str) -> dict:
    """``options`` if ``cls`` takes every one of them as a keyword, else an error naming the bad ones."""
    import inspect

    accepted = [name for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and name not in ("self", "model"))]
    unknown = sorted(set(options) - set(accepted) - {"base_url", "api_key", "endpoint_name"})
    if unknown:
        raise RagQaArenaError(f"{spec!r} takes no option {', '.join(map(repr, unknown))}. "
                              f"Its options: {', '.join(a for a in accepted if a not in ('base_url', 'api_key', 'endpoint_name'))}")
    return options


def model_backend(model, tokenizer, *, name: str = "in-memory", batch_size: int = 8,
                  max_input_tokens: int | None = None) -> Backend:
    """A backend on a transformers chat model already in memory (e.g. the one being trained), spec
    ``hf:<name>``: it generates on the model's device, in eval mode (set back afterwards). Its answers
    follow the current weights: generate with ``use_cache=False``.
    """
    from metric_arena.llm._hf import HFBackend

    return HFBackend.from_model(model, tokenizer, name=name, batch_size=batch_size, max_input_tokens=max_input_tokens)


def make_backends(
    specs: str | Backend | Sequence[str | Backend],
    *,
    base_url: str | Sequence[str] | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    options: Mapping | None = None,
    endpoint_name: str | None = None,
) -> list[Backend]:
    """Backends for one spec or several (built :class:`Backend` objects pass through).

    ``base_url``, ``api_key`` and ``timeout`` go to the openai backends; ``options`` to every
    backend built here. A ``base_url`` with no openai model among the specs is a mistake and is
    refused; so is a spec given twice.
    """
    items = [specs] if isinstance(specs, (str, Backend)) else list(specs)
    if not items:
        raise RagQaArenaError("No model given: pass a '<backend>:<model>' spec such as 'openai:gpt-4o', or a list")
    names = [item.name if isinstance(item, Backend) else parse_spec(item)[0] for item in items]
    if base_url is not None and OPENAI not in names:
        raise RagQaArenaError(f"base_url applies to openai models only, not to {', '.join(map(str, items))}")
    backends: list[Backend] = []
    for item, name in zip(items, names):
        if isinstance(item, Backend):
            backends.append(item)
        elif name == OPENAI:
            extra = dict(options or {})
            if timeout is not None:
                extra["timeout"] = timeout
            backends.append(make_backend(item, base_url=base_url, api_key=api_key, options=extra,
                                         endpoint_name=endpoint_name))
        else:
            backends.append(make_backend(item, options=options))
    built = [b.spec for b in backends]
    twice = sorted({s for s in built if built.count(s) > 1})
    if twice:
        raise RagQaArenaError(f"{twice[0]!r} is given twice: list each model once")
    return backends


def backend_identity(spec: str, *, base_url: str | Sequence[str] | None = None, options: Mapping | None = None,
                     endpoint_name: str | None = None) -> dict | None:
    """The cache identity of the backend ``spec`` names, without loading a model or sending anything
    (None when the backend's package is not installed here)."""
    try:
        openai_judge = parse_spec(spec)[0] == OPENAI
        backend = make_backends(spec, base_url=base_url if openai_judge else None, api_key="unused", options=options,
                                endpoint_name=endpoint_name if openai_judge else None)[0]
    except MissingDependency:
        return None
    return backend.identity()
