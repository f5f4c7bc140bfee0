"""Any OpenAI-compatible chat-completions server: OpenAI itself, vLLM/TGI/SGLang servers, proxies.

One attempt per call (the client's own retries are off: :mod:`metric_arena.llm._runner` retries with
its declarative policy and counts every error kind). The API key comes from ``api_key=`` or
``$OPENAI_API_KEY`` and is never logged, cached or put into an error message.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import json
import os
import re
import time
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from builders import redact_secrets
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
#: The longest wait for a connection (``--timeout`` bounds the whole attempt).
CONNECT_TIMEOUT = 10.0
#: The most bytes of an error reply's body read (its message is shown, redacted, in one line).
ERROR_BODY_BYTES = 1 << 16
# The openai client's request header that leaves a reply body unread (what with_streaming_response sets).
_RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
# Query parameters of --base-url whose value is a credential (gateway style: ?api-key=..., ?sig=...).
_SECRET_PARAM = re.compile(r"key|token|secret|sig|pass|auth|cred|session|code", re.IGNORECASE)


class OpenAIBackend(Backend):
    """Chat completions over HTTP with ``openai.AsyncOpenAI``.

    >>> backend = OpenAIBackend("gpt-4o", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")
    >>> backend.identity()
    {'backend': 'openai', 'model': 'gpt-4o', 'url': 'http://127.0.0.1:8000/v1'}
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
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
        # URL credentials (http://user:key@host/v1) go to the client as basic auth, as httpx would
        # take them from the URL, and never into a message, a log line or the cache key.
        self.base_url, self._url_auth = split_credentials(url)
        # A query string (gateway style: /v1?api-key=...) is sent with every request, as the client's
        # default query, and never shown: base_url keeps scheme, host, port and path only.
        self.base_url, self._query = split_query(self.base_url)
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            if urlsplit(self.base_url).hostname == "api.openai.com":
                raise RagQaArenaError(
                    "No OpenAI API key: set the OPENAI_API_KEY environment variable (or pass api_key=); "
                    "keys on the command line end up in shell history."
                )
            key = "EMPTY"  # local OpenAI-compatible servers (vLLM...) accept any key
        if key != key.strip() or any(ord(c) < 32 or ord(c) == 127 for c in key):
            where = "api_key" if api_key is not None else "$OPENAI_API_KEY"
            raise RagQaArenaError(f"The API key in {where} has whitespace or a control character around or in it (a "
                                  "newline from a key file or a CRLF .env?): no header can carry it, so nothing was "
                                  "sent. Remove it, e.g. export OPENAI_API_KEY=\"$(tr -d '\\r\\n' < keyfile)\"")
        self._api_key = key
        self._secrets = _secrets(key, self._url_auth) + query_secrets(self._query)
        self.timeout = float(timeout)
        self._organization = organization
        self._client = None

    def identity(self) -> dict:
        """Backend, model and the server's URL (scheme, host, port and path; never credentials)."""
        parts = urlsplit(self.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return {"backend": self.name, "model": self.model, "url": f"{parts.scheme}://{host}:{port}{parts.path}"}

    def redact(self, text: str) -> str:
        """``text`` without this backend's key or URL credentials (nor anything shaped like a key)."""
        return redact(text, *self._secrets)

    def _get_client(self):
        if self._client is None:
            import openai

            # --timeout bounds each attempt as a whole (see complete); connecting gets at most 10 s,
            # so a host that never answers is known early.
            # An error reply's body is read at most ERROR_BODY_BYTES (bound_error_body): the client
            # would read it whole before raising.
            http_client = openai.DefaultAsyncHttpxClient(auth=self._url_auth,
                                                         event_hooks={"response": [bound_error_body]})
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                organization=self._organization,
                max_retries=0,
                default_query=self._query or None,
                timeout=openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT)),
                http_client=http_client,
            )
        return self._client

    async def complete(self, request: ChatRequest) -> Completion:
        import openai

        client = self._get_client()
        body = {"model": self.model, "messages": request.messages, "max_tokens": request.max_tokens,
                "temperature": request.temperature, "top_p": request.top_p}
        limit = max_body_bytes(request.max_tokens)
        try:
            # The same body as chat.completions.create(...), posted without the client's recursive
            # re-validation of the messages (milliseconds per 8 KB judge request), its reply body left
            # unread: it is read here, at most ``limit`` bytes of it. The client's own timeout bounds
            # each read only: a server sending a byte a second would hold it forever.
            raw = await asyncio.wait_for(self._post(client, body, limit), self.timeout)
        except asyncio.TimeoutError:
            raise TransientBackendError(f"no complete reply within the {self.timeout:g} s timeout from "
                                        f"{self.base_url}", kind="timeout") from None
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        return parse_reply(raw, self.base_url, self.redact)

    async def _post(self, client, body: dict, limit: int) -> bytes:
        """The reply body of one POST, read chunk by chunk: :class:`BadReply` ("oversized_body") once it
        passes ``limit`` bytes (the rest is never read), ("cut_body") when the server answered but the
        body broke off (a truncated chunked body is a bad reply, not an unreachable server)."""
        http = http_library()
        response = await client.post("/chat/completions", body=body, cast_to=http.Response,
                                     options={"headers": {_RAW_RESPONSE_HEADER: "stream"}})
        data = bytearray()
        try:
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > limit:
                    raise BadReply(f"reply body from {self.base_url} is over {limit:,} bytes (the most kept for "
                                   f"a reply of this many tokens): not read further", kind="oversized_body")
        except http.TimeoutException:
            raise TransientBackendError(f"timeout after {self.timeout:g} s at {self.base_url}",
                                        kind="timeout") from None
        except (http.TransportError, OSError) as error:
            raise BadReply(f"reply body from {self.base_url} broke off after {len(data):,} bytes "
                           f"({type(error).__name__})", kind="cut_body") from None
        finally:
            await response.aclose()
        return bytes(data)

    def _translate(self, error) -> BaseException:
        """The backend error an ``openai`` exception stands for."""
        import openai

        if isinstance(error, openai.AuthenticationError):
            return AuthenticationFailed(self._describe(error, "authentication failed (HTTP 401)",
                                                       "check OPENAI_API_KEY / --api-key"))
        if isinstance(error, openai.PermissionDeniedError):
            return AuthenticationFailed(self._describe(error, "permission denied (HTTP 403)",
                                                       "check that the key may use this model"))
        if isinstance(error, openai.NotFoundError):
            return ModelNotFound(self._describe(error, "model or endpoint not found (HTTP 404)",
                                                "check the model name and that the base URL ends in /v1"))
        if isinstance(error, openai.RateLimitError):
            return TransientBackendError(self._describe(error, "rate limited (HTTP 429)"), kind="429",
                                         retry_after=_retry_after(error.response))
        if isinstance(error, openai.APITimeoutError):
            return TransientBackendError(f"timeout after {self.timeout:g} s at {self.base_url}", kind="timeout")
        if isinstance(error, openai.APIConnectionError):
            return TransientBackendError(f"connection error at {self.base_url}: {type(error).__name__}",
                                         kind="connection")
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            if status >= 500 or status in (408, 409):
                return TransientBackendError(self._describe(error, f"server error (HTTP {status})"), kind=str(status),
                                             retry_after=_retry_after(error.response))
            return BackendError(self._describe(error, f"request rejected (HTTP {status})"), kind=str(status))
        if isinstance(error, openai.APIResponseValidationError):
            return BadReply(f"malformed reply body from {self.base_url}: {type(error).__name__}", kind="malformed")
        return BackendError(f"request failed at {self.base_url}: {type(error).__name__}")

    def _describe(self, error, what: str, fix: str | None = None) -> str:
        detail = self.redact(getattr(error, "message", "") or str(error))
        text = f"{what} at {self.base_url} for model {self.model!r}"
        if fix:
            text += f": {fix}"
        return f"{text}. Server said: {detail}" if detail else text

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


@functools.lru_cache(maxsize=1)
def http_library():
    """The HTTP library the installed ``openai`` client is built on: ``httpx``, or its fork ``httpx2``
    (openai 3); the same names (``Response``, ``TimeoutException``, ``TransportError``) in both."""
    import importlib

    import openai

    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__[1:] if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.split(".")[0])


async def bound_error_body(response) -> None:
    """An HTTP client hook: the body of an error reply (HTTP 400 and up) read now, at most
    :data:`ERROR_BODY_BYTES` of it (the connection is then closed), and kept as the reply's content,
    so the client's error handling never reads a huge error body whole."""
    if response.status_code < 400:
        return
    http = http_library()
    data = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) >= ERROR_BODY_BYTES:
                break
    except (http.HTTPError, OSError):  # cut off, undecodable: what came is what there is
        pass
    finally:
        await response.aclose()
    response._content = bytes(data[:ERROR_BODY_BYTES])  # what .text and .json() read (the stream is closed)


def max_body_bytes(max_tokens: int) -> int:
    """The most bytes of a reply body read for a request of ``max_tokens`` tokens: 1 MiB of room for
    the JSON around the text, plus 256 bytes per token (32 kept characters, each up to 6 bytes and
    more when escaped). A longer body is an unusable reply, never read whole."""
    return (1 << 20) + 256 * max(1, int(max_tokens))


def _clean_text(text: str) -> str | None:
    """``text`` with no lone surrogate (half an emoji, JSON-escaped), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


def message_text(content) -> str | None:
    """The text of a reply message's ``content``: a string as it is, a list of parts (what some
    gateways send) as its text parts joined; None for anything else.

    >>> message_text([{"type": "text", "text": "Paris"}, {"type": "text", "text": " is."}])
    'Paris is.'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(
            isinstance(part, dict) and part.get("type") in ("text", "output_text")
            and isinstance(part.get("text"), str) for part in content):
        return "".join(part["text"] for part in content)
    return None


def parse_reply(raw: bytes, base_url: str, clean=lambda text: text) -> Completion:
    """The completion in a chat-completions reply body, or :class:`BadReply` naming the kind of
    trouble: ``malformed`` (not strict JSON, or fields of the wrong type), ``empty_choices`` (no
    choice or no content), ``bad_unicode`` (not UTF-8, or a lone surrogate in the text),
    ``content_filter`` (the server's filter blocked the reply)."""
    try:
        text_body = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadReply(f"reply body from {base_url} is not UTF-8", kind="bad_unicode") from None
    try:
        reply = json.loads(text_body, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # not JSON
        raise BadReply(f"malformed reply body from {base_url}: not JSON", kind="malformed") from None
    if not isinstance(reply, dict):
        raise BadReply(f"malformed reply body from {base_url}: a JSON {type(reply).__name__}, not an object",
                       kind="malformed")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadReply(f"reply from {base_url} has no choices", kind="empty_choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    finish_reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise BadReply(f"reply from {base_url} has a finish_reason that is a JSON {type(finish_reason).__name__}, "
                       "not a string", kind="malformed")
    if finish_reason == "content_filter":
        raise BadReply(f"reply from {base_url} was blocked by the server's content filter "
                       "(finish_reason content_filter)", kind="content_filter")
    content = message.get("content") if isinstance(message, dict) else None
    if content is None:
        raise BadReply(f"reply from {base_url} has no message content", kind="empty_choices")
    text = message_text(content)
    if text is None:
        raise BadReply(f"reply from {base_url} has message content that is a JSON {type(content).__name__}, "
                       "not text (nor a list of text parts)", kind="malformed")
    text = _clean_text(text)
    if text is None:
        raise BadReply(f"reply from {base_url} holds a lone surrogate (half a character)", kind="bad_unicode")
    usage = reply.get("usage")
    usage_dict = None
    if isinstance(usage, dict):
        usage_dict = {name: value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
                      for name, value in ((n, usage.get(n)) for n in ("prompt_tokens", "completion_tokens"))}
    return Completion(text=clean(text), finish_reason=finish_reason, usage=usage_dict)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


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


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with each of ``secrets`` (4 characters or more; not the placeholder ``EMPTY``), in
    every encoding derivable from it (case, reversed, URL-encoded, hex, base64), and anything shaped
    like an OpenAI or Hugging Face key replaced by ``***``; see :func:`builders.redact_secrets`.

    >>> redact("Authorization: Bearer my-proxy-token-1 (sk-abcd1234efgh5678ijkl)", "my-proxy-token-1")
    'Authorization: Bearer *** (***)'
    """
    return redact_secrets(text, *secrets)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that part (None when there is none).

    >>> split_credentials("http://me:s3cret@proxy.example:8080/v1")
    ('http://proxy.example:8080/v1', ('me', 's3cret'))
    """
    parts = urlsplit(url)
    has_auth = parts.username is not None or parts.password is not None
    try:
        port = parts.port
    except ValueError:  # not a number
        port, parts = None, parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = "(a URL with credentials)" if has_auth or parts.query else repr(url)
        raise RagQaArenaError(f"Invalid base URL {shown}: give the server's full URL, e.g. http://localhost:8000/v1")
    if not has_auth:
        return url, None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host + (f":{port}" if port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc)), (unquote(parts.username or ""), unquote(parts.password or ""))


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query string (and fragment), and the query's parameters.

    >>> split_query("https://gw.example/v1?api-key=s3cr3t&api-version=2024-06-01")
    ('https://gw.example/v1', {'api-key': 's3cr3t', 'api-version': '2024-06-01'})
    """
    parts = urlsplit(url)
    if not parts.query and not parts.fragment:
        return url, {}
    return urlunsplit(parts._replace(query="", fragment="")), dict(parse_qsl(parts.query, keep_blank_values=True))


def query_secrets(query: dict[str, str]) -> tuple[str, ...]:
    """The values of ``query`` that are credentials: those of parameters named like one (``api-key``,
    ``token``, ``sig``...), and any long value mixing letters and digits."""
    found = []
    for name, value in query.items():
        mixed = len(value) >= 16 and re.search(r"[0-9]", value) and re.search(r"[A-Za-z]", value)
        if value and (_SECRET_PARAM.search(name) or mixed):
            found.append(value)
    return tuple(found)


def _secrets(key: str, url_auth: tuple[str, str] | None) -> tuple[str, ...]:
    """What must never be stored: the key, the URL's password (also in the base64 form a Basic
    Authorization header carries), and its user name when it is the only credential
    (``http://TOKEN@host``) or long enough to be one."""
    found = [key]
    if url_auth is not None:
        user, password = url_auth
        found += [password, base64.b64encode(f"{user}:{password}".encode()).decode()]  # as sent: Basic …
        if not password or len(user) >= 8:
            found.append(user)
    return tuple(found)
