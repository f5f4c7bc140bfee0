"""A local chat model through ``transformers``: chat template, left-padded batched generation.

The model is loaded on first use. Generation runs in a worker thread so the event loop keeps
serving the cache and other judges; requests arrive in groups through :meth:`complete_many`
(the runner collects concurrent requests into batches of ``batch_size``).
Greedy decoding when ``temperature == 0`` (the paper's setting), sampling otherwise.
:meth:`HFBackend.from_model` wraps a model already in memory (e.g. the one being trained).
"""

from __future__ import annotations

import threading
from dataclasses import replace

from lfrqa.checks import check_int
from lfrqa.errors import MissingDependency, RagQaArenaError
from metric_arena.llm._types import HF, BackendError, ChatRequest, Completion, LocalBackend, ModelNotFound

_INSTALL_HINT = 'the hf backend needs transformers and torch: pip install "rag-qa-arena[hf]"'


class HFBackend(LocalBackend):
    """Any local chat model (a Hub id or a folder made with ``save_pretrained``).

    ``trust_remote_code`` stays off unless you ask for it: it runs code shipped with the model.

    >>> backend = HFBackend("Qwen/Qwen2.5-0.5B-Instruct", batch_size=16)  # doctest: +SKIP
    """

    name = HF

    def __init__(
        self,
        model: str,
        *,
        device: str | None = None,
        dtype: str = "auto",
        batch_size: int = 8,
        trust_remote_code: bool = False,
        revision: str | None = None,
        max_input_tokens: int | None = None,
    ):
        if not model:
            raise RagQaArenaError("The model name is empty: give a Hub id or a local folder, e.g. hf:Qwen/Qwen2.5-7B-Instruct")
        if int(batch_size) < 1:
            raise RagQaArenaError(f"batch_size must be >= 1, got {batch_size!r}")
        self.model = model
        self.device = device
        self.dtype = dtype
        self.batch_size = int(batch_size)
        self.trust_remote_code = bool(trust_remote_code)
        self.revision = revision
        check_int("max_input_tokens", max_input_tokens, minimum=1, optional=True)
        self.max_input_tokens = max_input_tokens  # longer prompts are refused, never truncated
        self._tokenizer = None
        self._model = None
        self._in_memory = False
        self._lock = threading.Lock()

    @classmethod
    def from_model(cls, model, tokenizer, *, name: str = "in-memory", batch_size: int = 8,
                   max_input_tokens: int | None = None) -> HFBackend:
        """A backend on a model already loaded (e.g. the one a ``Trainer`` is training), on its device.

        While it generates, the model is put in eval mode and the tokenizer pads on the left; both are
        set back afterwards. Its answers change as the weights do, so do not cache them
        (``use_cache=False``): the identity says ``in_memory``.
        """
        backend = cls(name, batch_size=batch_size, max_input_tokens=max_input_tokens)
        _check_chat_template(tokenizer, name)
        backend._tokenizer, backend._model, backend._in_memory = tokenizer, model, True
        backend._device = getattr(model, "device", None) or "cpu"
        return backend

    def identity(self) -> dict:
        ident = {"backend": self.name, "model": self.model}
        if self._in_memory:
            ident["in_memory"] = True
        if self.revision:
            ident["revision"] = self.revision
        if self.dtype not in (None, "auto"):
            ident["dtype"] = str(self.dtype)
        return ident

    # -- loading -----------------------------------------------------------------------------
    def _load(self):
        if self._model is not None:
            return self._tokenizer, self._model
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise MissingDependency(f"{_INSTALL_HINT} ({error})") from error
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                self.model, revision=self.revision, trust_remote_code=self.trust_remote_code
            )
        except (OSError, ValueError) as error:  # missing folder, unknown Hub id, bad repo id
            raise ModelNotFound(
                f"cannot load the tokenizer of {self.model!r}: {str(error).rstrip('.')}. Give a Hub id or a folder "
                "written by save_pretrained"
            ) from None
        _check_chat_template(tokenizer, self.model)
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = self.dtype
        if isinstance(dtype, str) and dtype != "auto":
            dtype = getattr(torch, dtype)
        try:
            model = AutoModelForCausalLM.from_pretrained(
                self.model, revision=self.revision, trust_remote_code=self.trust_remote_code, torch_dtype=dtype
            )
        except (OSError, ValueError) as error:
            raise ModelNotFound(f"cannot load the model {self.model!r}: {str(error).rstrip('.')}") from None
        model.to(device)
        model.eval()
        self._tokenizer, self._model, self._device = tokenizer, model, device
        return tokenizer, model

    # -- generation --------------------------------------------------------------------------
    def _generate_sync(self, requests: list[ChatRequest]) -> list[Completion]:
        with self._lock:
            if not self._in_memory:
                return self._generate_all(requests)
            tokenizer, model = self._tokenizer, self._model
            saved = tokenizer.padding_side, tokenizer.pad_token, model.training
            tokenizer.padding_side = "left"
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            model.eval()
            try:
                return self._generate_all(requests)
            finally:
                tokenizer.padding_side, tokenizer.pad_token = saved[0], saved[1]
                model.train(saved[2])

    def _generate_all(self, requests: list[ChatRequest]) -> list[Completion]:
        """Every request, grouped by decoding parameters into batches (called under ``self._lock``)."""
        tokenizer, _ = self._load()
        results: list[Completion | None] = [None] * len(requests)
        # Requests with the same decoding parameters share a batch.
        groups: dict[tuple, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault((request.max_tokens, request.temperature, request.top_p), []).append(i)
        prompts, folded = {}, set()
        for i, request in enumerate(requests):
            prompts[i], was_folded = _chat_prompt(tokenizer, request.messages)
            if was_folded:
                folded.add(i)
        for i, prompt in prompts.items():
            refusal = self._refusal(tokenizer, prompt)
            if refusal is not None:
                results[i] = refusal  # refused, never truncated; the others still run
        for (max_tokens, temperature, top_p), indices in groups.items():
            indices = [i for i in indices if results[i] is None]
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                batch = [prompts[i] for i in chunk]
                for i, completion in zip(chunk, self._generate_batch(batch, max_tokens, temperature, top_p)):
                    results[i] = replace(completion, system_folded=True) if i in folded else completion
        return results  # type: ignore[return-value]

    def _refusal(self, tokenizer, prompt: str) -> BackendError | None:
        """The error for a prompt over ``max_input_tokens`` (counted with the model's own tokenizer)."""
        if not self.max_input_tokens:
            return None
        n = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if n <= self.max_input_tokens:
            return None
        return BackendError(f"prompt has {n} tokens, over the max_input_tokens budget of {self.max_input_tokens} of "
                            f"{self.model!r}: not sent. Raise max_input_tokens up to the model's context window, "
                            "or shorten the input", kind="over_budget")

    def _generate_batch(self, prompts: list[str], max_tokens: int, temperature: float, top_p: float) -> list[Completion]:
        import torch

        tokenizer, model = self._tokenizer, self._model
        encoded_kwargs = {"return_tensors": "pt", "padding": True, "add_special_tokens": False}
        encoded = tokenizer(prompts, **encoded_kwargs)
        encoded = {"input_ids": encoded["input_ids"].to(self._device),
                   "attention_mask": encoded["attention_mask"].to(self._device)}
        generate_kwargs = {"max_new_tokens": int(max_tokens), "pad_token_id": tokenizer.pad_token_id}
        if temperature and temperature > 0:
            generate_kwargs.update(do_sample=True, temperature=float(temperature), top_p=float(top_p))
        else:
            generate_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            output = model.generate(**encoded, **generate_kwargs)
        prompt_len = encoded["input_ids"].shape[1]
        eos_ids = _eos_ids(model, tokenizer)
        completions = []
        for row, mask in zip(output, encoded["attention_mask"]):
            new = row[prompt_len:].tolist()
            # drop padding after the end of the sequence
            n_new = len(new)
            while n_new and new[n_new - 1] == tokenizer.pad_token_id and tokenizer.pad_token_id not in eos_ids:
                n_new -= 1
            new = new[:n_new]
            stopped = any(token in eos_ids for token in new)
            if stopped:
                first_eos = next(i for i, token in enumerate(new) if token in eos_ids)
                new = new[:first_eos]
            text = tokenizer.decode(new, skip_special_tokens=True)
            completions.append(
                Completion(
                    text=text,
                    finish_reason="stop" if stopped or len(new) < max_tokens else "length",
                    usage={"prompt_tokens": int(mask.sum()), "completion_tokens": len(new)},
                )
            )
        return completions


def _check_chat_template(tokenizer, model: str) -> None:
    if getattr(tokenizer, "chat_template", None) is None:
        raise BackendError(
            f"the tokenizer of {model!r} has no chat_template: use an instruction-tuned (chat) model, "
            "or set tokenizer.chat_template and save it",
            kind="config",
        )


def _chat_prompt(tokenizer, messages: list[dict]) -> tuple[str, bool]:
    """``(prompt, folded)``: the chat template's prompt, and whether the system prompt was folded.

    A template that refuses the system role (Mistral, Gemma: ``raise_exception("System role not
    supported")``, which transformers raises as ``jinja2.exceptions.TemplateError``) gets the system
    text as a first user turn answered "I understand.", as the reference implementation does;
    ``folded`` is then True, and the completion says so (``Completion.system_folded``). Only the
    template's own error is caught: any other error (a bug, a bad message) propagates.
    """
    from jinja2.exceptions import TemplateError

    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True), False
    except TemplateError:
        if not messages or messages[0].get("role") != "system":
            raise
    folded = [{"role": "user", "content": messages[0]["content"]}, {"role": "assistant", "content": "I understand."}]
    return tokenizer.apply_chat_template(folded + list(messages[1:]), tokenize=False, add_generation_prompt=True), True


def _eos_ids(model, tokenizer) -> set[int]:
    ids = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(v for v in value if isinstance(v, int))
    return ids
