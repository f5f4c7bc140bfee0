"""Any OpenAI-compatible chat-completions server: OpenAI itself, vLLM/TGI/SGLang servers, proxies.

One attempt per call (the client's own retries are off: :mod:`metric_arena.llm._runner` retries with
its declarative policy and counts every error kind). The API key comes from ``api_key=`` or
``$OPENAI_API_KEY`` and is never logged, cached or put into an error message.
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from urllib.parse import urlsplit

from lfrqa.errors import RagQaArenaError
from metric_arena.llm._types import (
    AuthenticationFailed,
    Backend,
    BackendError,
    BadReply,
    ChatRequest,
    Completion,
    ModelNotFound,
    TransientBackendError,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{4,}|hf_[A-Za-z0-9]{8,})")


class OpenAIBackend(Backend):
    """Chat completions over HTTP with ``openai.AsyncOpenAI``.

    >>> backend = OpenAIBackend("gpt-4o", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")
    >>> backend.identity()
    {'backend': 'openai', 'model': 'gpt-4o', 'host': '127.0.0.1'}
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        organization: str | None = None,
    ):
        if not model:
            raise RagQaArenaError("The model name is empty: give one, e.g. make_backend('openai:gpt-4o')")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RagQaArenaError(
                f"Invalid base URL {self.base_url!r}: give the server's full URL, e.g. http://localhost:8000/v1"
            )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            if parts.hostname == "api.openai.com":
                raise RagQaArenaError(
                    "No OpenAI API key: set the OPENAI_API_KEY environment variable (or pass api_key=); "
                    "keys on the command line end up in shell history."
                )
            key = "EMPTY"  # local OpenAI-compatible servers (vLLM...) accept any key
        self._api_key = key
        self.timeout = float(timeout)
        self._organization = organization
        self._client = None

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model, "host": urlsplit(self.base_url).hostname}

    def _get_client(self):
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                organization=self._organization,
                max_retries=0,
                timeout=self.timeout,
            )
        return self._client

    async def complete(self, request: ChatRequest) -> Completion:
        import openai

        client = self._get_client()
        try:
            # The same body as chat.completions.create(...), posted without the client's recursive
            # re-validation of the messages (milliseconds per 8 KB judge request).
            response = await client.post(
                "/chat/completions",
                body={
                    "model": self.model,
                    "messages": request.messages,
                    "max_tokens": request.max_tokens,
                    "temperature": request.temperature,
                    "top_p": request.top_p,
                },
                cast_to=ChatCompletionType(),
            )
        except openai.AuthenticationError as error:
            raise AuthenticationFailed(self._describe(error, "authentication failed (HTTP 401)",
                                                      "check OPENAI_API_KEY / --api-key")) from None
        except openai.PermissionDeniedError as error:
            raise AuthenticationFailed(self._describe(error, "permission denied (HTTP 403)",
                                                      "check that the key may use this model")) from None
        except openai.NotFoundError as error:
            raise ModelNotFound(self._describe(error, "model or endpoint not found (HTTP 404)",
                                               "check the model name and that the base URL ends in /v1")) from None
        except openai.RateLimitError as error:
            raise TransientBackendError(self._describe(error, "rate limited (HTTP 429)"), kind="429",
                                        retry_after=_retry_after(error.response)) from None
        except openai.APITimeoutError:
            raise TransientBackendError(f"timeout after {self.timeout:g} s at {self.base_url}", kind="timeout") from None
        except openai.APIConnectionError as error:
            raise TransientBackendError(f"connection error at {self.base_url}: {type(error).__name__}",
                                        kind="connection") from None
        except openai.APIStatusError as error:
            status = error.status_code
            if status >= 500 or status in (408, 409):
                raise TransientBackendError(self._describe(error, f"server error (HTTP {status})"), kind=str(status),
                                            retry_after=_retry_after(error.response)) from None
            raise BackendError(self._describe(error, f"request rejected (HTTP {status})"), kind=str(status)) from None
        except (ValueError, openai.APIResponseValidationError) as error:  # body is not (valid) JSON
            raise BadReply(f"malformed reply body from {self.base_url}: {type(error).__name__}",
                           kind="malformed") from None
        return _to_completion(response, self.base_url)

    def _describe(self, error, what: str, fix: str | None = None) -> str:
        detail = redact(getattr(error, "message", "") or str(error), self._api_key)
        text = f"{what} at {self.base_url} for model {self.model!r}"
        if fix:
            text += f": {fix}"
        return f"{text}. Server said: {detail}" if detail else text

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def ChatCompletionType():  # noqa: N802 - a type, imported lazily
    from openai.types.chat import ChatCompletion

    return ChatCompletion


def _to_completion(response, base_url: str) -> Completion:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BadReply(f"reply from {base_url} has no choices", kind="empty_choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None)
    if text is None:
        raise BadReply(f"reply from {base_url} has no message content", kind="empty_choices")
    usage = getattr(response, "usage", None)
    usage_dict = None
    if usage is not None:
        usage_dict = {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        }
    return Completion(text=str(text), finish_reason=getattr(choice, "finish_reason", None), usage=usage_dict)


def _retry_after(response) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if response is None:
        return None
    headers = response.headers
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, key: str | None) -> str:
    if key and key != "EMPTY" and len(key) >= 4:
        text = text.replace(key, "***")
    return _KEY_PATTERN.sub("***", text)
