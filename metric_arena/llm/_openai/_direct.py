"""The hot path of the openai backend: chat completions posted with aiohttp itself, no SDK in between.

One :class:`DirectClient` per replica holds one ``aiohttp.ClientSession`` (its connections kept alive) for
the event loop it was made in. A request body is encoded once (:func:`encode_body`); a reply body is read
chunk by chunk within bounds (:func:`~metric_arena.llm._openai._http.max_body_bytes`, an error body at most
:data:`~metric_arena.llm._openai._http.ERROR_BODY_BYTES`) and decoded once by
:func:`~metric_arena.llm._openai._http.parse_reply`. Errors are the backend's taxonomy, as the SDK path gives
them: HTTP 401/403 :class:`AuthenticationFailed`, 404 :class:`ModelNotFound`, 429, 408, 409 and 5xx
transient (with ``Retry-After``), other 4xx rejected; a refused or dropped connection ``"connection"``, a
slow server ``"timeout"``, a body that broke off ``"cut_body"``. The SDK keeps the uncommon endpoints and the
Batch API; ``transport="httpx"`` sends chat completions through it too.
"""

from __future__ import annotations

import asyncio
import base64
import json
from urllib.parse import urlencode

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from metric_arena.llm._openai._http import ERROR_BODY_BYTES, retry_after_seconds, tls_context
from metric_arena.llm._types import (
    AuthenticationFailed,
    BackendError,
    BadReply,
    ModelNotFound,
    TransientBackendError,
)

__all__ = ["USER_AGENT", "DirectClient", "encode_body", "status_error"]

#: What the requests say they come from.
USER_AGENT = "rag-qa-arena (aiohttp)"
# Connection failures before a reply began: the server is unreachable (refused, reset, dropped).
_UNREACHABLE = (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                aiohttp.ClientConnectionError, ConnectionError, OSError)


# ASCII JSON: a lone surrogate in a text (half an emoji) is sent escaped, as it came, never an encoding error.
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
# The encoded form of messages that recur in every request (a judge's system prompt and few-shot turns: all
# but the last message), by role and content; emptied when it holds MESSAGES_KEPT of them.
_messages: dict[tuple, bytes] = {}
MESSAGES_KEPT = 256


def encode_body(model: str, request) -> bytes:
    """The JSON body of one chat-completions request, encoded once (compact ASCII JSON); the messages before the
    last one are encoded once per process (a judge's few-shot prefix is most of every request).

    >>> from metric_arena.llm import ChatRequest
    >>> json.loads(encode_body("m", ChatRequest([{"role": "user", "content": "é"}], max_tokens=5)))["messages"]
    [{'role': 'user', 'content': 'é'}]
    """
    *prefix, last = request.messages or [None]
    parts = []
    for message in prefix:
        key = (message.get("role"), message.get("content")) if len(message) == 2 and isinstance(
            message.get("content"), str) else None
        encoded = _messages.get(key) if key is not None else None
        if encoded is None:
            encoded = _encode(message)
            if key is not None:
                if len(_messages) >= MESSAGES_KEPT:
                    _messages.clear()
                _messages[key] = encoded
        parts.append(encoded)
    if last is not None:
        parts.append(_encode(last))
    head = _encode({"model": model})[:-1]
    tail = _encode({"max_tokens": request.max_tokens, "temperature": request.temperature, "top_p": request.top_p})
    return f'{head},"messages":[{",".join(parts)}],{tail[1:]}'.encode("ascii")


def status_error(status: int, body: bytes, headers, *, describe) -> BaseException:
    """The backend error of an HTTP error reply (``status`` 400 and up): the SDK's message (``Error code: N``
    and the server's ``error.message``, when its body says one), through ``describe(what, fix, detail)``."""
    detail = f"Error code: {status}"
    try:
        reply = json.loads(body.decode("utf-8", errors="replace").strip())
    except ValueError:
        reply = None
    error = reply.get("error", reply) if isinstance(reply, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and message:
        detail += f" - {message}"
    if status == 401:
        return AuthenticationFailed(describe("authentication failed (HTTP 401)", "check OPENAI_API_KEY / --api-key",
                                             detail))
    if status == 403:
        return AuthenticationFailed(describe("permission denied (HTTP 403)", "check that the key may use this model",
                                             detail))
    if status == 404:
        return ModelNotFound(describe("model or endpoint not found (HTTP 404)",
                                      "check the model name and that the base URL ends in /v1", detail))
    if status == 429:
        return TransientBackendError(describe("rate limited (HTTP 429)", None, detail), kind="429",
                                     retry_after=retry_after_seconds(_Headers(headers)))
    if status >= 500 or status in (408, 409):
        return TransientBackendError(describe(f"server error (HTTP {status})", None, detail), kind=str(status),
                                     retry_after=retry_after_seconds(_Headers(headers)))
    return BackendError(describe(f"request rejected (HTTP {status})", None, detail), kind=str(status))


class _Headers:
    """What :func:`retry_after_seconds` reads of a reply: its headers."""

    def __init__(self, headers) -> None:
        self.headers = headers


class DirectClient:
    """POSTs to one replica's ``/chat/completions``: its URL (with the gateway's query), the headers of every
    request (the key as ``Bearer``, or the URL's credentials as ``Basic``, as the SDK's client sends them),
    and one ``aiohttp.ClientSession`` per event loop, made on first use and closed by :meth:`aclose`."""

    def __init__(self, base_url: str, *, api_key: str, query: dict, auth: tuple[str, str] | None,
                 organization: str | None, timeout: float, connect_timeout: float) -> None:
        full = base_url.rstrip("/") + "/chat/completions" + (f"?{urlencode(query)}" if query else "")
        self.url = URL(full, encoded=True)
        self.shown = base_url
        if auth is not None:
            authorization = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        else:
            authorization = f"Bearer {api_key}"
        self.headers = {"Authorization": authorization, "Content-Type": "application/json",
                        "Accept": "application/json", "User-Agent": USER_AGENT}
        if organization:
            self.headers["OpenAI-Organization"] = organization
        self.timeout = timeout
        # (no read timeout: the caller bounds the whole attempt by ``timeout``, which ends first; aiohttp would
        # move a read timer at every chunk received)
        self._timeouts = aiohttp.ClientTimeout(total=None, connect=connect_timeout)
        # $HTTPS_PROXY/$HTTP_PROXY/$NO_PROXY read once here (aiohttp's trust_env would look them and ~/.netrc up
        # in a thread for every request)
        try:
            self._proxy, self._proxy_auth = get_env_proxy_for_url(self.url)
        except LookupError:
            self._proxy, self._proxy_auth = None, None
        # a TLS context for an https URL only, made now (before any request; its trust store loads in ~20-90 ms,
        # once per process): a plain http URL has aiohttp's own verified one, should it redirect to https
        self._ssl = tls_context() if self.url.scheme == "https" else True
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    encode = staticmethod(encode_body)

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, ssl=self._ssl, enable_cleanup_closed=False)
            # the headers as the session's own: aiohttp merges a request's headers into them one by one
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeouts, headers=self.headers,
                                                  cookie_jar=aiohttp.DummyCookieJar(),
                                                  skip_auto_headers=("Accept-Encoding",), auto_decompress=False)
            self._loop = loop
        return self._session

    async def post(self, body: bytes, limit: int, describe) -> bytes:
        """The reply body of one POST of ``body``, read at most ``limit`` bytes (:class:`BadReply`
        ``"oversized_body"`` past it, ``"cut_body"`` when it broke off); an error status raises its backend
        error (:func:`status_error`, its body read at most ``ERROR_BODY_BYTES``)."""
        session = self._get_session()
        try:
            async with session.post(self.url, data=body, proxy=self._proxy, proxy_auth=self._proxy_auth) as response:
                if response.status >= 400:
                    error_body = await _read_some(response, ERROR_BODY_BYTES)
                    raise status_error(response.status, error_body, response.headers, describe=describe)
                return await self._read_body(response, limit)
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            raise TransientBackendError(f"timeout after {self.timeout:g} s at {self.shown}", kind="timeout") from None
        except _UNREACHABLE as error:
            raise TransientBackendError(f"connection error at {self.shown}: {type(error).__name__}",
                                        kind="connection") from None
        except aiohttp.ClientError as error:  # an invalid URL, a redirect loop, a bad status line...
            raise BackendError(f"request failed at {self.shown}: {type(error).__name__}") from None

    async def _read_body(self, response, limit: int) -> bytes:
        data = bytearray()
        try:
            async for chunk in response.content.iter_any():
                data += chunk
                if len(data) > limit:
                    raise BadReply(f"reply body from {self.shown} is over {limit:,} bytes (the most kept for "
                                   f"a reply of this many tokens): not read further", kind="oversized_body")
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            raise TransientBackendError(f"timeout after {self.timeout:g} s at {self.shown}", kind="timeout") from None
        except (aiohttp.ClientPayloadError, *_UNREACHABLE) as error:
            raise BadReply(f"reply body from {self.shown} broke off after {len(data):,} bytes "
                           f"({type(error).__name__})", kind="cut_body") from None
        return bytes(data)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            try:
                await session.close()
            except RuntimeError:  # made in an event loop that is closed now: its connections went with it
                pass


async def _read_some(response, limit: int) -> bytes:
    """At most ``limit`` bytes of an error reply's body (what came, if it broke off)."""
    data = bytearray()
    try:
        async for chunk in response.content.iter_any():
            data += chunk
            if len(data) >= limit:
                break
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
        pass
    return bytes(data[:limit])
