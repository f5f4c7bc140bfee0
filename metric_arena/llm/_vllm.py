"""An in-process vLLM engine: every request of a group goes to the GPU(s) in one ``LLM.chat`` call.

For one machine with one or several GPUs (``tensor_parallel_size=`` splits the model across
them). Across several machines, run vLLM's own OpenAI-compatible server instead (with Ray for
multi-node parallelism) and judge with ``--judge openai:MODEL --base-url http://HOST:8000/v1``:
see ``docs/scaling.md``.

vLLM is imported only when this backend is built, with an install hint when it is missing.
The engine itself is created on the first request (loading a model takes minutes). Greedy
decoding when ``temperature == 0`` (the paper's setting), as vLLM does.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Mapping

from lfrqa.checks import check_int
from lfrqa.errors import MissingDependency, RagQaArenaError
from metric_arena.llm._types import VLLM, BackendError, ChatRequest, Completion, LocalBackend, ModelNotFound

__all__ = ["VLLMBackend"]

_INSTALL_HINT = 'the vllm backend needs vLLM and a CUDA GPU: pip install "rag-qa-arena[vllm]"'

# Engine options that change what the model answers, so they go into cache keys.
_IDENTITY_OPTIONS = ("revision", "tokenizer", "tokenizer_revision", "dtype", "quantization", "max_model_len")


def _import_vllm():
    try:
        return importlib.import_module("vllm")
    except ImportError as error:
        raise MissingDependency(f"{_INSTALL_HINT} ({error})") from error


class VLLMBackend(LocalBackend):
    """A chat model served by an in-process ``vllm.LLM`` (Hub id or local folder).

    ``engine_options`` go to ``vllm.LLM`` as they are (``max_model_len=``,
    ``gpu_memory_utilization=``, ``dtype=``, ``quantization=``, ``seed=``...).
    ``trust_remote_code`` stays off unless you ask for it: it runs code shipped with the model.

    >>> backend = VLLMBackend("Qwen/Qwen2.5-72B-Instruct", tensor_parallel_size=4)  # doctest: +SKIP
    >>> completions = await backend.complete_many(requests)  # one batched LLM.chat call  # doctest: +SKIP
    """

    name = VLLM

    def __init__(
        self,
        model: str,
        tensor_parallel_size: int = 1,
        *,
        trust_remote_code: bool = False,
        batch_size: int = 512,
        engine_options: Mapping | None = None,
    ):
        if not isinstance(model, str) or not model.strip():
            raise RagQaArenaError("The model name is empty: give a Hub id or a local folder, e.g. vllm:Qwen/Qwen2.5-7B-Instruct")
        check_int("tensor_parallel_size", tensor_parallel_size, minimum=1,
                  hint="the number of GPUs to split the model across, usually the GPUs of this machine")
        check_int("batch_size", batch_size, minimum=1)
        engine_kwargs = dict(engine_options or {})
        if "model" in engine_kwargs:
            raise RagQaArenaError("give the model once, as the first argument (or in the spec 'vllm:<model>')")
        try:
            found = importlib.util.find_spec("vllm")
        except ValueError:  # already in sys.modules without a spec
            found = True
        if not found:
            raise MissingDependency(_INSTALL_HINT)
        self.model = model.strip()
        self.tensor_parallel_size = tensor_parallel_size
        self.trust_remote_code = bool(trust_remote_code)
        self.batch_size = batch_size  # how many requests the runner may group into one call
        self.engine_kwargs = dict(engine_kwargs)
        self._llm = None
        self._lock = threading.Lock()

    def identity(self) -> dict:
        ident = {"backend": self.name, "model": self.model}
        for key in _IDENTITY_OPTIONS:
            if self.engine_kwargs.get(key) not in (None, "auto"):
                ident[key] = self.engine_kwargs[key]
        return ident

    # -- engine ------------------------------------------------------------------------------
    def _engine(self):
        if self._llm is None:
            vllm = _import_vllm()
            try:
                self._llm = vllm.LLM(
                    model=self.model,
                    tensor_parallel_size=self.tensor_parallel_size,
                    trust_remote_code=self.trust_remote_code,
                    **self.engine_kwargs,
                )
            except OSError as error:  # no such Hub id / folder
                raise ModelNotFound(f"vLLM cannot load the model {self.model!r}: {error}") from None
        return self._llm

    @staticmethod
    def sampling_params(request: ChatRequest):
        """The ``vllm.SamplingParams`` of one request (temperature, top_p, max_tokens)."""
        vllm = _import_vllm()
        return vllm.SamplingParams(
            temperature=float(request.temperature), top_p=float(request.top_p), max_tokens=int(request.max_tokens)
        )

    # -- generation --------------------------------------------------------------------------
    def _generate_sync(self, requests: list[ChatRequest]) -> list[Completion]:
        with self._lock:  # one engine, one batch at a time; vLLM schedules within the batch
            llm = self._engine()
            params = [self.sampling_params(r) for r in requests]
            if all(r.params() == requests[0].params() for r in requests):
                params = params[0]  # one SamplingParams for the whole batch when they agree
            conversations = [list(r.messages) for r in requests]
            try:
                outputs = llm.chat(conversations, params, use_tqdm=False)
            except ValueError as error:  # e.g. a prompt longer than max_model_len; no chat template
                raise BackendError(f"vLLM rejected the batch for {self.model!r}: {error}", kind="bad_request") from None
        if len(outputs) != len(requests):
            raise BackendError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests", kind="bad_reply")
        return [_to_completion(output) for output in outputs]

    async def aclose(self) -> None:
        """Drop the engine so its GPU memory can be freed."""
        self._llm = None


def _to_completion(output) -> Completion:
    first = output.outputs[0]
    prompt_ids = getattr(output, "prompt_token_ids", None)
    token_ids = getattr(first, "token_ids", None)
    return Completion(
        text=first.text,
        finish_reason=getattr(first, "finish_reason", None),
        usage={
            "prompt_tokens": None if prompt_ids is None else len(prompt_ids),
            "completion_tokens": None if token_ids is None else len(token_ids),
        },
    )
