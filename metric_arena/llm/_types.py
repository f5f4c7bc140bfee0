"""What every LLM backend speaks: one chat request in, one completion out.

A backend makes exactly one attempt per call; retries, the cache and concurrency limits live in
:mod:`metric_arena.llm._runner`, so every backend gets the same policy. Errors are sorted into the
kinds the runner acts on:

- :class:`AuthenticationFailed`, :class:`ModelNotFound`: fatal, the run stops at once;
  :class:`ServerUnreachable` (raised by the runner, not a backend) too;
- :class:`TransientBackendError`: retried with exponential backoff (honouring ``retry_after``);
- :class:`BadReply`: the server answered but the body is unusable (malformed JSON, no choices);
  it counts as a failed attempt of the item, like a reply without a valid rating.
"""

from __future__ import annotations

import abc
import asyncio
import hashlib
import json
import re
from dataclasses import dataclass

from lfrqa.errors import ArenaError
#: The backends' names, as a spec writes them (``"openai:gpt-4o"``): the registry
#: (:data:`metric_arena.llm.BACKENDS`) is keyed by them; code elsewhere compares with these, never a literal.
OPENAI, HF, VLLM = "openai", "hf", "vllm"


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions request: messages ``[{"role", "content"}]`` and decoding parameters."""

    messages: list[dict]
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0

    def params(self) -> dict:
        """The decoding parameters, as they go into a cache key."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p}


@dataclass
class Completion:
    """The assistant's text, why it stopped (``"stop"``, ``"length"``...) and token usage when known.

    ``original_chars`` is set when the reply was longer than what is kept (see
    :func:`~metric_arena.llm.max_reply_chars`): its full length in characters; ``text`` is then cut.
    ``system_folded`` is True when a local model's chat template refused the system role and the
    system prompt was sent at the start of the first user turn instead (the prompt the model saw
    differs from the one asked for). ``model``: the model the reply names (its ``model`` field), when
    the server said; ``imported_from``: the result file an imported answer came from (``judge
    --import-results``), None for an answer of a server.
    """

    text: str
    finish_reason: str | None = None
    usage: dict | None = None
    original_chars: int | None = None
    system_folded: bool = False
    model: str | None = None
    imported_from: str | None = None


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})")


def same_model(requested: str, replied: str | None) -> bool:
    """Whether a reply naming model ``replied`` answers a request for ``requested``: the same name, or a
    dated snapshot of it (``gpt-4o`` answered as ``gpt-4o-2024-08-06`` or ``gpt-4-0613``, as OpenAI
    names them). A reply naming no model is taken as the requested one (nothing to compare).

    >>> same_model("gpt-4o", "gpt-4o-2024-08-06"), same_model("judge", "judge"), same_model("judge", "evil")
    (True, True, False)
    """
    if replied is None or replied == requested:
        return True
    return replied.startswith(requested) and _SNAPSHOT.fullmatch(replied[len(requested):]) is not None


_IMPORTED = "import:"  # the cache's backend column for an imported answer: "import:" + {"file", "model"}


def import_source(file: str, model: str | None) -> str:
    """What the cache records as the source of an answer imported from result file ``file`` whose reply
    named ``model`` (read back by :func:`imported_fields` into the completion's ``imported_from``)."""
    return _IMPORTED + json.dumps({"file": file, "model": model}, sort_keys=True, ensure_ascii=False)


def imported_fields(source: str | None) -> dict:
    """``{"file", "model"}`` of a cached answer's recorded source when it was imported, else ``{}``."""
    if not source or not source.startswith(_IMPORTED):
        return {}
    try:
        found = json.loads(source[len(_IMPORTED):])
    except ValueError:
        found = None
    return {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {"file": "?"}


class BackendError(ArenaError):
    """Base class of the errors a backend raises. ``kind`` is the counter it goes into."""

    kind = "error"

    def __init__(self, message: str, *, kind: str | None = None):
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class AuthenticationFailed(BackendError):
    """The server refused the credentials (HTTP 401/403). Fatal: fix the key, then re-run."""

    kind = "auth"


class ModelNotFound(BackendError):
    """The server does not serve this model (HTTP 404). Fatal: fix the model name or the URL."""

    kind = "404"


class ServerUnreachable(BackendError):
    """Nothing has got through to the server yet and every attempt failed for a while (connection
    refused, timeouts, only 5xx or 429 replies). Fatal: fix the URL or start the server, then re-run."""

    kind = "unreachable"


class TransientBackendError(BackendError):
    """A failure worth retrying (429, 5xx, timeout, dropped connection).

    ``retry_after`` is the server's ``Retry-After`` in seconds, when it sent one.
    """

    kind = "transient"

    def __init__(self, message: str, *, kind: str | None = None, retry_after: float | None = None):
        super().__init__(message, kind=kind)
        self.retry_after = retry_after


class BadReply(BackendError):
    """The server answered 200 but the body is unusable (malformed JSON, empty choices)."""

    kind = "bad_reply"


class Backend(abc.ABC):
    """An LLM that answers chat requests. Subclasses set ``name`` and ``model``."""

    name: str = "backend"
    model: str = ""

    @abc.abstractmethod
    async def complete(self, request: ChatRequest) -> Completion:
        """Answer one request (one attempt, no retries)."""

    async def complete_many(self, requests: list[ChatRequest]) -> list[Completion]:
        """Answer several requests; local backends override this to batch them on the device.

        The default runs :meth:`complete` concurrently. An error of any request propagates.
        """
        return list(await asyncio.gather(*(self.complete(r) for r in requests)))

    @property
    def batched(self) -> bool:
        """True when :meth:`complete_many` is overridden (the runner then groups requests)."""
        return type(self).complete_many is not Backend.complete_many

    def identity(self) -> dict:
        """What distinguishes this backend's answers, for cache keys. Never holds secrets."""
        return {"backend": self.name, "model": self.model}

    def endpoints(self) -> dict | None:
        """Where the requests went, for the run's summary (HTTP backends: the endpoint name and each replica
        with its counts; never a secret); None for a backend with no server."""
        return None

    @property
    def spec(self) -> str:
        """``"<backend>:<model>"``, as given to :func:`~metric_arena.make_backend`."""
        return f"{self.name}:{self.model}"

    async def aclose(self) -> None:
        """Release connections or device memory."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class LocalBackend(Backend):
    """A backend that batches requests on a local device (hf, vllm); subclasses write
    :meth:`_generate_sync` (which holds ``self._lock`` while it uses the model: one batch at a time).

    Requests arrive in groups through :meth:`Backend.complete_many` (the runner collects
    concurrent requests into batches of ``batch_size``) and are generated by a blocking ``_generate_sync`` in a
    worker thread, so the event loop keeps serving the cache and other judges meanwhile.
    """

    async def complete(self, request: ChatRequest) -> Completion:
        result = (await self.complete_many([request]))[0]
        if isinstance(result, BaseException):
            raise result
        return result

    async def complete_many(self, requests: list[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        return await asyncio.to_thread(self._generate_sync, list(requests))

    @abc.abstractmethod
    def _generate_sync(self, requests: list[ChatRequest]) -> list[Completion]:
        """One completion per request, in order (blocking; called in a worker thread). A request that
        cannot be answered alone (e.g. a prompt over the input budget) gets its error in its place."""


# -- cache keys (metric_arena.llm._cache) ----------------------------------------------------------
#: The version of the cache key's layout.
KEY_VERSION = 1


def canonical_json(obj) -> str:
    return _canonical(obj)


# json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")) without an encoder made per call
_canonical = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode


def cache_keys(identity: dict, request: ChatRequest, attempts) -> list[str]:
    """:func:`~metric_arena.llm._cache.cache_key` of each of ``attempts``, the request serialized once
    (``attempt`` sorts first). The hash of what precedes the last message (attempt, backend, a judge's fixed
    prompt and few-shot turns) is kept per process and continued: a request hashes its own last message only."""
    messages = request.messages
    if not isinstance(messages, (list, tuple)):
        rest = canonical_json({"v": KEY_VERSION, "backend": identity, "params": request.params(), "messages": messages})
        return [hashlib.sha256(f'{{"attempt":{int(a)},{rest[1:]}'.encode("utf-8")).hexdigest() for a in attempts]
    backend, prefix = canonical_json(identity), tuple(_message_json(m) for m in messages[:-1])
    last = (("," if prefix else "") + canonical_json(messages[-1])) if messages else ""
    # canonical JSON sorts the keys: attempt, backend, messages, params, v
    tail = f'{last}],"params":{canonical_json(request.params())},"v":{KEY_VERSION}}}'.encode("utf-8")
    keys = []
    for a in map(int, attempts):
        head = _heads.get((a, backend, prefix))
        if head is None:
            head = hashlib.sha256(f'{{"attempt":{a},"backend":{backend},"messages":[{",".join(prefix)}'.encode())
            _kept(_heads)[(a, backend, prefix)] = head
        digest = head.copy()
        digest.update(tail)
        keys.append(digest.hexdigest())
    return keys


# Per process: the canonical JSON of recurring messages (by role and content) and the hash states of key
# beginnings, each emptied when it holds _KEPT of them.
_KEPT = 256
_message_texts: dict[tuple, str] = {}
_heads: dict[tuple, object] = {}


def _kept(memo: dict) -> dict:
    if len(memo) >= _KEPT:
        memo.clear()
    return memo


def _message_json(message) -> str:
    if not (isinstance(message, dict) and len(message) == 2 and all(isinstance(v, str) for v in message.values())):
        return canonical_json(message)
    key = tuple(message.items())
    text = _message_texts.get(key)
    if text is None:
        text = _kept(_message_texts)[key] = canonical_json(message)
    return text
