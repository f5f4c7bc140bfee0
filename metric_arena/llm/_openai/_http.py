"""The HTTP side of the OpenAI-compatible backend: transports (aiohttp or httpx, one TLS context), reply bodies
read within bounds and parsed strictly, and the server URL's credentials kept apart from what is shown (which
replica takes a request: :mod:`metric_arena.llm._openai._balance`)."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import json
import os
import re
import ssl
import time
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from lfrqa.errors import RagQaArenaError
from metric_arena.llm._types import BadReply, Completion

__all__ = [
    "ERROR_BODY_BYTES", "HOOKS", "RAW_RESPONSE_HEADER", "attempt_timeout", "bound_error_body", "clean_text",
    "dropped_connection", "http_client", "http_library", "max_body_bytes", "message_text", "parse_reply",
    "query_secrets", "retry_after_seconds", "split_credentials", "split_query", "tls_context", "url_secrets",
]

#: The most bytes of an error reply's body read (its message is shown, redacted, in one line).
ERROR_BODY_BYTES = 1 << 16
# The openai client's request header that leaves a reply body unread (what with_streaming_response sets).
RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
# Query parameters of --base-url whose value is a credential (gateway style: ?api-key=..., ?sig=...).
_SECRET_PARAM = re.compile(r"key|token|secret|sig|pass|auth|cred|session|code", re.IGNORECASE)


def attempt_timeout(seconds: float):
    """A context manager raising ``asyncio.TimeoutError`` in the block after ``seconds``: ``asyncio.timeout``
    (Python 3.11+: no task per call); before 3.11, a stand-in that cancels the task the same way."""
    if hasattr(asyncio, "timeout"):
        return asyncio.timeout(seconds)
    return _Timeout(seconds)


class _Timeout:
    """``asyncio.timeout`` for Python 3.10: the current task cancelled after ``seconds``, seen as a timeout."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.fired, self.handle = seconds, False, None

    async def __aenter__(self) -> None:
        task = asyncio.current_task()

        def fire() -> None:
            self.fired = True
            task.cancel()

        self.handle = asyncio.get_running_loop().call_later(self.seconds, fire)

    async def __aexit__(self, kind, error, trace) -> None:
        self.handle.cancel()
        if self.fired and kind is asyncio.CancelledError:
            raise asyncio.TimeoutError from None


def dropped_connection(error: BaseException) -> bool:
    """Whether a "timeout" is a dropped or refused connection: the aiohttp transport reports those as
    httpx's ``ConnectTimeout``; the aiohttp error it wraps tells them apart."""
    seen = error.__cause__ or error.__context__
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ in ("ServerDisconnectedError", "ClientOSError", "ClientConnectorError",
                                   "ClientConnectionResetError"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def http_client(transport: str, *, auth: tuple[str, str] | None = None):
    """The SDK's HTTP client for ``transport``: its aiohttp transport (``openai[aiohttp]``: ~0.2 ms of CPU per
    request where the default httpx pool spends 2-3 ms, the ceiling at hundreds of requests in flight) when
    installed and asked for (``"auto"``, ``"aiohttp"``), else its default httpx client."""
    import openai

    if transport != "httpx":
        try:
            return openai.DefaultAioHttpClient(auth=auth, verify=tls_context(), event_hooks=HOOKS)
        except (RuntimeError, AttributeError):  # openai without the aiohttp extra (or too old for it)
            if transport == "aiohttp":
                raise RagQaArenaError('transport="aiohttp" needs aiohttp: pip install "openai[aiohttp]", or use '
                                      'transport="auto" (falls back to httpx)') from None
    return openai.DefaultAsyncHttpxClient(auth=auth, verify=tls_context(), event_hooks=HOOKS)


@functools.lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client of the process, with the trust store the SDK's clients use by default
    (``$SSL_CERT_FILE``/``$SSL_CERT_DIR``, else certifi's bundle): each client building its own spends ~20 ms
    loading the certificates, per match of a tournament's every round."""
    import certifi

    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    return ssl.create_default_context(cafile=cafile if cafile or capath else certifi.where(), capath=capath)


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


#: The clients' response hook: an error reply's body read at most ERROR_BODY_BYTES.
HOOKS = {"response": [bound_error_body]}


def max_body_bytes(max_tokens: int) -> int:
    """The most bytes of a reply body read for a request of ``max_tokens`` tokens: 1 MiB of room for
    the JSON around the text, plus 256 bytes per token (32 kept characters, each up to 6 bytes and
    more when escaped). A longer body is an unusable reply, never read whole."""
    return (1 << 20) + 256 * max(1, int(max_tokens))


def clean_text(text: str) -> str | None:
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
        reply = _strict_decode(text_body)
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
    text = clean_text(text)
    if text is None:
        raise BadReply(f"reply from {base_url} holds a lone surrogate (half a character)", kind="bad_unicode")
    usage = reply.get("usage")
    usage_dict = None
    if isinstance(usage, dict):
        usage_dict = {name: value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
                      for name, value in ((n, usage.get(n)) for n in ("prompt_tokens", "completion_tokens"))}
    model = reply.get("model")
    return Completion(text=clean(text), finish_reason=finish_reason, usage=usage_dict,
                      model=model if isinstance(model, str) else None)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


# json.loads(text, parse_constant=_no_constant) without a decoder made per call
_strict_decode = json.JSONDecoder(parse_constant=_no_constant).decode


def retry_after_seconds(response) -> float | None:
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


def url_secrets(key: str, url_auth: tuple[str, str] | None) -> tuple[str, ...]:
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
